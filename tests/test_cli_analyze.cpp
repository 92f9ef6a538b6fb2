// `cellscope-cli analyze KIND ... --out FILE` for every analysis kind: CSV (rows checked)
// and one image format each (PNG magic, PDF header, SVG root element), on tiny runs
// trained through the CLI; and the clear errors.
#include <QDir>
#include <QFile>

#include <fstream>

#include "analysis/kinds.h"
#include "corpus_fixture.h"
#include "harness.h"

// In a namespace of its own, so that the using-directive stays in this file (tests/check_unity.py).
namespace cli_analyze_test {
using namespace cs;

namespace {

void write(const QString& path, const std::string& data) {
  QDir().mkpath(QFileInfo(path).absolutePath());
  std::ofstream f(path.toStdString(), std::ios::binary);
  f << data;
}

QByteArray read_all(const QString& p) {
  QFile f(p);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return f.readAll();
}

QString train_run(const QString& name, const json& cfg) {
  const QString cfgp = cstest::temp_dir() + "/cli_an/" + name + ".json";
  write(cfgp, cfg.dump());
  const QString run = cstest::temp_dir() + "/cli_an/" + name;
  QString out, err;
  const int rc = cstest::run_cli({"train", cfgp, "--run-dir", run, "--quiet"}, &out, &err);
  if (rc != 0) qWarning("train %s failed: %s", qPrintable(name), qPrintable(err));
  return rc == 0 ? run : QString();
}

json char_run_cfg(const QString& text, json model) {
  model["embed"] = 6;
  return {{"task", "char_lm"},
          {"dataset", {{"path", text.toStdString()}, {"valid_fraction", 0.2}, {"test_fraction", 0.2}}},
          {"model", model},
          {"training",
           {{"batch", 2},
            {"bptt", 8},
            {"steps", 4},
            {"eval_every", 2},
            {"checkpoint_every", 2},
            {"keep_checkpoints", 5},
            {"log_every", 1},
            {"threads", 1}}}};
}

// Checks one image file by its format's signature.
bool image_ok(const QString& path, const QString& ext, QString* why) {
  const QByteArray b = read_all(path);
  if (b.size() < 100) {
    *why = path + ": missing or tiny (" + QString::number(b.size()) + " bytes)";
    return false;
  }
  if (ext == "png" && !b.startsWith("\x89PNG\r\n\x1a\n")) *why = "not a PNG";
  else if (ext == "pdf" && !b.startsWith("%PDF-")) *why = "not a PDF";
  else if (ext == "svg" && !(b.contains("<svg") && b.contains("</svg>"))) *why = "no <svg> root element";
  return why->isEmpty();
}

}  // namespace

class TestCliAnalyze : public QObject {
  Q_OBJECT
  QString mzu_, mc_, cls_;

 private Q_SLOTS:
  void initTestCase() {
    auto text = cstest::write_text_fixture("cli_an.txt", 4000);
    mzu_ = train_run(
        "mzu", char_run_cfg(text, {{"cell", "cap_mzu"}, {"hidden", 8}, {"zones", 2}, {"filter", 8}, {"depth", 0}}));
    mc_ = train_run("mc", char_run_cfg(text, {{"cell", "mcrnn"}, {"block", 3}, {"base", "gru"}, {"hidden", 8}}));
    std::string s;
    for (int i = 0; i < 60; ++i)
      s += json{{"text", i % 2 ? "a good film" : "a bad and very long film that goes on"},
                {"label", i % 2 ? "pos" : "neg"}}
               .dump() +
           "\n";
    const QString data = cstest::temp_dir() + "/cli_an/sent.jsonl";
    write(data, s);
    cls_ = train_run("cls",
                     {{"task", "classify"},
                      {"dataset", {{"path", data.toStdString()}, {"valid_fraction", 0.25}, {"test_fraction", 0.25}}},
                      {"model", {{"cell", "cru_shallow"}, {"embed", 8}, {"hidden", 6}, {"fc", 8}}},
                      {"training", {{"batch", 4}, {"steps", 4}, {"eval_every", 2}, {"log_every", 1}, {"threads", 1}}}});
    QVERIFY(!mzu_.isEmpty() && !mc_.isEmpty() && !cls_.isEmpty());
  }

  void everyKindCsvAndImage_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("run");  // "mzu", "mc", "cls", "mzu2" (two runs)
    QTest::addColumn<QStringList>("extra");
    QTest::addColumn<QString>("ext");
    QTest::addColumn<QString>("header");  // start of the CSV header
    QTest::addColumn<int>("rows");        // CSV data rows (-1: at least one)
    QTest::newRow("relevance") << "relevance"
                               << "mzu2" << QStringList{"--text", "the whale", "--last", "3"} << "png"
                               << "run,row," << 6;
    QTest::newRow("zone_relevance") << "zone_relevance"
                                    << "mzu" << QStringList{"--text", "the whale", "--char", "5"} << "svg"
                                    << "row," << 2;
    QTest::newRow("composition") << "composition"
                                 << "mzu" << QStringList{"--text", "the whale", "--char", "2"} << "pdf"
                                 << "panel,m_function" << 2 * 3 * 2 * 2;
    QTest::newRow("channel_attention") << "channel_attention"
                                       << "mc" << QStringList{"--text", "the old man"} << "png"
                                       << "channel,token_index" << 2 * 11;
    QTest::newRow("length") << "length"
                            << "mzu" << QStringList{"--split", "valid", "--buckets", "0,20,40,120"} << "svg"
                            << "run,bucket" << 3;
    QTest::newRow("gate_histogram") << "gate_histogram"
                                    << "mzu" << QStringList{"--text", "the whale", "--bins", "10"} << "pdf"
                                    << "series," << 10;
    QTest::newRow("gate_saturation") << "gate_saturation"
                                     << "mzu" << QStringList{"--text", "the whale"} << "png"
                                     << "series,step" << 2 * 2;
    QTest::newRow("dzone") << "dzone"
                           << "mzu" << QStringList{"--text", "the whale"} << "svg"
                           << "series,step" << 2 * 2;
    QTest::newRow("metric_time") << "metric_time"
                                 << "mzu2" << QStringList{} << "pdf"
                                 << "series," << -1;
    QTest::newRow("prefix_table") << "prefix_table"
                                  << "cls" << QStringList{"--text", "a good film"} << "png"
                                  << "prefix,words" << 3;
  }

