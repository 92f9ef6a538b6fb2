// Sentence tasks (tasks/classify.h): tokenizer, loaders on fixtures in the exact
// formats (and malformed ones), HDS, k-fold splits, batching, resume, the CLI, and a
// short run on the real default dataset (SpamAssassin) against the majority baseline.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "config/schema.h"
#include "data/text_datasets.h"
#include "data/text_tokenize.h"
#include "data/tokenizer.h"
#include "core_checks.h"
#include "harness.h"
#include "tasks/classify.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/paths.h"

namespace test_classify {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

std::string tmp(const std::string& rel) { return cstest::temp_dir() + "/" + rel; }

void write(const std::string& path, const std::string& data) {
  std::filesystem::create_directories(std::filesystem::absolute(path).parent_path());
  std::ofstream f(path, std::ios::binary);
  f << data;
}

// Run fn, expect a UserError whose message contains every `needle`.
template <typename Fn>
bool throws_with(Fn&& fn, std::vector<std::string> needles, std::string* msg_out = nullptr) {
  try {
    fn();
  } catch (const UserError& e) {
    std::string m = e.what();
    if (msg_out) *msg_out = m;
    for (auto& n : needles)
      if (m.find(n) == std::string::npos) {
        std::fprintf(stderr, "message '%s' lacks '%s'\n", m.c_str(), n.c_str());
        return false;
      }
    return true;
  }
  return false;
}

std::string jsonl_fixture(int n) {
  // label determined by a keyword, so a tiny model can learn it
  std::string s;
  const char* good[] = {"great", "fine", "lovely"};
  const char* bad[] = {"awful", "poor", "nasty"};
  for (int i = 0; i < n; ++i) {
    const bool pos = (i * 7) % 3 != 0;
    s += json{{"text",
               std::string("the movie was ") + (pos ? good[i % 3] : bad[i % 3]) + " and long " + std::to_string(i % 5)},
              {"label", pos ? "pos" : "neg"}}
             .dump() +
         "\n";
  }
  return s;
}

json small_model(const std::string& cell) {
  return {{"cell", cell}, {"embed", 16}, {"hidden", 12}, {"fc", 16}, {"dropout", 0.0}};
}

}  // namespace

TEST(Classify, tokenizer_rules) {  // the legacy sentence rules (dataset.tokenizer = legacy)
  TokenizerOptions legacy;
  legacy.rules = kTokenizerLegacy;
  legacy.legacy_rules = LegacyRules::Sentence;
  auto t = tokenize("Don't STOP-me now, it's well-known!  'quoted' x--y \xC3\xA9t\xC3\xA9", legacy);
  std::vector<std::string> expect = {"don't", "stop-me", "now", ",", "it's", "well-known",       "!", "'", "quoted",
                                     "'",     "x",       "-",   "-", "y",    "\xC3\xA9t\xC3\xA9"};
  ASSERT_EQ(t.size(), expect.size());
  for (size_t i = 0; i < t.size(); ++i) ASSERT_EQ(t[i], expect[i]);
  TokenizerOptions o = legacy;
  o.lowercase = false;
  o.max_tokens = 2;
  auto u = tokenize("A b c", o);
  ASSERT_EQ(int(u.size()), 2);
  ASSERT_EQ(u[0], std::string("A"));
  ASSERT_EQ(latin1_to_utf8("caf\xE9"), std::string("caf\xC3\xA9"));
  ASSERT_TRUE(find_invalid_utf8("ok \xC3\xA9") == std::string::npos);
  ASSERT_EQ(int(find_invalid_utf8("ab\xC3(")), 2);
}

TEST(Classify, jsonl_loader) {
  const auto p = tmp("j/ok.jsonl");
  write(
      p,
      "{\"text\":\"a b\",\"label\":\"spam\",\"split\":\"train\"}\n\n{\"text\":\"c\",\"label\":\"ham\",\"split\":\"dev\"}\n");
  auto ex = load_jsonl_examples(p);
  ASSERT_EQ(int(ex.size()), 2);
  ASSERT_EQ(ex[1].split, std::string("valid"));
  ASSERT_EQ(ex[0].label, std::string("spam"));
  const auto bad = tmp("j/bad.jsonl");
  write(bad, "{\"text\":\"a\",\"label\":\"x\"}\n{\"text\": \"oops\n");
  ASSERT_TRUE(throws_with([&] { load_jsonl_examples(bad); }, {bad + ":2", "not valid JSON"}));
  write(bad, "{\"text\":\"a\",\"label\":\"x\"}\n{\"label\":\"x\"}\n");
  ASSERT_TRUE(throws_with([&] { load_jsonl_examples(bad); }, {bad + ":2", "'text'"}));
  write(bad, "{\"text\":\"a\",\"label\":\"x\",\"split\":\"holdout\"}\n");
  ASSERT_TRUE(throws_with([&] { load_jsonl_examples(bad); }, {bad + ":1", "holdout"}));
  ASSERT_TRUE(throws_with([&] { load_jsonl_examples(tmp("j/none.jsonl")); }, {"none.jsonl"}));
}

