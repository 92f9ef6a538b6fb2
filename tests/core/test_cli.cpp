// cellscope-cli: exit codes and messages; nothing created for an invalid config.
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>

#include "corpus_fixture.h"
#include "harness.h"

class TestCli : public QObject {
  Q_OBJECT
  QString writeConfig(const QString& name, const QByteArray& text) {
    const QString p = cstest::temp_dir() + "/" + name;
    QFile f(p);
    f.open(QIODevice::WriteOnly);
    f.write(text);
    return p;
  }
 private Q_SLOTS:
  void usageAndVersion() {
    QString out, err;
    QCOMPARE(cstest::run_cli({}, &out, &err), 2);
    QCOMPARE(cstest::run_cli({"--help"}, &out, &err), 0);
    QVERIFY(out.contains("train"));
    QCOMPARE(cstest::run_cli({"--version"}, &out, &err), 0);
    QVERIFY(out.contains("cellscope-cli "));
    QCOMPARE(cstest::run_cli({"frobnicate"}, &out, &err), 2);
    QVERIFY(err.contains("unknown command"));
    QCOMPARE(cstest::run_cli({"train", "--bogus"}, &out, &err), 2);
    QVERIFY(err.contains("--bogus"));
    for (auto c : {"info", "datasets", "presets", "validate", "train", "eval", "params", "bench"}) {
      QCOMPARE(cstest::run_cli({c, "--help"}, &out, &err), 0);
      QVERIFY2(out.contains("usage"), c);
    }
  }

  void infoReportsBlasAndThreads() {
    QString out, err;
    QCOMPARE(cstest::run_cli({"info", "--json", "--threads", "1"}, &out, &err), 0);
    auto j = QJsonDocument::fromJson(out.toUtf8()).object();
    QVERIFY(j.contains("blas"));
    QVERIFY(!j["blas"].toObject()["name"].toString().isEmpty());
    QCOMPARE(j["intra_op_threads"].toInt(), 1);
    QVERIFY(j.contains("cuda_available"));
    QVERIFY(j["libtorch_version"].toString().startsWith("1."));
    // This machine's set-up installs OpenBLAS; a netlib BLAS would be flagged with a warning.
    QCOMPARE(j["blas"].toObject()["fast"].toBool(), !j.contains("warning"));
  }

  void invalidConfigExits2WithPathsAndCreatesNothing() {
    const QString cfg = writeConfig("bad.json", R"({"model": {"cell": "gru", "hidden": -4, "zones": 3}, "training": {"lr": "fast"}})");
    const QString dir = cstest::temp_dir() + "/should_not_exist";
    QString out, err;
    QCOMPARE(cstest::run_cli({"train", cfg, "--run-dir", dir}, &out, &err), 2);
    QVERIFY2(err.contains("model.hidden") && err.contains("training.lr") && err.contains("model.zones"), qPrintable(err));
    QVERIFY(!QDir(dir).exists());
    QCOMPARE(cstest::run_cli({"validate", cfg}, &out, &err), 2);
    // malformed JSON
    const QString broken = writeConfig("broken.json", R"({"model": {"cell": )");
    QCOMPARE(cstest::run_cli({"train", broken, "--run-dir", dir}, &out, &err), 2);
    QVERIFY2(err.contains("not valid JSON") && err.contains("broken.json"), qPrintable(err));
    QVERIFY(!QDir(dir).exists());
    // a dataset that does not exist: named in the message, no directory
    const QString nodata = writeConfig("nodata.json", R"({"dataset": {"path": "/nonexistent/corpus.txt"}})");
    QCOMPARE(cstest::run_cli({"train", nodata, "--run-dir", dir}, &out, &err), 2);
    QVERIFY2(err.contains("/nonexistent/corpus.txt"), qPrintable(err));
    QVERIFY(!QDir(dir).exists());
    // --set overrides are validated too
    const QString ok = writeConfig("ok.json", R"({"model": {"cell": "gru"}})");
    QCOMPARE(cstest::run_cli({"validate", ok, "--set", "model.layers=0"}, &out, &err), 2);
    QVERIFY(err.contains("model.layers"));
  }

