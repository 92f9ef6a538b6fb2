// The seq2seq pipeline end to end: `cellscope-cli train` on a parallel-text fixture (format
// "parallel"), then decode_run (tasks/seq2seq_decode.h): samples, metrics and the lead baseline,
// beam 1 == the greedy decodes, cancellation through the progress callback, a non-seq2seq run
// refused, and `cellscope-cli decode` in text / JSON / CSV, its metric signatures and the plain-text
// --hyp-out / --ref-out files for outside scorers (issue #36).

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "analysis/kinds.h"
#include "data/seq2seq_data.h"
#include "data/text_metrics.h"
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
  EXPECT_TRUE(cstest::contains(err, "decoding valid: 4/4 (100%)\n")) << err;
  // stderr is no terminal here (a log): whole lines, no carriage return to redraw one
  EXPECT_FALSE(cstest::contains(err, "\r")) << err;
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

TEST(Seq2seqDecode, cli_hyp_ref_out_and_signatures) {
  const std::string run = trained_run();
  const std::string dir = cstest::temp_dir() + "/decode_out";
  std::filesystem::create_directories(dir);
  const std::string hyp = dir + "/hyp.txt", ref = dir + "/ref.txt";
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"decode", run, "--max", "6", "--beam", "1", "--json", "--hyp-out", hyp, "--ref-out", ref},
                            &out, &err),
            0)
      << err;
  const auto j = cstest::json_object(out);
  ASSERT_EQ(j["samples"].size(), 6u);
  EXPECT_EQ(j["bleu_signature"], "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:cellscope-port-2.6.0");
  EXPECT_EQ(j["rouge_signature"], cs::rouge_signature({}));
  // One line per sample, in order: line i of each file is sample i's hypothesis / reference.
  const auto h = cstest::split(cstest::read_text(hyp), '\n'), r = cstest::split(cstest::read_text(ref), '\n');
  ASSERT_EQ(h.size(), 7u);  // 6 lines and the empty rest after the last newline
  ASSERT_EQ(r.size(), 7u);
  std::vector<std::string> hyps, refs;
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(h[i], j["samples"][i]["hypothesis"].get<std::string>()) << i;
    EXPECT_EQ(r[i], j["samples"][i]["reference"].get<std::string>()) << i;
    hyps.push_back(h[i]);
    refs.push_back(r[i]);
  }
  // An outside scorer reading the two files gets the figures decode printed.
  EXPECT_NEAR(cs::corpus_bleu(hyps, refs).bleu, j["metrics"]["bleu"].get<double>(), 1e-9);
  EXPECT_NEAR(cs::corpus_rouge(hyps, refs).rougeL, j["metrics"]["rougeL"].get<double>(), 1e-9);
  // --lowercase / --rouge-stem: the signatures say so, the lead baseline is rescored with them too.
  ASSERT_EQ(cstest::run_cli({"decode", run, "--max", "6", "--beam", "1", "--json", "--lowercase", "--rouge-stem"}, &out,
                            &err),
            0)
      << err;
  const auto k = cstest::json_object(out);
  EXPECT_TRUE(cstest::contains(k["bleu_signature"].get<std::string>(), "|case:lc|"));
  EXPECT_TRUE(cstest::contains(k["rouge_signature"].get<std::string>(), "|stem:porter|"));
  std::vector<std::string> leads;
  const auto lead_words = static_cast<int64_t>(k["metrics"]["lead_words"].get<double>());
  for (size_t i = 0; i < 6; ++i)
    leads.push_back(cs::lead_baseline(k["samples"][i]["source"].get<std::string>(), lead_words));
  EXPECT_NEAR(cs::corpus_rouge(leads, refs, {true}).rouge1, k["metrics"]["lead_rouge1"].get<double>(), 1e-9);
  // The text output ends with both signatures.
  ASSERT_EQ(cstest::run_cli({"decode", run, "--max", "2", "--beam", "1"}, &out, &err), 0) << err;
  EXPECT_TRUE(
      cstest::contains(out, "BLEU  nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:cellscope-port-2.6.0\n"))
      << out;
  EXPECT_TRUE(cstest::contains(out, "ROUGE tok:rouge-score|stem:no|"));
  ASSERT_EQ(cstest::run_cli({"decode", run, "--max", "2", "--beam", "1", "--csv"}, &out, &err), 0) << err;
  EXPECT_TRUE(cstest::contains(out, "\nbleu_signature,nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|"));
  EXPECT_TRUE(cstest::contains(out, "\nrouge_signature,tok:rouge-score|stem:no|"));
  // Bad output paths: one clear message, exit 2, before any decoding, nothing written.
  EXPECT_EQ(cstest::run_cli({"decode", run, "--hyp-out", dir + "/missing/hyp.txt"}, &out, &err), 2);
  EXPECT_TRUE(cstest::contains(
      err, "--hyp-out '" + dir + "/missing/hyp.txt': the directory '" + dir + "/missing' does not exist"))
      << err;
  EXPECT_FALSE(cstest::contains(err, "decoding"));
  EXPECT_EQ(cstest::run_cli({"decode", run, "--ref-out", dir}, &out, &err), 2);
  EXPECT_TRUE(cstest::contains(err, "is a directory")) << err;
  EXPECT_EQ(cstest::run_cli({"decode", run, "--hyp-out", hyp, "--ref-out", hyp}, &out, &err), 2);
}

}  // namespace test_seq2seq_decode
