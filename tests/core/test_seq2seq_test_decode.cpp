// task.test_decode (tasks/SEQ2SEQ_NOTES.md, "Training and evaluation"): with `beam` the test
// evaluation at the end of a run decodes with task.beam / task.length_penalty, and its BLEU and
// ROUGE equal those of `cellscope-cli decode` with the same beam on the same split (the same
// hypotheses); the evaluation lines record the decode ("greedy" for valid); a run whose config
// predates the option decodes greedily, as `decode --beam 1` does.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "config/schema.h"
#include "corpus_fixture.h"
#include "harness.h"
#include "sweep/sweep.h"
#include "sweep/table.h"
#include "tasks/seq2seq.h"
#include "tasks/seq2seq_decode.h"
#include "train/run_store.h"
#include "train/test_examples.h"
#include "train/trainer.h"

namespace test_seq2seq_test_decode {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

// A parallel directory (train/valid/test .de/.en): "w1 .. wn" -> the words reversed, words "a".."h".
std::string write_reverse_dir(const std::string& dir) {
  std::mt19937_64 rng(7);
  auto write = [&](const std::string& split, int n) {
    std::string src, tgt;
    for (int i = 0; i < n; ++i) {
      const int len = 3 + static_cast<int>(rng() % 4);
      std::vector<std::string> w;
      for (int j = 0; j < len; ++j) w.push_back(std::string(1, static_cast<char>('a' + rng() % 8)));
      for (int j = 0; j < len; ++j) {
        src += (j ? " " : "") + w[static_cast<size_t>(j)];
        tgt += (j ? " " : "") + w[static_cast<size_t>(len - 1 - j)];
      }
      src += "\n";
      tgt += "\n";
    }
    cstest::write_text(dir + "/" + split + ".de", src);
    cstest::write_text(dir + "/" + split + ".en", tgt);
  };
  write("train", 400);
  write("valid", 30);
  write("test", 30);
  return dir;
}

json config(const std::string& data, const json& task) {
  json t = task;
  t["name"] = "seq2seq";
  return load_and_resolve({{"task", t},
                           {"dataset",
                            {{"path", data},
                             {"format", "parallel"},
                             {"subword", "bpe"},
                             {"source_vocab_size", 20},
                             {"target_vocab_size", 20},
                             {"max_source_len", 16},
                             {"max_target_len", 16}}},
                           {"model", {{"cell", "gru"}, {"embed", 16}, {"hidden", 32}}},
                           {"training",
                            {{"batch", 32},
                             {"steps", 120},
                             {"lr", 0.01},
                             {"eval_every", 60},
                             {"log_every", 20},
                             {"threads", 1},
                             {"eval_decode", 0},
                             {"tensorboard", false},
                             {"seed", 3}}}});
}

std::vector<json> train_to_dir(const json& cfg, const std::string& dir) {
  seed_everything(cfg["training"]["seed"].get<uint64_t>());
  auto store = std::make_shared<RunStore>(dir);
  auto task = make_task(cfg, "");
  store->create();
  store->write_config(cfg);
  atomic_write(store->path("vocab"), task->vocab_text());
  Trainer t(cfg, std::move(task), store);
  t.run();
  return store->read_metrics();
}

// The metrics of `cellscope-cli decode RUN --split test --max 0 --beam K --json`.
json cli_decode(const std::string& run, int beam) {
  std::string out, err;
  const int rc = cstest::run_cli(
      {"decode", run, "--split", "test", "--max", "0", "--beam", std::to_string(beam), "--threads", "1", "--json"},
      &out, &err);
  EXPECT_EQ(rc, 0) << err;
  return cstest::json_object(out).at("metrics");
}

}  // namespace