TEST(Classify, mr_and_subj_loaders) {
  const auto d = tmp("mr");
  write(d + "/rt-polarity.pos", "a charming caf\xE9 film .\nfun\n");
  write(d + "/rt-polarity.neg", "dull .\n\nboring\n");
  auto ex = load_pos_neg_lines(d);
  ASSERT_EQ(int(ex.size()), 4);
  ASSERT_EQ(ex[0].text, std::string("a charming caf\xC3\xA9 film ."));  // Latin-1 -> UTF-8
  ASSERT_EQ(ex[2].label, std::string("neg"));
  std::string nul = "dull .\nok\nbro";
  nul += '\0';
  nul += "ken\n";
  write(d + "/rt-polarity.neg", nul);
  ASSERT_TRUE(throws_with([&] { load_pos_neg_lines(d); }, {d + "/rt-polarity.neg:3", "NUL"}));
  const auto s = tmp("subj");
  write(s + "/quote.tok.gt9.5000", "i loved it .\n");
  write(s + "/plot.tok.gt9.5000", "a man walks .\nhe runs .\n");
  auto sx = load_subj_lines(s);
  ASSERT_EQ(int(sx.size()), 3);
  ASSERT_EQ(sx[0].label, std::string("subjective"));
  ASSERT_EQ(sx[2].label, std::string("objective"));
  ASSERT_TRUE(throws_with([&] { load_subj_lines(tmp("nosubj")); }, {"quote.tok.gt9.5000"}));
}

TEST(Classify, imdb_loader) {
  const auto d = tmp("imdb/aclImdb");
  write(d + "/train/pos/0_9.txt", "Great.<br />Loved it.");
  write(d + "/train/neg/1_2.txt", "Bad.");
  write(d + "/test/pos/2_8.txt", "Nice.");
  write(d + "/test/neg/3_1.txt", "Awful.");
  write(d + "/train/pos/readme.md", "ignored");
  auto ex = load_aclimdb(d);
  ASSERT_EQ(int(ex.size()), 4);
  int tr = 0;
  for (auto& e : ex) tr += e.split == "train";
  ASSERT_EQ(tr, 2);
  bool found = false;
  for (auto& e : ex)
    if (e.text == "Great. Loved it.") found = true;
  ASSERT_TRUE(found);
  // via the resolver with the parent directory
  // the loaders take a resolved dataset section, as a run passes it
  json ds = resolve_config(json{{"task", "classify"}, {"dataset", {{"path", tmp("imdb")}, {"format", "auto"}}}})
                .at("dataset");
  auto loc = resolve_text_dataset(read_dataset_options(ds), "classify");
  ASSERT_EQ(cs::to_string(loc.format), std::string("aclimdb"));
  ASSERT_EQ(int(load_text_examples(loc, TextExampleOptions{}).size()), 4);
  write(d + "/test/neg/4_1.txt", "line one\nbad \xFF byte");
  ASSERT_TRUE(throws_with([&] { load_aclimdb(d); }, {d + "/test/neg/4_1.txt:2", "UTF-8"}));
  std::filesystem::remove(d + "/test/neg/4_1.txt");
  write(d + "/test/neg/review.txt", "x");
  ASSERT_TRUE(throws_with([&] { load_aclimdb(d); }, {d + "/test/neg/review.txt:1", "<id>_<rating>"}));
}

