// The end of a data-parallel run: every task trains with two processes to its last
// step and exits 0 with status "finished" on and off the evaluation boundary, with
// metrics close to one process on the same global batch (the other endings:
// test_dist_stop.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "corpus_fixture.h"
#include "dist_end_check.h"

namespace test_dist_end {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

class DistEnd : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { set_threads(1); }
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(cstest::default_corpus_path()))
        << "the default corpus is missing: " << cstest::default_corpus_path();
  }
};

// 7 steps: the last step is no evaluation step (eval_every 4); 8 steps: it is.
TEST_P(DistEnd, twoProcessesFinishLikeOne) { cstest::two_processes_finish_like_one(GetParam()); }

INSTANTIATE_TEST_SUITE_P(DistEnd, DistEnd, ::testing::Values("char_lm", "word_lm"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace test_dist_end
