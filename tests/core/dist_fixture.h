// Helpers of the data-parallel core tests (test_dist_end*, test_dist_stop, test_dist_cluster):
// tiny configs for every task, runs of cellscope-cli, and two ranks in one test process.
#pragma once
#include <fstream>
#include <functional>
#include <random>
#include <thread>

#include "dist/dist.h"
#include "harness.h"
#include "train/run_store.h"
#include "train/trainer.h"

namespace cstest {

inline std::string write_json_file(const std::string& name, const cs::json& j) {
  const std::string p = temp_dir() + "/" + name;
  write_text(p, j.dump());
  return p;
}

// Sentences whose label is decided by one word (learnable in a few steps); ABSA: a
// SemEval-style XML file with two aspects per sentence.
inline std::string write_sentence_fixture(bool absa) {
  const std::string path = temp_dir() + (absa ? "/dist_absa.xml" : "/dist_classify.jsonl");
  std::ofstream f(path);
  std::mt19937 rng(3);
  const char* fill[] = {"the", "movie", "was", "quite", "a", "story", "with", "actors", "and", "music"};
  const char* pol[] = {"positive", "negative", "neutral"};
  if (absa) f << "<sentences>\n";
  for (int i = 0; i < (absa ? 60 : 45); ++i) {
    std::string t;
    for (int k = 0; k < 3 + static_cast<int>(rng() % 6); ++k) t += std::string(fill[rng() % 10]) + " ";
    const bool good = i % 2 == 0;
    t += good ? "good" : "bad";
    // classify: explicit splits, 21 training sentences: with batch 4 every epoch ends
    // with a batch of one, so one of two ranks has no sentence in that step.
    const char* split = i < 21 ? "train" : i < 33 ? "valid" : "test";
    if (absa)
      f << "<sentence id=\"" << i << "\"><text>the food was " << t << " but the staff</text><aspectTerms>"
        << "<aspectTerm term=\"food\" polarity=\"" << pol[i % 2] << "\"/><aspectTerm term=\"the staff\" polarity=\""
        << pol[(i + 1) % 3] << "\"/></aspectTerms></sentence>\n";
    else
      f << "{\"text\":\"" << t << "\",\"label\":\"" << (good ? "pos" : "neg") << "\",\"split\":\"" << split << "\"}\n";
  }
  if (absa) f << "</sentences>\n";
  return path;
}

// A tiny configuration of `task` (no dropout: a 2-process run then differs from one
// process only by float rounding). Evaluation every 4 steps, checkpoints every 3.
inline cs::json tiny_config(const std::string& task, int steps) {
  cs::json tr = {{"batch", 4},     {"steps", steps},  {"optimizer", "adam"},
                 {"lr", 3e-3},     {"eval_every", 4}, {"checkpoint_every", 3},
                 {"log_every", 2}, {"seed", 5},       {"threads", 1}};
  if (task == "char_lm") {
    tr.update({{"bptt", 16}, {"eval_batch", 4}});
    return {{"task", "char_lm"},
            {"dataset", {{"name", "moby-dick"}, {"max_chars", 20000}}},
            {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
            {"training", tr}};
  }
  if (task == "word_lm") {
    tr.update({{"bptt", 10}, {"eval_batch", 4}});
    return {{"task", "word_lm"},
            {"dataset", {{"name", "moby-dick"}, {"max_chars", 30000}, {"vocab_size", 300}}},
            {"model",
             {{"cell", "lstm"},
              {"embed", 16},
              {"hidden", 16},
              {"dropout", 0.0},
              {"dropouth", 0.0},
              {"dropouti", 0.0},
              {"dropoute", 0.0},
              {"weight_drop", 0.0}}},
            {"training", tr}};
  }
  // classify / absa
  tr["eval_batch"] = 16;
  cs::json model = {{"cell", "gru"}, {"embed", 16}, {"hidden", 16}, {"fc", 16}, {"dropout", 0.0}};
  if (task == "absa") model.erase("fc");
  cs::json ds = {{"path", write_sentence_fixture(task == "absa")}};
  if (task == "absa") ds.update({{"valid_fraction", 0.2}, {"test_fraction", 0.2}});
  return {{"task", task}, {"dataset", ds}, {"model", model}, {"training", tr}};
}

// Two ranks of a data-parallel run inside this process (one thread each, Gloo over a
// FileStore): `make(rank)` builds each rank's Trainer.
struct TwoRanks {
  cs::RunSummary summary[2];
  int64_t step[2] = {0, 0};
  std::string error[2];
};
inline TwoRanks run_two_ranks(
    const std::string& store_file, const std::function<std::unique_ptr<cs::Trainer>(cs::DistContext*)>& make,
    const std::function<void(int rank, const cs::Progress&, cs::TrainerControl&)>& on_progress = {}) {
  TwoRanks out;
  auto body = [&](int rank) {
    try {
      cs::DistOptions o;
      o.rank = rank;
      o.world = 2;
      o.store_file = store_file;
      o.timeout_s = 20;
      auto d = cs::init_dist(o);
      auto t = make(d.get());
      cs::TrainerControl control;
      cs::TrainerCallbacks cb;
      if (on_progress) cb.on_progress = [&](const cs::Progress& p) { on_progress(rank, p, control); };
      out.summary[rank] = t->run(&control, cb).summary;
      out.step[rank] = t->step();
    } catch (const std::exception& e) {
      out.error[rank] = e.what();
    }
  };
  std::thread r1(body, 1);
  body(0);
  r1.join();
  return out;
}

// Whether this machine has the IPv6 loopback address ::1 (a test of a bracketed IPv6 master
// skips, saying so, where it has not).
inline bool have_ipv6_loopback() {
  std::ifstream f("/proc/net/if_inet6");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("00000000000000000000000000000001", 0) == 0) return true;
  return false;
}

}  // namespace cstest
