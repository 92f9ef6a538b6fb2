// The window's Decode tab (seq2seq outputs per checkpoint), offscreen: the CSV/TSV text of the
// tables, a run that is not seq2seq failing with one clear message while the view stays usable.
#include <QComboBox>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QtTest/QtTest>

#include "corpus_fixture.h"
#include "decode_bridge.h"
#include "decode_panel.h"
#include "harness.h"
#include "main_window.h"

namespace {
QString writeJson(const QString& name, const QJsonObject& o) {
  const QString path = cstest::temp_dir() + "/" + name;
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return QString();
  f.write(QJsonDocument(o).toJson());
  return path;
}
}  // namespace

class GuiDecodeTest : public QObject {
  Q_OBJECT
  QString m_ws;

 private Q_SLOTS:
  void initTestCase() { m_ws = cstest::temp_dir() + "/decode-ws"; }

  void tablesAsCsvAndTsv() {
    gui::DecodeTable t;
    t.checkpoint = "best";
    t.step = 120;
    t.split = "valid";
    t.rows = {{1, "free money, now", "say \"hi\"", "money\tnow", -1.25}, {2, "line one\nline two", "ref", "hyp", -0.5}};
    gui::DecodeTable u = t;
    u.checkpoint = "step_60";
    u.step = 60;
    u.rows.resize(1);
    const QString csv = gui::decodeTablesText({t, u}, gui::TableFormat::Csv);
    const QStringList lines = csv.split('\n');
    QCOMPARE(lines.value(0), QString("checkpoint,step,split,index,source,reference,hypothesis,score"));
    QCOMPARE(lines.value(1), QString("best,120,valid,1,\"free money, now\",\"say \"\"hi\"\"\",money\tnow,-1.25"));
    // a line break inside a quoted field (RFC 4180)
    QCOMPARE(lines.value(2), QString("best,120,valid,2,\"line one"));
    QCOMPARE(lines.value(3), QString("line two\",ref,hyp,-0.5"));
    QCOMPARE(lines.value(4), QString("step_60,60,valid,1,\"free money, now\",\"say \"\"hi\"\"\",money\tnow,-1.25"));
    QCOMPARE(csv.count('\n'), 5);
    const QString tsv = gui::decodeTablesText({t}, gui::TableFormat::Tsv);
    const QStringList tl = tsv.split('\n');
    QCOMPARE(tl.size(), 4);  // header, two rows, the empty string after the last newline
    QCOMPARE(tl.value(1), QString("best\t120\tvalid\t1\tfree money, now\tsay \"hi\"\tmoney now\t-1.25"));
    QCOMPARE(tl.value(2), QString("best\t120\tvalid\t2\tline one line two\tref\thyp\t-0.5"));
    for (const QString& l : tl.mid(0, 3)) QCOMPARE(l.count('\t'), 7);
    // written all or nothing; an unwritable path says which file
    QString err;
    QVERIFY(!gui::writeDecodeTables(cstest::temp_dir() + "/no/such/dir/x.csv", {t}, gui::TableFormat::Csv, &err));
    QVERIFY2(err.contains("no/such/dir/x.csv"), qPrintable(err));
  }

  void notASeq2seqRunFailsClearly() {
    // A tiny char-LM run: not offered by the tab, and decoding it directly fails with one message.
    const QString run = m_ws + "/tiny-char";
    const QString text = cstest::write_text_fixture("decode-char.txt", 8000);
    const QString cfg = writeJson("decode-char.json",
                                  QJsonObject{{"task", QJsonObject{{"name", "char_lm"}}},
                                              {"dataset", QJsonObject{{"path", text}}},
                                              {"model", QJsonObject{{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
                                              {"training", QJsonObject{{"steps", 4}, {"batch", 4}, {"bptt", 16},
                                                                       {"eval_every", 4}, {"eval_test", false},
                                                                       {"threads", 1}}}});
    QString out, err;
    QCOMPARE(cstest::run_cli({"train", cfg, "--run-dir", run, "--quiet"}, &out, &err), 0);
    gui::WindowOptions o;
    o.workspace = m_ws;
    o.settingsFile = cstest::temp_dir() + "/decode-settings.ini";
    o.restoreLastConfig = false;
    gui::MainWindow w(o);
    gui::DecodePanel* p = w.decodePanel();
    QVERIFY(p);
    QVERIFY(w.showPanel(QString("decode")));
    QCOMPARE(w.currentPanel(), static_cast<QWidget*>(p));
    QVERIFY(p->runDirs().isEmpty());  // only seq2seq runs are offered
    QVERIFY(!p->decodeButton()->isEnabled());
    p->decode();  // nothing to decode: says so
    QVERIFY2(p->statusText().contains("No seq2seq run"), qPrintable(p->statusText()));
    QVERIFY(!p->isBusy());
    gui::DecodeJob j;
    j.runDir = run;
    j.checkpoints = {"last"};
    QSignalSpy done(p, &gui::DecodePanel::finished);
    Q_EMIT p->requestDecode(j);
    QTRY_COMPARE_WITH_TIMEOUT(done.size(), 1, 60000);
    QCOMPARE(done.at(0).at(0).toBool(), false);
    QVERIFY2(p->statusText().contains("seq2seq") && p->statusText().contains("char_lm"), qPrintable(p->statusText()));
    QVERIFY(p->tables().isEmpty());
    QCOMPARE(p->samplesTable()->rowCount(), 0);
    // View > Decode is bound to Ctrl+6.
    QAction* act = nullptr;
    for (QAction* a : w.findChildren<QAction*>())
      if (a->shortcut() == QKeySequence(QStringLiteral("Ctrl+6"))) act = a;
    QVERIFY(act);
    QVERIFY(act->text().contains("Decode"));
  }
};

CS_TEST(GuiDecodeTest, "gui_decode")
#include "test_gui_decode.moc"
