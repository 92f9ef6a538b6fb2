// The end of a data-parallel run for the sentence tasks (classify, ABSA): two
// processes to the last step, exit 0, status "finished", on and off the evaluation
// boundary, metrics close to one process (see dist_end_check.h; the language models:
// test_dist_end.cpp, the other endings: test_dist_stop.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "corpus_fixture.h"
#include "dist_end_check.h"

namespace test_dist_end_sentences {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

class DistEndSentences : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { set_threads(1); }
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(cstest::default_corpus_path()))
        << "the default corpus is missing: " << cstest::default_corpus_path();
  }
};

// 7 steps: the last step is no evaluation step (eval_every 4); 8 steps: it is.
TEST_P(DistEndSentences, twoProcessesFinishLikeOne) { cstest::two_processes_finish_like_one(GetParam()); }

INSTANTIATE_TEST_SUITE_P(DistEndSentences, DistEndSentences, ::testing::Values("classify", "absa"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace test_dist_end_sentences