TEST(Classify, sst_loader) {
  const auto d = tmp("sst");
  write(d + "/train.txt", "(3 (2 It) (4 (2 's) (3 good)))\n(1 (1 Bad) (2 .))\n");
  write(d + "/dev.txt", "(2 (2 So) (2 so))\n");
  write(d + "/test.txt", "(4 (4 Great))\n");
  auto ex5 = load_sst_trees(d, 5);
  ASSERT_EQ(int(ex5.size()), 4);
  ASSERT_EQ(ex5[0].text, std::string("It 's good"));
  ASSERT_EQ(ex5[0].label, std::string("3"));
  ASSERT_EQ(ex5[2].split, std::string("valid"));
  auto ex2 = load_sst_trees(d, 2);
  ASSERT_EQ(int(ex2.size()), 3);  // the neutral dev sentence is dropped
  ASSERT_EQ(ex2[1].label, std::string("neg"));
  write(d + "/dev.txt", "(2 (2 So) (2 so))\n(3 (2 unbalanced)\n");
  ASSERT_TRUE(throws_with([&] { load_sst_trees(d, 5); }, {d + "/dev.txt:2", "unbalanced"}));
  write(d + "/dev.txt", "(7 (2 x))\n");
  ASSERT_TRUE(throws_with([&] { load_sst_trees(d, 5); }, {d + "/dev.txt:1", "out of range"}));
}

TEST(Classify, semeval_loader_and_hds) {
  const auto f = tmp("semeval/Restaurants_Train_v2.xml");
  const std::string xml =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sentences>\n"
      "  <sentence id=\"1\">\n    <text>The appetizers are ok, but the service is slow.</text>\n"
      "    <aspectTerms>\n      <aspectTerm term=\"appetizers\" polarity=\"positive\" from=\"4\" to=\"14\"/>\n"
      "      <aspectTerm term=\"service\" polarity=\"negative\" from=\"32\" to=\"39\"/>\n    </aspectTerms>\n  </sentence>\n"
      "  <sentence id=\"2\">\n    <text>Great food &amp; great wine.</text>\n    <aspectTerms>\n"
      "      <aspectTerm term=\"food\" polarity=\"positive\" from=\"6\" to=\"10\"/>\n"
      "      <aspectTerm term=\"wine\" polarity=\"positive\" from=\"19\" to=\"23\"/>\n    </aspectTerms>\n  </sentence>\n"
      "  <sentence id=\"3\"><text>Nothing to say.</text></sentence>\n"
      "  <sentence id=\"4\"><text>Pizza good, staff rude, decor meh.</text><aspectTerms>"
      "<aspectTerm term=\"Pizza\" polarity=\"positive\" from=\"0\" to=\"5\"/>"
      "<aspectTerm term=\"staff\" polarity=\"negative\" from=\"12\" to=\"17\"/>"
      "<aspectTerm term=\"decor\" polarity=\"conflict\" from=\"24\" to=\"29\"/></aspectTerms></sentence>\n"
      "</sentences>\n";
  write(f, xml);
  auto ex = load_semeval_xml(f, "train");
  ASSERT_EQ(int(ex.size()), 7);  // one example per aspect term; sentence 3 has none
  ASSERT_EQ(ex[2].text, std::string("Great food & great wine."));
  ASSERT_EQ(ex[1].aspect, std::string("service"));
  // HDS: sentences 1 and 4 (several aspects, different polarities), each copied once per aspect
  std::vector<bool> hard;
  for (auto& e : ex) hard.push_back(e.hard);
  ASSERT_TRUE(hard == (std::vector<bool>{true, true, false, false, true, true, true}));
  // malformed files
  const auto bad = tmp("semeval/bad.xml");
  write(
      bad,
      "<sentences>\n<sentence id=\"1\"><text>x</text>\n<aspectTerms><aspectTerm term=\"x\" from=\"0\"/>\n</aspectTerms></sentence></sentences>\n");
  ASSERT_TRUE(throws_with([&] { load_semeval_xml(bad, ""); }, {bad + ":3", "polarity"}));
  write(bad, "<sentences>\n<sentence id=\"1\"><text>x</text>\n</sentences>\n");
  ASSERT_TRUE(throws_with([&] { load_semeval_xml(bad, ""); }, {bad + ":3", "</sentences>"}));
  write(
      bad,
      "<sentences>\n<sentence id=\"1\"><text>x</text><aspectTerms><aspectTerm term=\"x\" polarity=\"great\"/></aspectTerms></sentence></sentences>\n");
  ASSERT_TRUE(throws_with([&] { load_semeval_xml(bad, ""); }, {bad + ":2", "great"}));
  // the directory form picks the domain's train and test files
  write(tmp("semeval/Restaurants_Test_Gold.xml"), xml);
  json ds = resolve_config(
                json{{"task", "absa"},
                     {"dataset", {{"path", tmp("semeval")}, {"format", "semeval2014_xml"}, {"domain", "restaurants"}}}})
                .at("dataset");
  TextExampleOptions restaurants;
  restaurants.domain = AbsaDomain::Restaurants;
  auto all = load_text_examples(resolve_text_dataset(read_dataset_options(ds), "absa"), restaurants);
  ASSERT_EQ(int(all.size()), 14);
  // dataset.domain auto (the default): the named dataset's own files of the shared directory; semeval2014-laptops
  // read the Restaurants files while the default was restaurants
  const std::string laptop_xml =
      "<sentences>\n<sentence id=\"9\"><text>The screen is dim.</text><aspectTerms>"
      "<aspectTerm term=\"screen\" polarity=\"negative\" from=\"4\" to=\"10\"/></aspectTerms></sentence>\n"
      "</sentences>\n";
  write(tmp("semeval/Laptop_Train_v2.xml"), laptop_xml);
  write(tmp("semeval/Laptops_Test_Gold.xml"), laptop_xml);
  TextDatasetLocation laptops{"semeval2014-laptops", tmp("semeval"), DatasetFormat::Semeval2014Xml};
  const auto lap = load_text_examples(laptops, TextExampleOptions{});
  ASSERT_EQ(int(lap.size()), 2);
  ASSERT_EQ(lap[0].aspect, std::string("screen"));
  laptops.name = "semeval2014-restaurants";
  ASSERT_EQ(int(load_text_examples(laptops, TextExampleOptions{}).size()), 14);
  ASSERT_EQ(int(load_text_examples(laptops,
                                   [] {
                                     TextExampleOptions o;
                                     o.domain = AbsaDomain::Laptops;
                                     return o;
                                   }())
                    .size()),
            2);  // a domain the run names is kept
}

