// Sentence tasks (tasks/classify.h): tokenizer, loaders on fixtures in the exact
// formats (and malformed ones), HDS, k-fold splits, batching, resume, the CLI, and a
// short run on the real default dataset (SpamAssassin) against the majority baseline.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

#include <fstream>
#include <set>

#include "data/text_datasets.h"
#include "data/text_tokenize.h"
#include "harness.h"
#include "tasks/classify.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/paths.h"

using namespace cs;

namespace {

std::string tmp(const std::string& rel) { return (cstest::temp_dir() + "/" + QString::fromStdString(rel)).toStdString(); }

void write(const std::string& path, const std::string& data) {
  QDir().mkpath(QFileInfo(QString::fromStdString(path)).absolutePath());
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
        qWarning("message '%s' lacks '%s'", m.c_str(), n.c_str());
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
    s += json{{"text", std::string("the movie was ") + (pos ? good[i % 3] : bad[i % 3]) + " and long " + std::to_string(i % 5)},
              {"label", pos ? "pos" : "neg"}}.dump() + "\n";
  }
  return s;
}

json small_model(const std::string& cell) {
  return {{"cell", cell}, {"embed", 16}, {"hidden", 12}, {"fc", 16}, {"dropout", 0.0}};
}

}  // namespace

class TestClassify : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void tokenizer_rules() {
    auto t = tokenize_words("Don't STOP-me now, it's well-known!  'quoted' x--y \xC3\xA9t\xC3\xA9");
    std::vector<std::string> expect = {"don't", "stop-me", "now", ",", "it's", "well-known", "!", "'", "quoted", "'",
                                       "x", "-", "-", "y", "\xC3\xA9t\xC3\xA9"};
    QCOMPARE(t.size(), expect.size());
    for (size_t i = 0; i < t.size(); ++i) QCOMPARE(QString::fromStdString(t[i]), QString::fromStdString(expect[i]));
    TextTokenizeOptions o;
    o.lowercase = false;
    o.max_tokens = 2;
    auto u = tokenize_words("A b c", o);
    QCOMPARE(int(u.size()), 2);
    QCOMPARE(QString::fromStdString(u[0]), QString("A"));
    QCOMPARE(QString::fromStdString(latin1_to_utf8("caf\xE9")), QString::fromUtf8("caf\xC3\xA9"));
    QVERIFY(find_invalid_utf8("ok \xC3\xA9") == std::string::npos);
    QCOMPARE(int(find_invalid_utf8("ab\xC3(")), 2);
  }

  void jsonl_loader() {
    const auto p = tmp("j/ok.jsonl");
    write(p, "{\"text\":\"a b\",\"label\":\"spam\",\"split\":\"train\"}\n\n{\"text\":\"c\",\"label\":\"ham\",\"split\":\"dev\"}\n");
    auto ex = load_jsonl_examples(p);
    QCOMPARE(int(ex.size()), 2);
    QCOMPARE(QString::fromStdString(ex[1].split), QString("valid"));
    QCOMPARE(QString::fromStdString(ex[0].label), QString("spam"));
    const auto bad = tmp("j/bad.jsonl");
    write(bad, "{\"text\":\"a\",\"label\":\"x\"}\n{\"text\": \"oops\n");
    QVERIFY(throws_with([&] { load_jsonl_examples(bad); }, {bad + ":2", "not valid JSON"}));
    write(bad, "{\"text\":\"a\",\"label\":\"x\"}\n{\"label\":\"x\"}\n");
    QVERIFY(throws_with([&] { load_jsonl_examples(bad); }, {bad + ":2", "'text'"}));
    write(bad, "{\"text\":\"a\",\"label\":\"x\",\"split\":\"holdout\"}\n");
    QVERIFY(throws_with([&] { load_jsonl_examples(bad); }, {bad + ":1", "holdout"}));
    QVERIFY(throws_with([&] { load_jsonl_examples(tmp("j/none.jsonl")); }, {"none.jsonl"}));
  }

  void mr_and_subj_loaders() {
    const auto d = tmp("mr");
    write(d + "/rt-polarity.pos", "a charming caf\xE9 film .\nfun\n");
    write(d + "/rt-polarity.neg", "dull .\n\nboring\n");
    auto ex = load_pos_neg_lines(d);
    QCOMPARE(int(ex.size()), 4);
    QCOMPARE(QString::fromStdString(ex[0].text), QString::fromUtf8("a charming caf\xC3\xA9 film ."));  // Latin-1 -> UTF-8
    QCOMPARE(QString::fromStdString(ex[2].label), QString("neg"));
    std::string nul = "dull .\nok\nbro";
    nul += '\0';
    nul += "ken\n";
    write(d + "/rt-polarity.neg", nul);
    QVERIFY(throws_with([&] { load_pos_neg_lines(d); }, {d + "/rt-polarity.neg:3", "NUL"}));
    const auto s = tmp("subj");
    write(s + "/quote.tok.gt9.5000", "i loved it .\n");
    write(s + "/plot.tok.gt9.5000", "a man walks .\nhe runs .\n");
    auto sx = load_subj_lines(s);
    QCOMPARE(int(sx.size()), 3);
    QCOMPARE(QString::fromStdString(sx[0].label), QString("subjective"));
    QCOMPARE(QString::fromStdString(sx[2].label), QString("objective"));
    QVERIFY(throws_with([&] { load_subj_lines(tmp("nosubj")); }, {"quote.tok.gt9.5000"}));
  }

  void imdb_loader() {
    const auto d = tmp("imdb/aclImdb");
    write(d + "/train/pos/0_9.txt", "Great.<br />Loved it.");
    write(d + "/train/neg/1_2.txt", "Bad.");
    write(d + "/test/pos/2_8.txt", "Nice.");
    write(d + "/test/neg/3_1.txt", "Awful.");
    write(d + "/train/pos/readme.md", "ignored");
    auto ex = load_aclimdb(d);
    QCOMPARE(int(ex.size()), 4);
    int tr = 0;
    for (auto& e : ex) tr += e.split == "train";
    QCOMPARE(tr, 2);
    bool found = false;
    for (auto& e : ex)
      if (e.text == "Great. Loved it.") found = true;
    QVERIFY(found);
    // via the resolver with the parent directory
    json ds = {{"path", tmp("imdb")}, {"format", "auto"}};
    auto loc = resolve_text_dataset(ds, "classify");
    QCOMPARE(QString::fromStdString(loc.format), QString("aclimdb"));
    QCOMPARE(int(load_text_examples(loc, ds).size()), 4);
    write(d + "/test/neg/4_1.txt", "line one\nbad \xFF byte");
    QVERIFY(throws_with([&] { load_aclimdb(d); }, {d + "/test/neg/4_1.txt:2", "UTF-8"}));
    QFile::remove(QString::fromStdString(d + "/test/neg/4_1.txt"));
    write(d + "/test/neg/review.txt", "x");
    QVERIFY(throws_with([&] { load_aclimdb(d); }, {d + "/test/neg/review.txt:1", "<id>_<rating>"}));
  }

  void sst_loader() {
    const auto d = tmp("sst");
    write(d + "/train.txt", "(3 (2 It) (4 (2 's) (3 good)))\n(1 (1 Bad) (2 .))\n");
    write(d + "/dev.txt", "(2 (2 So) (2 so))\n");
    write(d + "/test.txt", "(4 (4 Great))\n");
    auto ex5 = load_sst_trees(d, 5);
    QCOMPARE(int(ex5.size()), 4);
    QCOMPARE(QString::fromStdString(ex5[0].text), QString("It 's good"));
    QCOMPARE(QString::fromStdString(ex5[0].label), QString("3"));
    QCOMPARE(QString::fromStdString(ex5[2].split), QString("valid"));
    auto ex2 = load_sst_trees(d, 2);
    QCOMPARE(int(ex2.size()), 3);  // the neutral dev sentence is dropped
    QCOMPARE(QString::fromStdString(ex2[1].label), QString("neg"));
    write(d + "/dev.txt", "(2 (2 So) (2 so))\n(3 (2 unbalanced)\n");
    QVERIFY(throws_with([&] { load_sst_trees(d, 5); }, {d + "/dev.txt:2", "unbalanced"}));
    write(d + "/dev.txt", "(7 (2 x))\n");
    QVERIFY(throws_with([&] { load_sst_trees(d, 5); }, {d + "/dev.txt:1", "out of range"}));
  }

  void semeval_loader_and_hds() {
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
    QCOMPARE(int(ex.size()), 7);  // one example per aspect term; sentence 3 has none
    QCOMPARE(QString::fromStdString(ex[2].text), QString("Great food & great wine."));
    QCOMPARE(QString::fromStdString(ex[1].aspect), QString("service"));
    // HDS: sentences 1 and 4 (several aspects, different polarities), each copied once per aspect
    std::vector<bool> hard;
    for (auto& e : ex) hard.push_back(e.hard);
    QVERIFY(hard == (std::vector<bool>{true, true, false, false, true, true, true}));
    // malformed files
    const auto bad = tmp("semeval/bad.xml");
    write(bad, "<sentences>\n<sentence id=\"1\"><text>x</text>\n<aspectTerms><aspectTerm term=\"x\" from=\"0\"/>\n</aspectTerms></sentence></sentences>\n");
    QVERIFY(throws_with([&] { load_semeval_xml(bad, ""); }, {bad + ":3", "polarity"}));
    write(bad, "<sentences>\n<sentence id=\"1\"><text>x</text>\n</sentences>\n");
    QVERIFY(throws_with([&] { load_semeval_xml(bad, ""); }, {bad + ":3", "</sentences>"}));
    write(bad, "<sentences>\n<sentence id=\"1\"><text>x</text><aspectTerms><aspectTerm term=\"x\" polarity=\"great\"/></aspectTerms></sentence></sentences>\n");
    QVERIFY(throws_with([&] { load_semeval_xml(bad, ""); }, {bad + ":2", "great"}));
    // the directory form picks the domain's train and test files
    write(tmp("semeval/Restaurants_Test_Gold.xml"), xml);
    json ds = {{"path", tmp("semeval")}, {"format", "semeval2014_xml"}, {"domain", "restaurants"}};
    auto all = load_text_examples(resolve_text_dataset(ds, "absa"), ds);
    QCOMPARE(int(all.size()), 14);
  }

  void kfold_splits_disjoint_and_cover() {
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
        QVERIFY(e.split == "train" || e.split == "valid" || e.split == "test");
        if (e.split == "test") {
          QVERIFY2(seen_test.insert(e.text).second, "an example is in the test part of two folds");
          ++nt;
        }
        nv += e.split == "valid";
        ntr += e.split == "train";
        if (!e.group.empty()) {
          auto it = group_split.find(e.group);
          if (it != group_split.end()) QCOMPARE(QString::fromStdString(it->second), QString::fromStdString(e.split));
          group_split[e.group] = e.split;
        }
      }
      QVERIFY(nt > 10 && nt < 40);
      QVERIFY(nv > 0);
      QCOMPARE(nt + nv + ntr, 103);
    }
    QCOMPARE(int(seen_test.size()), 103);  // the folds' test parts cover the data
    // deterministic
    auto a = base, b = base;
    assign_splits(a, json{{"folds", K}, {"fold", 2}, {"split_seed", 3}});
    assign_splits(b, json{{"folds", K}, {"fold", 2}, {"split_seed", 3}});
    for (size_t i = 0; i < a.size(); ++i) QCOMPARE(QString::fromStdString(a[i].split), QString::fromStdString(b[i].split));
    // no split of its own: fractions
    auto c = base;
    assign_splits(c, json{{"valid_fraction", 0.2}, {"test_fraction", 0.1}});
    int t = 0, v = 0;
    for (auto& e : c) {
      t += e.split == "test";
      v += e.split == "valid";
    }
    QVERIFY(t >= 7 && t <= 25);
    QVERIFY(v >= 15 && v <= 40);
  }

  void batches_vocab_glove_and_resume() {
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
    json raw = {{"task", "classify"},
                {"dataset", {{"path", p}, {"valid_fraction", 0.2}, {"test_fraction", 0.2}}},
                {"model", small_model("cru_deep_enhanced")},
                {"training", {{"batch", 8}, {"steps", 6}, {"eval_every", 0}, {"log_every", 1}, {"threads", 1}, {"eval_test", false}}}};
    raw["model"]["pretrained_embeddings"] = glove;
    json cfg = load_and_resolve(raw);
    SentenceTask task(cfg, "", false);
    QCOMPARE(QString::fromStdString(task.vocab().symbol(1)), QString("<pad>"));
    QVERIFY(task.labels() == (std::vector<std::string>{"neg", "pos"}));
    const int64_t the = task.vocab().id("the");
    QVERIFY(torch::allclose(task.net()->embed->weight[the], torch::full({16}, 0.5f)));
    QVERIFY(task.pretrained_coverage() > 0 && task.pretrained_coverage() < 1);
    QVERIFY(task.net()->embed->weight[SentenceTask::kPad].abs().sum().item<float>() == 0.f);
    auto er = task.evaluate("valid");
    QVERIFY(er.metrics.count("pretrained_coverage"));
    QVERIFY(er.metrics.count("accuracy"));
    auto b = task.make_batch(task.split("train"), {0, 1, 2});
    QCOMPARE(b.tokens.size(1), int64_t(3));
    QCOMPARE(b.tokens.size(0), b.lengths.max().item<int64_t>());
    // malformed GloVe file
    write(glove, "the 1 2 3\n");
    QVERIFY(throws_with([&] { SentenceTask t2(cfg, "", false); }, {glove + ":1", "expected model.embed = 16"}));
    raw["model"].erase("pretrained_embeddings");
    // Resume is exact: 6 steps + checkpoint + 6 more == 12 straight.
    json c12 = raw;
    c12["training"]["steps"] = 12;
    c12 = load_and_resolve(c12);
    json c6 = load_and_resolve(raw);
    seed_everything(5);
    Trainer straight(c12, make_task(c12), nullptr);
    straight.run();
    seed_everything(5);
    Trainer first(c6, make_task(c6), nullptr);
    first.run();
    const auto ck = tmp("c/ck.pt");
    first.save_checkpoint(ck);
    seed_everything(99);  // the checkpoint restores the RNG
    Trainer second(c12, make_task(c12), nullptr);
    second.load_checkpoint(ck);
    second.run();
    auto last_loss = [](const std::vector<MetricsRecord>& h) {
      for (auto it = h.rbegin(); it != h.rend(); ++it)
        if (!it->eval) return it->values.at("loss");
      return -1.0;
    };
    QVERIFY(last_loss(straight.history) > 0);
    QCOMPARE(last_loss(second.history), last_loss(straight.history));
  }

  void absa_fixture_run() {
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
      QCOMPARE(cfg["model"]["fc"].get<int>(), 0);  // the MZU setup: no FC layer
      auto task = make_task(cfg);
      auto* st = dynamic_cast<SentenceTask*>(task.get());
      QVERIFY(st);
      QCOMPARE(int(st->labels().size()), 4);
      const int n = int(st->split("train").labels.size() + st->split("valid").labels.size() + st->split("test").labels.size());
      QCOMPARE(n, subset == "ds" ? 120 : 80);  // HDS: the 40 sentences whose two aspects differ, two copies each
      Trainer tr(cfg, std::move(task), nullptr);
      auto out = tr.run();
      QVERIFY(out.summary.has_best);
      auto er = tr.task().evaluate("valid");
      QVERIFY(er.metrics.count("accuracy"));
      QVERIFY(er.metrics.count("macro_f1"));
      QVERIFY(er.metrics.count("accuracy_hds"));
    }
  }

  void config_errors() {
    auto errs = validate_config(json{{"task", "classify"}});  // default dataset name is a char-LM corpus
    QCOMPARE(int(errs.size()), 1);
    QCOMPARE(QString::fromStdString(errs[0].path), QString("dataset.name"));
    errs = validate_config(json{{"task", "classify"}, {"dataset", {{"name", "mr"}, {"folds", 10}, {"fold", 10}}}});
    QCOMPARE(int(errs.size()), 1);
    QCOMPARE(QString::fromStdString(errs[0].path), QString("dataset.fold"));
    QVERIFY(validate_config(json{{"task", "absa"}, {"dataset", {{"name", "semeval2014-laptops"}, {"subset", "hds"}}}}).empty());
  }

  void cli_train_eval_params_cv() {
    const auto p = tmp("cli/data.jsonl");
    write(p, jsonl_fixture(90));
    const auto cfgp = tmp("cli/cfg.json");
    json cfg = {{"task", "classify"},
                {"dataset", {{"path", p}}},
                {"model", small_model("cru_shallow")},
                {"training", {{"batch", 8}, {"steps", 4}, {"eval_every", 2}, {"threads", 1}}}};
    write(cfgp, cfg.dump());
    QString out, err;
    const QString run = cstest::temp_dir() + "/cli/run";
    QCOMPARE(cstest::run_cli({"train", QString::fromStdString(cfgp), "--run-dir", run, "--quiet", "--set", "dataset.valid_fraction=0.2",
                              "--set", "dataset.test_fraction=0.2"}, &out, &err), 0);
    QFile sf(run + "/summary.json");
    QVERIFY(sf.open(QIODevice::ReadOnly));
    auto s = QJsonDocument::fromJson(sf.readAll()).object();
    QCOMPARE(s["primary_metric"].toString(), QString("accuracy"));
    QVERIFY(s.contains("best_valid"));
    QCOMPARE(cstest::run_cli({"eval", run, "--split", "test", "--json"}, &out, &err), 0);
    auto ej = QJsonDocument::fromJson(out.toUtf8()).object();
    QVERIFY(ej.contains("accuracy"));
    QCOMPARE(cstest::run_cli({"params", QString::fromStdString(cfgp), "--json"}, &out, &err), 0);
    QVERIFY(QJsonDocument::fromJson(out.toUtf8()).object()["total"].toInt() > 0);
    const QString cvdir = cstest::temp_dir() + "/cli/cv";
    QCOMPARE(cstest::run_cli({"cv", QString::fromStdString(cfgp), "--folds", "3", "--out", cvdir, "--steps", "2", "--json"}, &out, &err), 0);
    QFile cf(cvdir + "/cv_summary.json");
    QVERIFY(cf.open(QIODevice::ReadOnly));
    auto cj = QJsonDocument::fromJson(cf.readAll()).object();
    QCOMPARE(cj["folds"].toInt(), 3);
    QCOMPARE(cj["test"].toObject()["n"].toInt(), 3);
    QVERIFY(cj["test"].toObject().contains("std"));
    QVERIFY(QFile::exists(cvdir + "/fold-2/summary.json"));
  }

  void spam_assassin_beats_majority() {
    // The real default dataset (converted by datasets/fetch.sh into the data cache).
    const std::string path = join_path(data_cache_dir(), "spam-assassin.jsonl");
    if (!file_exists(path)) QFAIL(qPrintable(QString::fromStdString("missing " + path + " (run datasets/fetch.sh)")));
    json raw = {{"task", "classify"},
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
    QVERIFY(out.summary.has_test);
    qInfo("spam-assassin test accuracy %.4f (majority %.4f, %lld test e-mails)", out.summary.test_metric, majority,
          (long long)test.labels.size());
    QVERIFY(test.labels.size() > 300);
    QVERIFY(out.summary.test_metric > majority + 0.1);
  }
};

CS_TEST(TestClassify, "classify")
#include "test_classify.moc"