TEST(Seq2seqTestDecode, beam_test_metrics_equal_decode_and_record_the_decode) {
  const std::string root = cstest::temp_dir() + "/s2s_test_decode";
  std::filesystem::remove_all(root);
  const std::string data = write_reverse_dir(root + "/data");
  const std::string run = root + "/run";
  const auto lines = train_to_dir(config(data, {{"beam", 3}, {"length_penalty", 1.0}, {"test_decode", "beam"}}), run);
  json test;
  int valid_lines = 0;
  for (auto& l : lines) {
    if (!l.value("eval", false)) continue;
    if (l.at("split") == "test") test = l;
    else {
      EXPECT_EQ(l.value("decode", std::string()), "greedy") << l.dump();  // validation stays greedy
      ++valid_lines;
    }
  }
  ASSERT_EQ(valid_lines, 2);
  ASSERT_FALSE(test.is_null()) << "no test evaluation";
  EXPECT_EQ(test.value("decode", std::string()), "beam 3, lp 1.0");
  ASSERT_GT(test.at("rouge1").get<double>(), 10.0) << "the model learned nothing: the comparison would be empty";
  // The same hypotheses as `cellscope-cli decode` with that beam on the whole test split.
  const json beam = cli_decode(run, 3);
  for (const char* k : {"bleu", "rouge1", "rouge2", "rougeL"})
    EXPECT_DOUBLE_EQ(test.at(k).get<double>(), beam.at(k).get<double>()) << k;

  // An old run (its config.json without task.test_decode) decodes the test split greedily:
  // the decode recorded says so, and the metrics are those of `decode --beam 1` (greedy).
  const std::string old = root + "/old";
  std::filesystem::copy(run, old, std::filesystem::copy_options::recursive);
  json raw = RunStore(old).read_config();
  ASSERT_TRUE(raw.at("task").is_object());
  raw["task"].erase("test_decode");
  RunStore(old).write_config(raw);
  auto task = load_run_task(old, "best");
  auto* s2s = dynamic_cast<Seq2SeqTask*>(task.get());
  ASSERT_NE(s2s, nullptr);
  EXPECT_EQ(s2s->options().test_decode, TestDecode::Greedy);
  const EvalResult ev = task->evaluate("test");
  EXPECT_EQ(ev.labels.at("decode"), "greedy");
  const json greedy = cli_decode(old, 1);
  for (const char* k : {"bleu", "rouge1", "rouge2", "rougeL"})
    EXPECT_DOUBLE_EQ(ev.metrics.at(k), greedy.at(k).get<double>()) << k;
  std::printf("test split: greedy BLEU %.3f ROUGE-1 %.3f, beam 3 BLEU %.3f ROUGE-1 %.3f\n", ev.metrics.at("bleu"),
              ev.metrics.at("rouge1"), beam.at("bleu").get<double>(), beam.at("rouge1").get<double>());
}

// The end of a run decodes the test split once: the test evaluation hands its beam decodes over
// (EvalResult::sequences, the same as sequence_scores') and test_examples.json scores them. With
// training.eval_decode below the split's size the evaluation hands none over and says which pairs
// its figures cover; the trainer then writes no file, and decodes nothing more for it.
TEST(Seq2seqTestDecode, the_run_end_decodes_the_test_split_once) {
  const std::string root = cstest::temp_dir() + "/s2s_test_decode_once";
  std::filesystem::remove_all(root);
  const std::string data = write_reverse_dir(root + "/data");
  auto train = [&](const json& cfg, const std::string& dir) {
    seed_everything(3);
    auto store = std::make_shared<RunStore>(dir);
    auto task = make_task(cfg, "");
    auto* s2s = dynamic_cast<Seq2SeqTask*>(task.get());
    store->create();
    store->write_config(cfg);
    atomic_write(store->path("vocab"), task->vocab_text());
    Trainer t(cfg, std::move(task), store);
    t.run();
    EXPECT_NE(s2s, nullptr);
    return s2s ? s2s->split_decodes("test") : -1;
  };
  json cfg = config(data, {{"beam", 3}, {"test_decode", "beam"}});
  cfg["training"]["steps"] = 60;
  const std::string run = root + "/run";
  EXPECT_EQ(train(cfg, run), 1) << "the test split's pairs decoded more than once at the run's end";
  json test;
  for (const auto& l : RunStore(run).read_metrics())
    if (l.value("eval", false) && l.at("split") == "test") test = l;
  ASSERT_FALSE(test.is_null());
  const auto e = read_test_examples(run);
  ASSERT_TRUE(e.has_value()) << "no " << kTestExamplesFile;
  EXPECT_EQ(e->count(), 30u);
  EXPECT_NEAR(e->metric_value(), test.at("bleu").get<double>(), 1e-9);
  // What the evaluation hands over is what sequence_scores decodes on the same weights.
  auto task = load_run_task(run, "best");
  auto* s2s = dynamic_cast<Seq2SeqTask*>(task.get());
  ASSERT_NE(s2s, nullptr);
  const EvalResult ev = s2s->evaluate("test");
  ASSERT_NE(ev.sequences, nullptr);
  EXPECT_EQ(ev.partial, "");
  const SequenceScores again = s2s->sequence_scores("test");
  EXPECT_EQ(s2s->split_decodes("test"), 2);
  ASSERT_EQ(ev.sequences->sequences.size(), again.sequences.size());
  EXPECT_EQ(ev.sequences->metric, again.metric);
  for (size_t i = 0; i < again.sequences.size(); ++i) {
    EXPECT_EQ(ev.sequences->sequences[i].hypothesis, again.sequences[i].hypothesis) << i;
    EXPECT_EQ(ev.sequences->sequences[i].reference, again.sequences[i].reference) << i;
    EXPECT_EQ(ev.sequences->sequences[i].length, again.sequences[i].length) << i;
  }

  cfg["training"]["eval_decode"] = 10;
  const std::string part = root + "/part";
  EXPECT_EQ(train(cfg, part), 1);
  EXPECT_FALSE(std::filesystem::exists(part + "/" + kTestExamplesFile));
  EXPECT_TRUE(cstest::contains(cstest::read_text(part + "/log.txt"),
                               "the test evaluation gives BLEU and ROUGE of the first 10 of 30 test pairs "
                               "(training.eval_decode)"))
      << cstest::read_text(part + "/log.txt");
}