TEST(Classify, kfold_splits_disjoint_and_cover) {
  std::vector<TextExample> base(103);
  for (size_t i = 0; i < base.size(); ++i) {
    base[i].text = std::to_string(i);
    base[i].group = i < 20 ? "g" + std::to_string(i / 4) : "";  // a few multi-example groups
  }
  const int K = 5;
  std::set<std::string> seen_test;
  for (int f = 0; f < K; ++f) {
    auto ex = base;
    assign_splits(ex, json{{"folds", K}, {"fold", f}, {"valid_fraction", 0.1}, {"split_seed", 3}});
    int nt = 0, nv = 0, ntr = 0;
    std::map<std::string, std::string> group_split;
    for (auto& e : ex) {
      ASSERT_TRUE(e.split == "train" || e.split == "valid" || e.split == "test");
      if (e.split == "test") {
        ASSERT_TRUE(seen_test.insert(e.text).second) << "an example is in the test part of two folds";
        ++nt;
      }
      nv += e.split == "valid";
      ntr += e.split == "train";
      if (!e.group.empty()) {
        auto it = group_split.find(e.group);
        if (it != group_split.end()) {
          ASSERT_EQ(it->second, e.split);
        }
        group_split[e.group] = e.split;
      }
    }
    ASSERT_TRUE(nt > 10 && nt < 40);
    ASSERT_TRUE(nv > 0);
    ASSERT_EQ(nt + nv + ntr, 103);
  }
  ASSERT_EQ(int(seen_test.size()), 103);  // the folds' test parts cover the data
  // deterministic
  auto a = base, b = base;
  assign_splits(a, json{{"folds", K}, {"fold", 2}, {"split_seed", 3}});
  assign_splits(b, json{{"folds", K}, {"fold", 2}, {"split_seed", 3}});
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i].split, b[i].split);
  // no split of its own: fractions
  auto c = base;
  assign_splits(c, json{{"valid_fraction", 0.2}, {"test_fraction", 0.1}});
  int t = 0, v = 0;
  for (auto& e : c) {
    t += e.split == "test";
    v += e.split == "valid";
  }
  ASSERT_TRUE(t >= 7 && t <= 25);
  ASSERT_TRUE(v >= 15 && v <= 40);
}

