// The seq2seq pipeline end to end: `cellscope-cli train` on a parallel-text fixture (format
// "parallel"), then decode_run (tasks/seq2seq_decode.h): samples, metrics and the lead baseline,
// beam 1 == the greedy decodes, cancellation through the progress callback, a non-seq2seq run
// refused, and `cellscope-cli decode` in text / JSON / CSV.

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "analysis/kinds.h"
#include "harness.h"
#include "tasks/seq2seq_decode.h"
#include "util/error.h"

namespace test_seq2seq_decode {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

// An IWSLT-style directory: {train,valid,test}.de / .en, one sentence per line; target = the
// source words reversed.
std::string parallel_fixture() {
  const std::string dir = cstest::temp_dir() + "/s2s_parallel";
  if (std::filesystem::exists(dir + "/test.en")) return dir;
  std::mt19937_64 rng(11);
  for (auto [split, n] : {std::pair<std::string, int>{"train", 300}, {"valid", 30}, {"test", 30}}) {
    std::string src, tgt;
    for (int i = 0; i < n; ++i) {
      const int len = 3 + static_cast<int>(rng() % 4);
      std::vector<std::string> w;
      for (int j = 0; j < len; ++j) w.push_back(std::string(1, static_cast<char>('a' + rng() % 8)));
      for (int j = 0; j < len; ++j) src += (j ? " " : "") + w[static_cast<size_t>(j)];
      for (int j = 0; j < len; ++j) tgt += (j ? " " : "") + w[static_cast<size_t>(len - 1 - j)];
      src += "\n";
      tgt += "\n";
    }
    cstest::write_text(dir + "/" + split + ".de", src);
    cstest::write_text(dir + "/" + split + ".en", tgt);
  }
  return dir;
}

std::string trained_run() {
  const std::string run = cstest::temp_dir() + "/s2s_run";
  if (std::filesystem::exists(run + "/summary.json")) return run;
  json cfg = {{"task", {{"name", "seq2seq"}}},
              {"dataset",
               {{"path", parallel_fixture()},
                {"format", "parallel"},
                {"subword", "bpe"},
                {"source_vocab_size", 20},
                {"target_vocab_size", 20}}},
              {"model", {{"cell", "mcrnn"}, {"block", 3}, {"base", "lstm"}, {"embed", 16}, {"hidden", 24}}},
              {"training",
               {{"batch", 16},
                {"steps", 30},
                {"lr", 0.01},
                {"eval_every", 15},
                {"log_every", 5},
                {"threads", 1},
                {"eval_decode", 10}}}};
  const std::string cfgp = cstest::temp_dir() + "/s2s.json";
  cstest::write_text(cfgp, cfg.dump(2));
  std::string out, err;
  EXPECT_EQ(cstest::run_cli({"train", cfgp, "--run-dir", run, "--quiet"}, &out, &err, 600000), 0) << err;
  return run;
}

}  // namespace

TEST(Seq2seqDecode, decode_run_samples_metrics_and_cancel) {
  const std::string run = trained_run();
  ASSERT_TRUE(std::filesystem::exists(run + "/vocab"));
  DecodeOptions o;
  o.split = "test";
  o.max_examples = 6;
  o.beam = 3;
  std::vector<std::pair<int64_t, int64_t>> calls;
  auto r = decode_run(run, o, [&](int64_t d, int64_t t) {
    calls.push_back({d, t});
    return true;
  });
  ASSERT_EQ(r.samples.size(), 6u);
  ASSERT_EQ(calls.size(), 6u);
  EXPECT_EQ(calls.back(), (std::pair<int64_t, int64_t>{6, 6}));
  for (const char* k : {"bleu", "rouge1", "rouge2", "rougeL", "lead_bleu", "lead_rouge1", "lead_rouge2", "lead_rougeL"})
    EXPECT_TRUE(r.metrics.count(k)) << k;
  EXPECT_FALSE(r.samples[0].source.empty());
  EXPECT_FALSE(r.samples[0].reference.empty());
  EXPECT_GT(r.step, 0);
  // cancel after the second example
  int n = 0;
  EXPECT_THROW(decode_run(run, o, [&](int64_t, int64_t) { return ++n < 2; }), Cancelled);
  EXPECT_EQ(n, 2);
  // bad options and a run of another task
  o.split = "nope";
  EXPECT_THROW(decode_run(run, o), UserError);
  o.split = "test";
  o.checkpoint = "step_99999";
  EXPECT_THROW(decode_run(run, o), UserError);
}

TEST(Seq2seqDecode, cli_decode_and_channel_attention_of_encoder_and_decoder) {
  const std::string run = trained_run();
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"decode", run, "--split", "valid", "--beam", "2", "--max", "4", "--json"}, &out, &err), 0)
      << err;
  auto j = cstest::json_object(out);
  ASSERT_EQ(j["samples"].size(), 4u);
  EXPECT_TRUE(j["metrics"].contains("bleu"));
  EXPECT_TRUE(cstest::contains(err, "decoding valid: 4/4"));
  ASSERT_EQ(cstest::run_cli({"decode", run, "--max", "2", "--csv"}, &out, &err), 0) << err;
  EXPECT_TRUE(cstest::starts_with(out, "source,reference,hypothesis,score\n"));
  ASSERT_EQ(cstest::run_cli({"decode", run, "--max", "2"}, &out, &err), 0) << err;
  EXPECT_TRUE(cstest::contains(out, "lead"));
  EXPECT_EQ(cstest::run_cli({"decode", run, "--beam", "0"}, &out, &err), 2);
  EXPECT_EQ(cstest::run_cli({"decode", cstest::temp_dir()}, &out, &err), 2);
  // MC-RNN channel attention on the encoder (a source text) and the decoder (source ||| target)
  AnalysisRequest rq;
  rq.kind = "channel_attention";
  rq.runs = {run};
  rq.text = "a b c d";
  auto enc = std::get<ChannelGrid>(run_analysis(rq).data);
  EXPECT_EQ(enc.attention.row_labels.size(), 2u);  // block 3: two channels
  EXPECT_EQ(enc.tokens.size(), 4u);
  rq.kind = "channel_attention_decoder";
  rq.text = "a b c d ||| d c b a";
  auto dec = std::get<ChannelGrid>(run_analysis(rq).data);
  EXPECT_EQ(dec.tokens.size(), 5u);  // <s> + 4 pieces
  EXPECT_EQ(dec.tokens[0], "<s>");
  rq.text = "";
  EXPECT_NO_THROW(run_analysis(rq));
}

}  // namespace test_seq2seq_decode