TEST(Seq2seqTestDecode, decode_label_names_beam_and_length_penalty) {
  const std::string data = write_reverse_dir(cstest::temp_dir() + "/s2s_label_data");
  Seq2SeqTask a(config(data, {{"beam", 5}, {"length_penalty", 0.6}, {"test_decode", "beam"}}), "");
  EXPECT_EQ(a.decode_label("test"), "beam 5, lp 0.6");
  EXPECT_EQ(a.decode_label("valid"), "greedy");
  Seq2SeqTask b(config(data, {{"beam", 10}, {"test_decode", "greedy"}}), "");
  EXPECT_EQ(b.decode_label("test"), "greedy");
  EXPECT_THROW(config(data, {{"test_decode", "sampling"}}), UserError);
}

// `sweep table` names the decode that made a keyed metric: one decode -> in the metric's name;
// runs that differ -> said so (a run without the field decoded greedily).
TEST(Seq2seqTestDecode, sweep_table_names_the_decode) {
  const std::string dir = cstest::temp_dir() + "/s2s_decode_sweep";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string corpus = cstest::write_text_fixture("s2s_decode_sweep.txt", 2000);
  json spec = {
      {"name", "decode-label"},
      {"base", {{"task", {{"name", "char_lm"}}}, {"dataset", {{"path", corpus}}}, {"model", {{"cell", "gru"}}}}},
      {"grid", json::array({{{"name", "cell"},
                             {"values", json::array({{{"label", "a"}, {"set", json::object()}},
                                                     {{"label", "b"}, {"set", {{"model.hidden", 64}}}}})}}})},
      {"seeds", {1}},
      {"table", {{"rows", "cell"}, {"metric", "test.bleu"}, {"best", "column"}}}};
  cstest::write_text(dir + "/sweep.json", spec.dump(2));
  auto write_runs = [&](const std::string& decode_b) {
    json pts = json::object();
    for (auto& rec : read_sweep_results(dir).records) {
      const std::string label = rec.point.labels[0];
      const std::string rd = dir + "/runs/" + label;
      MetricsRecord t;
      t.step = 10;
      t.eval = true;
      t.split = "test";
      t.values["bleu"] = label == "a" ? 12.5 : 10.0;
      const std::string decode = label == "a" ? "beam 5, lp 1.0" : decode_b;
      if (!decode.empty()) t.labels["decode"] = decode;
      cstest::write_text(rd + "/metrics.jsonl", t.to_json().dump() + "\n");
      RunSummary sm;
      sm.status = "finished";
      sm.primary_metric = "ppl";
      sm.step = 10;
      cstest::write_text(rd + "/summary.json", sm.to_json().dump(2));
      cstest::write_text(rd + "/config.json", spec["base"].dump(2));
      pts[rec.point.id] = {{"run_dir", rd}, {"status", "finished"}};
    }
    cstest::write_text(dir + "/state.json", json{{"points", pts}}.dump(2));
  };
  write_runs("beam 5, lp 1.0");
  auto r = read_sweep_results(dir);
  EXPECT_EQ(r.metric_label, "test bleu (beam 5, lp 1.0)");
  EXPECT_TRUE(cstest::contains(table_to_text(sweep_table(r)), "test bleu (beam 5, lp 1.0)"));
  EXPECT_TRUE(cstest::contains(table_to_latex(sweep_table(r)), "test bleu (beam 5, lp 1.0)"));
  write_runs("");  // b: a run made before evaluations recorded their decode
  EXPECT_EQ(read_sweep_results(dir).metric_label, "test bleu (decodes differ between runs: beam 5, lp 1.0; greedy)");
}

}  // namespace test_seq2seq_test_decode