TEST(Classify, batches_vocab_glove_and_resume) {
  const auto p = tmp("c/data.jsonl");
  write(p, jsonl_fixture(120));
  const auto glove = tmp("c/glove.txt");
  std::string g = "the";
  for (int i = 0; i < 16; ++i) g += " 0.5";
  g += "\ngreat";
  for (int i = 0; i < 16; ++i) g += " -0.25";
  g += "\nzzzunknownword";
  for (int i = 0; i < 16; ++i) g += " 1";
  write(glove, g + "\n");
  json raw = {
      {"task", "classify"},
      {"dataset", {{"path", p}, {"valid_fraction", 0.2}, {"test_fraction", 0.2}}},
      {"model", small_model("cru_deep_enhanced")},
      {"training",
       {{"batch", 8}, {"steps", 6}, {"eval_every", 0}, {"log_every", 1}, {"threads", 1}, {"eval_test", false}}}};
  raw["model"]["pretrained_embeddings"] = glove;
  json cfg = load_and_resolve(raw);
  SentenceTask task(cfg, "", false);
  ASSERT_EQ(task.vocab().symbol(1), std::string("<pad>"));
  ASSERT_TRUE(task.labels() == (std::vector<std::string>{"neg", "pos"}));
  const int64_t the = task.vocab().id("the");
  ASSERT_TRUE(torch::allclose(task.net()->embed->weight[the], torch::full({16}, 0.5f)));
  ASSERT_TRUE(task.pretrained_coverage() > 0 && task.pretrained_coverage() < 1);
  ASSERT_TRUE(task.net()->embed->weight[SentenceTask::kPad].abs().sum().item<float>() == 0.f);
  auto er = task.evaluate("valid");
  ASSERT_TRUE(er.metrics.count("pretrained_coverage"));
  ASSERT_TRUE(er.metrics.count("accuracy"));
  auto b = task.make_batch(task.split("train"), {0, 1, 2});
  ASSERT_EQ(b.tokens.size(1), int64_t(3));
  ASSERT_EQ(b.tokens.size(0), b.lengths.max().item<int64_t>());
  // malformed GloVe file
  write(glove, "the 1 2 3\n");
  ASSERT_TRUE(throws_with([&] { SentenceTask t2(cfg, "", false); }, {glove + ":1", "expected model.embed = 16"}));
  raw["model"].erase("pretrained_embeddings");
  // Resume is exact: 6 steps + checkpoint + 6 more == 12 straight.
  json c12 = raw;
  c12["training"]["steps"] = 12;
  c12 = load_and_resolve(c12);
  json c6 = load_and_resolve(raw);
  const auto runs = cstest::run_straight_and_resumed(
      c12, c6, [](const json& c) { return make_task(c); }, tmp("c/ck.pt"));
  ASSERT_TRUE(runs.straight_loss() > 0);
  ASSERT_DOUBLE_EQ(runs.resumed_loss(), runs.straight_loss());
}

TEST(Classify, absa_fixture_run) {
  const auto f = tmp("absa/one.xml");
  std::string xml = "<sentences>\n";
  const char* pol[] = {"positive", "negative", "neutral"};
  for (int i = 0; i < 60; ++i) {
    xml += "<sentence id=\"" + std::to_string(i) + "\"><text>the food was " + std::string(i % 2 ? "bad" : "good") +
           " but the staff</text><aspectTerms><aspectTerm term=\"food\" polarity=\"" + pol[i % 2] +
           "\"/><aspectTerm term=\"the staff\" polarity=\"" + pol[(i + 1) % 3] + "\"/></aspectTerms></sentence>\n";
  }
  write(f, xml + "</sentences>\n");
  for (std::string subset : {"ds", "hds"}) {
    json raw = {{"task", "absa"},
                {"dataset", {{"path", f}, {"valid_fraction", 0.2}, {"test_fraction", 0.2}, {"subset", subset}}},
                {"model", small_model("gru")},
                {"training", {{"batch", 8}, {"steps", 3}, {"eval_every", 0}, {"threads", 1}}}};
    raw["model"].erase("fc");
    json cfg = load_and_resolve(raw);
    ASSERT_EQ(cfg["model"]["fc"].get<int>(), 0);  // the MZU setup: no FC layer
    auto task = make_task(cfg);
    auto* st = dynamic_cast<SentenceTask*>(task.get());
    ASSERT_TRUE(st);
    ASSERT_EQ(int(st->labels().size()), 4);
    const int n =
        int(st->split("train").labels.size() + st->split("valid").labels.size() + st->split("test").labels.size());
    ASSERT_EQ(n, subset == "ds" ? 120 : 80);  // HDS: the 40 sentences whose two aspects differ, two copies each
    Trainer tr(cfg, std::move(task), nullptr);
    auto out = tr.run();
    ASSERT_TRUE(out.summary.has_best);
    auto er = tr.task().evaluate("valid");
    ASSERT_TRUE(er.metrics.count("accuracy"));
    ASSERT_TRUE(er.metrics.count("macro_f1"));
    ASSERT_TRUE(er.metrics.count("accuracy_hds"));
  }
}

