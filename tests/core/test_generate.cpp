// Text generation (issue #8): determinism with a fixed seed, greedy as temperature -> 0,
// probabilities that agree with a whole-sequence forward pass, word-LM text, CLI.
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonArray>
#include <QJsonObject>

#include <cmath>
#include <fstream>

#include "corpus_fixture.h"
#include "harness.h"
#include "tasks/char_lm.h"
#include "tasks/generate.h"
#include "tasks/word_lm.h"
#include "train/trainer.h"
#include "util/error.h"

using namespace cs;

namespace {

QString train_run(const QString& name, const json& cfg) {
  const QString dir = cstest::temp_dir() + "/" + name;
  const QString cfgp = cstest::temp_dir() + "/" + name + ".json";
  std::ofstream(cfgp.toStdString()) << cfg.dump();
  QString out, err;
  const int rc = cstest::run_cli({"train", cfgp, "--run-dir", dir, "--quiet"}, &out, &err);
  if (rc != 0) qWarning("train failed: %s", qPrintable(err));
  return rc == 0 ? dir : QString();
}

// The model's logits for a whole id sequence in one forward pass (the reference the
// token-by-token generation must agree with).
torch::Tensor full_logits(Task& task, const std::vector<int32_t>& ids) {
  torch::NoGradGuard ng;
  task.model()->eval();
  auto x = torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kInt64).view({-1, 1});
  StepContext ctx;
  if (auto* c = dynamic_cast<CharLMTask*>(&task)) {
    auto s = c->net()->stack->initial_state(1, torch::TensorOptions());
    return c->net()->forward(x, s, ctx).select(1, 0).to(torch::kFloat64);
  }
  auto* w = dynamic_cast<WordLMTask*>(&task);
  auto s = w->net()->initial_state(1, torch::TensorOptions());
  return w->net()->forward(x, s, ctx).select(1, 0).to(torch::kFloat64);
}

std::vector<int32_t> ids_of(const Generation& g) {
  std::vector<int32_t> v;
  for (auto& t : g.tokens) v.push_back(t.id);
  return v;
}

// Every token after the first agrees with the whole-sequence pass: its probability, and
// (greedy) it is the most probable allowed token.
void check_against_full_pass(Task& task, const Generation& g, bool greedy) {
  auto ids = ids_of(g);
  auto lp = torch::log_softmax(full_logits(task, ids), -1);
  for (size_t i = 1; i < ids.size(); ++i) {
    const double p = std::exp(lp[int64_t(i) - 1][ids[i]].item<double>());
    QVERIFY2(std::abs(p - g.tokens[i].prob) < 1e-4 * std::max(1.0, p),
             ("token " + std::to_string(i) + ": " + std::to_string(p) + " vs " + std::to_string(g.tokens[i].prob)).c_str());
    if (greedy && !g.tokens[i].from_seed) {
      auto row = lp[int64_t(i) - 1].clone();
      row[Vocab::kUnkId] = -1e30;
      QCOMPARE(row.argmax().item<int64_t>(), int64_t(ids[i]));
    }
  }
}

}  // namespace

class GenerateTest : public QObject {
  Q_OBJECT
  QString charRun_, wordRun_;

 private Q_SLOTS:
  void initTestCase() {
    const QString text = cstest::write_text_fixture("gen.txt", 30000);
    charRun_ = train_run("char", json{{"task", "char_lm"},
                                      {"dataset", {{"path", text.toStdString()}}},
                                      {"model", {{"cell", "gru"}, {"embed", 16}, {"hidden", 32}, {"layers", 1}}},
                                      {"training", {{"batch", 8}, {"bptt", 32}, {"steps", 80}, {"eval_every", 0},
                                                    {"eval_test", false}, {"threads", 1}, {"lr", 0.01}}}});
    wordRun_ = train_run("word", json{{"task", "word_lm"},
                                      {"dataset", {{"path", text.toStdString()}, {"format", "text"}}},
                                      {"model", {{"cell", "mcrnn"}, {"base", "lstm"}, {"block", 3}, {"embed", 16},
                                                 {"hidden", 24}, {"layers", 1}}},
                                      {"training", {{"batch", 8}, {"bptt", 12}, {"steps", 40}, {"eval_every", 0},
                                                    {"eval_test", false}, {"threads", 1}, {"lr", 0.01}}}});
    QVERIFY(!charRun_.isEmpty());
    QVERIFY(!wordRun_.isEmpty());
  }