  void trainEvalParamsRoundTrip() {
    const QString text = cstest::write_text_fixture("cli.txt", 12000);
    const QString cfg = writeConfig("tiny.json", QString(R"({"dataset": {"path": "%1"},
      "model": {"cell": "lstm", "embed": 8, "hidden": 16},
      "training": {"batch": 4, "bptt": 16, "steps": 30, "eval_every": 15, "threads": 1}})").arg(text).toUtf8());
    const QString dir = cstest::temp_dir() + "/cli_run";
    QString out, err;
    QCOMPARE(cstest::run_cli({"train", cfg, "--run-dir", dir, "--json"}, &out, &err), 0);
    const QStringList lines = out.trimmed().split('\n');
    auto last = QJsonDocument::fromJson(lines.last().toUtf8()).object();
    QCOMPARE(last["status"].toString(), QString("finished"));
    QCOMPARE(last["run_dir"].toString(), dir);
    for (auto f : {"config.json", "vocab", "metrics.jsonl", "summary.json", "checkpoints/last.pt", "checkpoints/best.pt"})
      QVERIFY2(QFile::exists(dir + "/" + f), f);
    // the same directory again is refused
    QCOMPARE(cstest::run_cli({"train", cfg, "--run-dir", dir}, &out, &err), 2);
    QVERIFY(err.contains("already exists"));
    QCOMPARE(cstest::run_cli({"eval", dir, "--split", "valid", "--json"}, &out, &err), 0);
    auto ev = QJsonDocument::fromJson(out.toUtf8()).object();
    QVERIFY(ev["bpc"].toDouble() > 0);
    QCOMPARE(cstest::run_cli({"eval", dir, "--split", "nonsense"}, &out, &err), 2);
    QCOMPARE(cstest::run_cli({"eval", cstest::temp_dir() + "/no_such_run"}, &out, &err), 2);
    QVERIFY(err.contains("not a run directory"));
    QCOMPARE(cstest::run_cli({"params", cfg, "--json"}, &out, &err), 0);
    auto pj = QJsonDocument::fromJson(out.toUtf8()).object();
    // LSTM: 4H x (I + H) weights + two 4H biases; embedding V x 8; head 16V + V
    const auto mods = pj["modules"].toObject();
    QCOMPARE(mods["stack.layer0"].toInt(), 4 * 16 * (8 + 16) + 8 * 16);
    const int V = mods["embed"].toInt() / 8;
    QVERIFY(V > 10);
    QCOMPARE(mods["out"].toInt(), 16 * V + V);
    int sum = 0;
    for (auto it = mods.begin(); it != mods.end(); ++it) sum += it->toInt();
    QCOMPARE(pj["total"].toInt(), sum);
  }

  void benchJsonHasTheYardstickFields() {
    QString out, err;
    QCOMPARE(cstest::run_cli({"bench", "--cell", "gru", "--batch", "4", "--seq", "10", "--embed", "16", "--hidden", "16",
                              "--iters", "3", "--threads", "1", "--json"}, &out, &err), 0);
    auto j = QJsonDocument::fromJson(out.toUtf8()).object();
    for (auto k : {"cell", "batch", "seq", "throughput", "gflops", "gemm_gflops", "efficiency", "baseline", "time_ratio", "flop_ratio"})
      QVERIFY2(j.contains(k), k);
    QVERIFY(j["throughput"].toDouble() > 0);
    QCOMPARE(j["baseline"].toString(), QString("torch_gru"));
    QCOMPARE(cstest::run_cli({"bench", "--cell", "nope"}, &out, &err), 2);
    QVERIFY(err.contains("model.cell"));
  }
};

CS_TEST(TestCli, "cli")
#include "test_cli.moc"