TEST(Classify, absa_mzu_disagreement_balance_as_in_the_char_lm) {
  // MZU eq. 19: the task loss plus lambda x the sum over the tokens of the sum over the
  // M-functions of D_zone. In the char LM both sums run over the same tokens and the loss is
  // a mean per character; in ABSA the loss is a mean per sentence, so the term must be the
  // sum over each sentence's tokens, averaged over the sentences: T times the per-token mean.
  // Every fixture sentence has T = 7 tokens ("the food was good but the staff"), no padding.
  const auto f = tmp("absa_bal/one.xml");
  std::string xml = "<sentences>\n";
  for (int i = 0; i < 20; ++i)
    xml += "<sentence id=\"" + std::to_string(i) + "\"><text>the food was " + std::string(i % 2 ? "bad" : "good") +
           " but the staff</text><aspectTerms><aspectTerm term=\"food\" polarity=\"" +
           (i % 2 ? "negative" : "positive") + "\"/></aspectTerms></sentence>\n";
  write(f, xml + "</sentences>\n");
  json raw = {{"task", "absa"},
              {"dataset", {{"path", f}, {"valid_fraction", 0.2}, {"test_fraction", 0.2}}},
              {"model",
               {{"cell", "cap_mzu"},
                {"embed", 8},
                {"hidden", 8},
                {"zones", 2},
                {"filter", 8},
                {"depth", 0},
                {"zone_disagreement", 1.0},
                {"dropout", 0.0}}},
              {"training", {{"batch", 4}, {"steps", 1}, {"threads", 1}, {"embed_l2", 0.0}}}};
  json cfg = load_and_resolve(raw);
  auto task = make_task(cfg);
  auto r = task->train_step();
  ASSERT_TRUE(r.metrics.count("zone_disagreement"));
  const double extra = r.loss.item<double>() - r.task_loss, d = r.metrics["zone_disagreement"];
  ASSERT_TRUE(std::abs(d) > 1e-3) << d;
  // 2 directions x 2 M-functions (M_h, M_g) per token, 7 tokens per sentence, mean over sentences
  const double expect = -1.0 * 7 * 4 * d;
  ASSERT_NEAR(extra, expect, 1e-4 * std::abs(expect) + 1e-6) << "per-token mean would give " << -4 * d;
}

TEST(Classify, absa_paper_preset_trains_cap_mzu_dt) {
  // The "paper" ABSA preset trains the paper's model (capMZU+DT, Table 6), and a GRU+DT preset its baseline.
  const std::string dir = cstest::source_dir() + "/resources/presets/";
  json p = json::parse(cstest::read_text(dir + "absa-restaurants-paper.json"));
  ASSERT_TRUE(validate_config(p).empty());
  json m = resolve_config(p)["model"];
  EXPECT_EQ(m["cell"].get<std::string>(), "cap_mzu");
  EXPECT_EQ(m["depth"].get<int64_t>(), 1);
  EXPECT_EQ(m["capsules"].get<int64_t>(), 2);
  EXPECT_EQ(m["routing_iters"].get<int64_t>(), 3);
  EXPECT_EQ(m["zone_disagreement"].get<double>(), 1.0);
  EXPECT_EQ(p["notes"].get<std::string>().find("uses its GRU+DT baseline"), std::string::npos);
  json g = json::parse(cstest::read_text(dir + "absa-restaurants-gru-dt.json"));
  ASSERT_TRUE(validate_config(g).empty());
  EXPECT_EQ(resolve_config(g)["model"]["cell"].get<std::string>(), "gru_dt");
}

TEST(Classify, config_errors) {
  auto errs = validate_config(json{{"task", "classify"}});  // default dataset name is a char-LM corpus
  ASSERT_EQ(int(errs.size()), 1);
  ASSERT_EQ(errs[0].path, std::string("dataset.name"));
  errs = validate_config(json{{"task", "classify"}, {"dataset", {{"name", "mr"}, {"folds", 10}, {"fold", 10}}}});
  ASSERT_EQ(int(errs.size()), 1);
  ASSERT_EQ(errs[0].path, std::string("dataset.fold"));
  ASSERT_TRUE(validate_config(json{{"task", "absa"}, {"dataset", {{"name", "semeval2014-laptops"}, {"subset", "hds"}}}})
                  .empty());
}