  void charDeterministicWithSeed() {
    auto task = load_run_task(charRun_.toStdString(), "last");
    GenerateOptions o;
    o.seed_text = "The whale";
    o.length = 120;
    o.seed = 5;
    auto a = generate(*task, o), b = generate(*task, o);
    QCOMPARE(a.tokens.size(), size_t(9 + 120));
    QVERIFY(ids_of(a) == ids_of(b));
    QCOMPARE(QString::fromStdString(a.text()), QString::fromStdString(b.text()));
    QVERIFY(QString::fromStdString(a.text()).startsWith("The whale"));
    o.seed = 6;
    auto c = generate(*task, o);
    QVERIFY(ids_of(a) != ids_of(c));
    // seed tokens are marked, the first has no probability, the generated ones have both
    QVERIFY(a.tokens[0].from_seed && std::isnan(a.tokens[0].prob));
    QVERIFY(a.tokens[8].from_seed && a.tokens[8].prob > 0);
    QVERIFY(!a.tokens[9].from_seed && a.tokens[9].sample_prob > 0 && a.tokens[9].prob > 0);
    check_against_full_pass(*task, a, false);
  }

  void charGreedyAtZeroTemperature() {
    auto task = load_run_task(charRun_.toStdString(), "last");
    GenerateOptions o;
    o.seed_text = "The ";
    o.length = 60;
    o.temperature = 0;
    auto g = generate(*task, o);
    check_against_full_pass(*task, g, true);
    // greedy ignores the sampler's seed; a very low temperature samples the same text
    o.seed = 99;
    QVERIFY(ids_of(generate(*task, o)) == ids_of(g));
    o.temperature = 1e-4;
    QVERIFY(ids_of(generate(*task, o)) == ids_of(g));
    // top-k 1 is greedy at any temperature
    o.temperature = 2.0;
    o.top_k = 1;
    QVERIFY(ids_of(generate(*task, o)) == ids_of(g));
    // a trained model is surer of its greedy choices than of a hot sample's
    o.top_k = 0;
    o.temperature = 3.0;
    auto hot = generate(*task, o);
    QVERIFY(hot.generated_bits_per_token() > g.generated_bits_per_token());
  }

  void wordGeneration() {
    auto task = load_run_task(wordRun_.toStdString(), "last");
    GenerateOptions o;
    o.seed_text = "The old captain";
    o.length = 30;
    o.seed = 3;
    auto a = generate(*task, o), b = generate(*task, o);
    QCOMPARE(a.task, std::string("word_lm"));
    QVERIFY(ids_of(a) == ids_of(b));
    QCOMPARE(a.tokens.size(), size_t(3 + 30));
    QCOMPARE(a.tokens[0].text, std::string("the"));  // the corpus is lowercased (dataset.lowercase)
    for (auto& t : a.tokens) QVERIFY(t.id != Vocab::kUnkId);
    QVERIFY(QString::fromStdString(a.text()).startsWith("the old captain "));
    check_against_full_pass(*task, a, false);
    o.temperature = 0;
    check_against_full_pass(*task, generate(*task, o), true);
    // an unknown seed word is fed as <unk> and reported
    o.seed_text = "zyzzyva whale";
    auto u = generate(*task, o);
    QCOMPARE(u.unknown_seed_tokens, int64_t(1));
    // no seed: starts after an <eos>
    o.seed_text.clear();
    QCOMPARE(generate(*task, o).tokens.size(), size_t(30));
  }

  void badOptions() {
    auto task = load_run_task(charRun_.toStdString(), "last");
    GenerateOptions o;
    o.temperature = -1;
    QVERIFY_THROWS_EXCEPTION(UserError, generate(*task, o));
    o.temperature = 1;
    o.length = -5;
    QVERIFY_THROWS_EXCEPTION(UserError, generate(*task, o));
  }

  void cli() {
    QString out, err, out2;
    QCOMPARE(cstest::run_cli({"generate", "--run", charRun_, "--seed-text", "The sea", "--length", "40", "--seed", "4",
                              "--json", "--threads", "1"},
                             &out, &err),
             0);
    QCOMPARE(cstest::run_cli({"generate", "--run", charRun_, "--seed-text", "The sea", "--length", "40", "--seed", "4",
                              "--json", "--threads", "1"},
                             &out2, &err),
             0);
    QCOMPARE(out, out2);
    auto doc = QJsonDocument::fromJson(out.toUtf8()).object();
    QVERIFY(doc.value("text").toString().startsWith("The sea"));
    QCOMPARE(doc.value("tokens").toArray().size(), 7 + 40);
    const QString html = cstest::temp_dir() + "/sample.html";
    QCOMPARE(cstest::run_cli({"generate", "--run", wordRun_, "--length", "20", "--out", html}, &out, &err), 0);
    QFile f(html);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray h = f.readAll();
    QVERIFY(h.startsWith("<!DOCTYPE html>"));
    QCOMPARE(h.count("<span"), 20);
    // errors: one clear message, exit status 2
    QCOMPARE(cstest::run_cli({"generate", "--run", charRun_, "--temperature", "hot"}, &out, &err), 2);
    QVERIFY(err.contains("--temperature"));
    QCOMPARE(cstest::run_cli({"generate", "--run", cstest::temp_dir() + "/no-such-run"}, &out, &err), 2);
    QCOMPARE(cstest::run_cli({"generate", "--run", charRun_, "--out", cstest::temp_dir() + "/x.png"}, &out, &err), 2);
  }
};

CS_TEST(GenerateTest, "generate")
#include "test_generate.moc"