  void everyKindCsvAndImage() {
    QFETCH(QString, kind);
    QFETCH(QString, run);
    QFETCH(QStringList, extra);
    QFETCH(QString, ext);
    QFETCH(QString, header);
    QFETCH(int, rows);
    QStringList runs;
    if (run == "mzu2") runs << "--run" << mzu_ << "--run" << mzu_;
    else runs << "--run" << (run == "mzu" ? mzu_ : run == "mc" ? mc_ : cls_);
    const QString base = cstest::temp_dir() + "/cli_an/out_" + kind;
    QString out, err;
    // one computation, three files: CSV, the image and (a few kinds) JSON
    const bool with_json = kind == "relevance" || kind == "composition" || kind == "length" || kind == "prefix_table";
    QStringList outs{"--out", base + ".csv", "--out", base + "." + ext};
    if (with_json) outs << "--out" << base + ".json";
    QCOMPARE(cstest::run_cli(QStringList{"analyze", kind} + runs + extra + outs, &out, &err), 0);
    const QStringList lines = QString::fromUtf8(read_all(base + ".csv")).trimmed().split('\n');
    QVERIFY2(lines.value(0).startsWith(header), qPrintable(lines.value(0)));
    if (rows >= 0) QCOMPARE(lines.size() - 1, rows);
    else QVERIFY(lines.size() >= 2);
    QString why;
    QVERIFY2(image_ok(base + "." + ext, ext, &why), qPrintable(why));
    // no temporary file left beside it, and nothing on stderr (Qt's offscreen notices filtered)
    for (auto& f : QDir(QFileInfo(base).absolutePath()).entryList(QDir::Files | QDir::Hidden))
      QVERIFY2(!f.startsWith(".tmp."), qPrintable(f));
    QVERIFY2(err.trimmed().isEmpty(), qPrintable(err));
    if (with_json) {
      const auto j = json::parse(read_all(base + ".json").toStdString());
      QCOMPARE(QString::fromStdString(j.value("kind", "")), kind);
    }
  }

  void checkpointsAndErrors() {
    QString out, err;
    const QString f = cstest::temp_dir() + "/cli_an/ck.csv";
    QCOMPARE(cstest::run_cli(
                 {"analyze", "relevance", "--run", mzu_, "--checkpoint", "step_2", "--text", "the sea", "--out", f},
                 &out, &err),
             0);
    QCOMPARE(QString::fromUtf8(read_all(f)).trimmed().split('\n').size(), 1 + 7);  // header + the last 10 (capped at 7)
    QCOMPARE(cstest::run_cli({"analyze", "relevance", "--run", mzu_, "--checkpoint", "step_3", "--out", f}, &out, &err),
             2);
    QVERIFY2(err.contains("no checkpoint"), qPrintable(err));
    QCOMPARE(cstest::run_cli({"analyze", "channel_attention", "--run", mzu_, "--out", f}, &out, &err), 2);
    QVERIFY2(err.contains("not an MC-RNN"), qPrintable(err));
    QCOMPARE(cstest::run_cli({"analyze", "nope", "--run", mzu_}, &out, &err), 2);
    QVERIFY2(err.contains("relevance") && err.contains("prefix_table"), qPrintable(err));
    QCOMPARE(cstest::run_cli({"analyze", "relevance", "--run", mzu_, "--out", cstest::temp_dir() + "/cli_an/x.gif"},
                             &out, &err),
             2);
    QVERIFY(err.contains(".png"));
    QCOMPARE(cstest::run_cli({"analyze", "relevance", "--run", mzu_, "--color-map", "nope", "--out",
                              cstest::temp_dir() + "/cli_an/x.png"},
                             &out, &err),
             2);
    QVERIFY(err.contains("colour map"));
    QVERIFY(!QFile::exists(cstest::temp_dir() + "/cli_an/x.png"));
    // --help lists every kind
    QCOMPARE(cstest::run_cli({"analyze", "--help"}, &out, &err), 0);
    for (auto& k : analysis_kinds()) QVERIFY2(out.contains(QString::fromStdString(k.name)), k.name.c_str());
  }
};

CS_TEST(TestCliAnalyze, "cli_analyze")
}  // namespace cli_analyze_test
#include "test_cli_analyze.moc"