TEST(Classify, cli_train_eval_params_cv) {
  const auto p = tmp("cli/data.jsonl");
  write(p, jsonl_fixture(90));
  const auto cfgp = tmp("cli/cfg.json");
  json cfg = {{"task", "classify"},
              {"dataset", {{"path", p}}},
              {"model", small_model("cru_shallow")},
              {"training", {{"batch", 8}, {"steps", 4}, {"eval_every", 2}, {"threads", 1}}}};
  write(cfgp, cfg.dump());
  std::string out, err;
  const std::string run = cstest::temp_dir() + "/cli/run";
  ASSERT_EQ(cstest::run_cli({"train", cfgp, "--run-dir", run, "--quiet", "--set", "dataset.valid_fraction=0.2", "--set",
                             "dataset.test_fraction=0.2"},
                            &out, &err),
            0);
  ASSERT_TRUE(std::filesystem::exists(run + "/summary.json"));
  auto s = cstest::json_object(cstest::read_text(run + "/summary.json"));
  ASSERT_EQ(s.value("primary_metric", std::string()), std::string("accuracy"));
  ASSERT_TRUE(s.contains("best_valid"));
  ASSERT_EQ(cstest::run_cli({"eval", run, "--split", "test", "--json"}, &out, &err), 0);
  auto ej = cstest::json_object(out);
  ASSERT_TRUE(ej.contains("accuracy"));
  ASSERT_EQ(cstest::run_cli({"params", cfgp, "--json"}, &out, &err), 0);
  ASSERT_TRUE(cstest::json_object(out).value("total", 0) > 0);
  const std::string cvdir = cstest::temp_dir() + "/cli/cv";
  ASSERT_EQ(cstest::run_cli({"cv", cfgp, "--folds", "3", "--out", cvdir, "--steps", "2", "--json"}, &out, &err), 0);
  ASSERT_TRUE(std::filesystem::exists(cvdir + "/cv_summary.json"));
  auto cj = cstest::json_object(cstest::read_text(cvdir + "/cv_summary.json"));
  ASSERT_EQ(cj.value("folds", 0), 3);
  const auto cj_test = cj.value("test", json::object());
  ASSERT_EQ(cj_test.value("n", 0), 3);
  ASSERT_TRUE(cj_test.contains("std"));
  ASSERT_TRUE(std::filesystem::exists(cvdir + "/fold-2/summary.json"));
}

TEST(Classify, spam_assassin_beats_majority) {
  // The real default dataset (converted by datasets/fetch.sh into the data cache).
  const std::string path = join_path(data_cache_dir(), "spam-assassin.jsonl");
  if (!file_exists(path)) FAIL() << "missing " + path + " (run datasets/fetch.sh)";
  json raw = {
      {"task", "classify"},
      {"dataset", {{"name", "spam-assassin"}, {"max_len", 48}, {"max_vocab", 8000}}},
      {"model", {{"cell", "cru_deep_enhanced"}, {"embed", 32}, {"hidden", 32}, {"fc", 64}, {"dropout", 0.1}}},
      {"training", {{"batch", 32}, {"steps", 120}, {"lr", 3e-3}, {"eval_every", 0}, {"threads", 1}, {"seed", 1}}}};
  json cfg = load_and_resolve(raw);
  seed_everything(1);
  auto task = make_task(cfg);
  auto* st = dynamic_cast<SentenceTask*>(task.get());
  const auto& test = st->split("test");
  int64_t counts[2] = {0, 0};
  for (auto y : test.labels) ++counts[y];
  const double majority = double(std::max(counts[0], counts[1])) / double(test.labels.size());
  Trainer tr(cfg, std::move(task), nullptr);
  auto out = tr.run();
  ASSERT_TRUE(out.summary.has_test);
  std::printf("spam-assassin test accuracy %.4f (majority %.4f, %lld test e-mails)\n", out.summary.test_metric,
              majority, (long long)test.labels.size());
  ASSERT_TRUE(test.labels.size() > 300);
  ASSERT_TRUE(out.summary.test_metric > majority + 0.1);
}

}  // namespace test_classify
