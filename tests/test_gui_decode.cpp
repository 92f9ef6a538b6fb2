// The window's Decode tab (seq2seq outputs per checkpoint), offscreen: the CSV/TSV text of the
// tables, a run that is not seq2seq failing with one clear message while the view stays usable,
// and a tiny seq2seq run trained here through the CLI: two checkpoints decoded on the worker
// thread (progress to 100%, one table each, the same outputs as `cellscope-cli decode`, the
// metrics table with the lead baseline), export and copy of the rows, and Cancel leaving the
// view usable for the next decode.
#include <QComboBox>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QHeaderView>
#include <QImage>
#include <QTableWidget>
#include <QtTest/QtTest>

#include <random>

#include "corpus_fixture.h"
#include "decode_bridge.h"
#include "decode_panel.h"
#include "gui_fit.h"
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
  QString m_ws, m_run, m_data;
  QStringList m_validSrc, m_validTgt;

  void writeSplit(const QString& split, int n, std::mt19937_64& rng) {
    QFile src(m_data + "/" + split + ".de"), tgt(m_data + "/" + split + ".en");
    QVERIFY(src.open(QIODevice::WriteOnly) && tgt.open(QIODevice::WriteOnly));
    for (int i = 0; i < n; ++i) {
      const int len = 3 + int(rng() % 4);
      QStringList w;
      for (int j = 0; j < len; ++j) w << QString(QChar('a' + int(rng() % 8)));
      QStringList r = w;
      std::reverse(r.begin(), r.end());
      src.write((w.join(' ') + "\n").toUtf8());
      tgt.write((r.join(' ') + "\n").toUtf8());
      if (split == "valid") {
        m_validSrc << w.join(' ');
        m_validTgt << r.join(' ');
      }
    }
  }

  gui::WindowOptions options() const {
    gui::WindowOptions o;
    o.workspace = m_ws;
    o.settingsFile = cstest::temp_dir() + "/decode-settings.ini";
    o.restoreLastConfig = false;
    return o;
  }

  // decodesTwoCheckpointsIntoTheirTables' checks once last and step_20 are decoded (beam 3, six
  // examples): step_20's table against `cellscope-cli decode`, the metrics table, export and copy.
  void checkSameAsTheCli(gui::DecodePanel* p) const {
    // the GUI decodes what the CLI decodes
    QString out, err;
    QCOMPARE(cstest::run_cli({"decode", m_run, "--checkpoint", "step_20", "--beam", "3", "--max", "6", "--json"}, &out,
                             &err),
             0);
    const QJsonObject cli = QJsonDocument::fromJson(out.toUtf8()).object();
    const QJsonArray samples = cli.value("samples").toArray();
    QCOMPARE(samples.size(), 6);
    for (int i = 0; i < 6; ++i) {
      QCOMPARE(p->tables()[1].rows[i].hypothesis, samples[i].toObject().value("hypothesis").toString());
      QCOMPARE(p->tables()[1].rows[i].score, samples[i].toObject().value("score").toDouble());
    }
    QCOMPARE(p->tables()[1].metric("bleu", -1), cli.value("metrics").toObject().value("bleu").toDouble());
  }
  static void checkMetricsTable(gui::MainWindow& w, gui::DecodePanel* p) {
    // the metrics table: the two checkpoints, then the lead baseline, its values as the tables'
    QTableWidget* m = p->metricsTable();
    QCOMPARE(m->rowCount(), 3);
    QCOMPARE(m->horizontalHeaderItem(3)->text(), QString("BLEU"));
    QCOMPARE(m->item(0, 3)->text(), QString::number(p->tables()[0].metric("bleu", -1), 'f', 2));
    QCOMPARE(m->item(1, 3)->text(), QString::number(p->tables()[1].metric("bleu", -1), 'f', 2));
    QVERIFY(m->item(2, 0)->text().startsWith("lead baseline"));
    QCOMPARE(m->item(2, 3)->text(), QString::number(p->tables()[0].metric("lead_bleu", -1), 'f', 2));
    for (int c = 0; c < m->columnCount(); ++c)
      QVERIFY2(m->horizontalHeaderItem(c)->text() != "examples", "examples is no metric");
    // bold = the better checkpoint of a column; a column where the checkpoints tie has none
    for (int c = 3; c < m->columnCount(); ++c) {
      const double a = m->item(0, c)->text().toDouble(), b = m->item(1, c)->text().toDouble();
      QCOMPARE(m->item(0, c)->font().bold(), a > b);
      QCOMPARE(m->item(1, c)->font().bold(), b > a);
      QVERIFY(!m->item(2, c)->font().bold());  // never the baseline
    }
    // every row, the baseline included, fits without scrolling
    QVERIFY(m->minimumHeight() >=
            3 * m->verticalHeader()->defaultSectionSize() + m->horizontalHeader()->sizeHint().height());
    // shown in a wide window, no column takes the spare width: the last (a ROUGE column) is as
    // wide as its header and numbers, like the others (before: it stretched over the free space)
    w.resize(1600, 1000);
    w.show();
    w.showPanel(p);
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    {
      QHeaderView* h = m->horizontalHeader();
      const int last = h->count() - 1;
      QTRY_VERIFY(h->sectionSize(last) > 0);
      int widest = 0;  // the other metric columns (BLEU, ROUGE-1, ...): sized to their contents
      for (int c = 3; c < last; ++c) widest = std::max(widest, h->sectionSize(c));
      QVERIFY(widest > 0);
      QVERIFY2(h->sectionSize(last) <= widest * 3 / 2, qPrintable(QString("%1: %2 px, the widest other metric %3 px")
                                                                      .arg(m->horizontalHeaderItem(last)->text())
                                                                      .arg(h->sectionSize(last))
                                                                      .arg(widest)));
    }
  }
  void checkExportAndCopy(gui::DecodePanel* p) const {
    // export: the current table, then all of them; CSV and TSV
    const QString csv = cstest::temp_dir() + "/decode-all.csv";
    QString error;
    QVERIFY2(p->exportTables(csv, gui::TableFormat::Csv, true, &error), qPrintable(error));
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 1 + 12);
    QCOMPARE(lines[1], QString("last,40,valid,1,%1,%2,%3,%4")
                           .arg(m_validSrc[0], m_validTgt[0], p->tables()[0].rows[0].hypothesis,
                                QString::number(p->tables()[0].rows[0].score, 'g', 8)));
    QVERIFY(lines[12].startsWith("step_20,20,valid,6,"));
    const QString tsv = cstest::temp_dir() + "/decode-one.tsv";
    p->setCurrentTable(1);
    QVERIFY2(p->exportTables(tsv, gui::TableFormat::Tsv, false, &error), qPrintable(error));
    QFile g(tsv);
    QVERIFY(g.open(QIODevice::ReadOnly));
    const QStringList tl = QString::fromUtf8(g.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(tl.size(), 1 + 6);
    for (const QString& l : tl) QCOMPARE(l.count('\t'), 7);
    QVERIFY(tl[3].startsWith("step_20\t20\tvalid\t3\t" + m_validSrc[2] + "\t"));
    // copy: the selected rows, else all
    p->samplesTable()->clearSelection();
    QCOMPARE(p->selectedRowsText().count('\n'), 1 + 6);
    p->samplesTable()->selectRow(4);
    QCOMPARE(p->selectedRowsText().split('\n', Qt::SkipEmptyParts).size(), 2);
    QVERIFY(p->selectedRowsText().contains("\t5\t" + m_validSrc[4] + "\t"));
  }

 private Q_SLOTS:
  void initTestCase() {
    m_ws = cstest::temp_dir() + "/decode-ws";
    m_run = m_ws + "/tiny-s2s";
    m_data = cstest::temp_dir() + "/reverse-pairs";
    QVERIFY(QDir().mkpath(m_data));
    std::mt19937_64 rng(5);
    writeSplit("train", 300, rng);
    writeSplit("valid", 40, rng);
    writeSplit("test", 20, rng);
    const QString cfg =
        writeJson("decode-s2s.json", QJsonObject{{"task", QJsonObject{{"name", "seq2seq"}}},
                                                 {"dataset", QJsonObject{{"path", m_data},
                                                                         {"format", "parallel"},
                                                                         {"subword", "bpe"},
                                                                         {"source_vocab_size", 20},
                                                                         {"target_vocab_size", 20},
                                                                         {"max_source_len", 16},
                                                                         {"max_target_len", 16}}},
                                                 {"model", QJsonObject{{"cell", "gru"}, {"embed", 16}, {"hidden", 32}}},
                                                 {"training", QJsonObject{{"steps", 40},
                                                                          {"batch", 16},
                                                                          {"lr", 0.01},
                                                                          {"eval_every", 20},
                                                                          {"checkpoint_every", 20},
                                                                          {"eval_test", false},
                                                                          {"eval_decode", 10},
                                                                          {"threads", 1},
                                                                          {"seed", 3}}}});
    QString out, err;
    QCOMPARE(cstest::run_cli({"train", cfg, "--run-dir", m_run, "--quiet"}, &out, &err, 300000), 0);
  }

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

  // #38: an empty hypothesis (the model ended at once) is drawn as a grey italic marker, not
  // a blank cell; copy and export keep the empty text.
  void emptyHypothesisHasAMarker() {
    gui::MainWindow w(options());
    w.resize(1400, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    gui::DecodePanel* p = w.decodePanel();
    QVERIFY(p);
    QVERIFY(w.showPanel(QString("decode")));
    gui::DecodeTable t;
    t.runDir = m_run;
    t.checkpoint = "last";
    t.step = 40;
    t.split = "valid";
    t.rows = {{1, "a b c", "c b a", "", -0.1}, {2, "d e", "e d", "e d", -0.2}, {3, "f", "f", "  ", -0.3}};
    QSignalSpy added(p, &gui::DecodePanel::tableAdded);
    Q_EMIT p->worker()->tableReady(t);  // as the worker thread delivers a decoded checkpoint
    QTRY_COMPARE(added.size(), 1);
    QTableWidget* s = p->samplesTable();
    QCOMPARE(s->rowCount(), 3);
    for (int r : {0, 2}) {
      QTableWidgetItem* h = s->item(r, 3);
      QVERIFY(h);
      QCOMPARE(h->text(), QString("(empty hypothesis)"));
      QVERIFY(h->font().italic());
      QVERIFY(h->toolTip().contains("nothing"));
      // Drawn: the cell shows text (not a blank cell).
      s->scrollToItem(h);
      const QRect cell = s->visualItemRect(h);
      const QImage img = s->viewport()->grab(cell).toImage();
      int ink = 0;
      for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x) ink += qGray(img.pixel(x, y)) < 200 ? 1 : 0;
      QVERIFY2(ink > 10, qPrintable(QString::number(ink)));
    }
    QCOMPARE(s->item(1, 3)->text(), QString("e d"));
    QVERIFY(!s->item(1, 3)->font().italic());
    // The text that leaves the window is the data's.
    s->selectRow(0);
    QVERIFY2(p->selectedRowsText().contains("\tc b a\t\t"), qPrintable(p->selectedRowsText()));
  }

  // At 1024x700 the tab needs no horizontal scroll bar: the scorers' signature line (wider than
  // the window on one line) wraps, whole, inside the visible part.
  void fitsA1024x700Window() {
    gui::MainWindow w(options());
    auto* sig = w.decodePanel()->findChild<QLabel*>("metricSignatures");
    QVERIFY(sig);
    const QString why = cstest::tabFitsWindow(w, "decode", "Decode", {sig});
    QVERIFY2(why.isEmpty(), qPrintable(why));
    QVERIFY(sig->text().contains("tok:rouge-score"));
  }

  void notASeq2seqRunFailsClearly() {
    // A tiny char-LM run: not offered by the tab, and decoding it directly fails with one message.
    const QString charWs = cstest::temp_dir() + "/decode-ws-char";  // no seq2seq run there
    const QString run = charWs + "/tiny-char";
    const QString text = cstest::write_text_fixture("decode-char.txt", 8000);
    const QString cfg = writeJson(
        "decode-char.json",
        QJsonObject{
            {"task", QJsonObject{{"name", "char_lm"}}},
            {"dataset", QJsonObject{{"path", text}}},
            {"model", QJsonObject{{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
            {"training",
             QJsonObject{
                 {"steps", 4}, {"batch", 4}, {"bptt", 16}, {"eval_every", 4}, {"eval_test", false}, {"threads", 1}}}});
    QString out, err;
    QCOMPARE(cstest::run_cli({"train", cfg, "--run-dir", run, "--quiet"}, &out, &err), 0);
    gui::WindowOptions o = options();
    o.workspace = charWs;
    gui::MainWindow w(o);
    gui::DecodePanel* p = w.decodePanel();
    QVERIFY(p);
    // The tab says what its scores are: sacreBLEU's signature and rouge-score's settings.
    auto* sig = p->findChild<QLabel*>("metricSignatures");
    QVERIFY(sig);
    QVERIFY2(sig->text().contains("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:cellscope-port-"),
             qPrintable(sig->text()));
    QVERIFY2(sig->text().contains("tok:rouge-score"), qPrintable(sig->text()));
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

  void decodesTwoCheckpointsIntoTheirTables() {
    gui::MainWindow w(options());
    gui::DecodePanel* p = w.decodePanel();
    QTRY_COMPARE(p->runDirs(), QStringList{QFileInfo(m_run).absoluteFilePath()});
    QVERIFY(p->selectRun(m_run));
    for (const char* c : {"best", "last", "step_20", "step_40"})
      QVERIFY2(p->availableCheckpoints().contains(c), qPrintable(c));
    QCOMPARE(p->checkedCheckpoints(), QStringList{"best"});  // the default
    gui::DecodeJob j = p->job();
    QCOMPARE(j.beam, 10);
    QCOMPARE(j.split, QString("valid"));
    j.checkpoints = {"step_20", "last"};
    j.beam = 3;
    j.maxExamples = 6;
    p->setJob(j);
    QCOMPARE(p->checkedCheckpoints(), (QStringList{"last", "step_20"}));  // in the list's order
    QVector<int> values;
    connect(p->progressBar(), &QProgressBar::valueChanged, this, [&values](int v) { values << v; });
    QSignalSpy done(p, &gui::DecodePanel::finished);
    p->decode();
    QVERIFY(p->isBusy());
    QVERIFY(!p->decodeButton()->isEnabled());
    QVERIFY(p->cancelButton()->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(done.size(), 1, 180000);
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(p->statusText()));
    QVERIFY(!p->isBusy());
    QVERIFY(p->decodeButton()->isEnabled());
    // progress: increasing, up to the maximum
    QVERIFY(!values.isEmpty());
    QCOMPARE(values.last(), p->progressBar()->maximum());
    QVERIFY(std::is_sorted(values.begin(), values.end()));
    QVERIFY2(p->progressText().startsWith("done"), qPrintable(p->progressText()));
    // one table per checkpoint, each with the first six valid pairs
    QCOMPARE(p->tables().size(), 2);
    QCOMPARE(p->tables()[0].checkpoint, QString("last"));
    QCOMPARE(p->tables()[1].checkpoint, QString("step_20"));
    QCOMPARE(p->tables()[0].step, qint64(40));
    QCOMPARE(p->tables()[1].step, qint64(20));
    for (const gui::DecodeTable& t : p->tables()) {
      QCOMPARE(t.rows.size(), 6);
      for (int i = 0; i < 6; ++i) {
        QCOMPARE(t.rows[i].source, m_validSrc[i]);
        QCOMPARE(t.rows[i].reference, m_validTgt[i]);
      }
      for (const char* k : {"bleu", "rouge1", "rouge2", "rougeL", "lead_bleu", "lead_rougeL"})
        QVERIFY2(t.hasMetric(k), k);
    }
    checkSameAsTheCli(p);
    if (QTest::currentTestFailed()) return;
    // the selector shows each checkpoint's outputs
    QCOMPARE(p->tableSelector()->count(), 2);
    for (int t = 0; t < 2; ++t) {
      p->setCurrentTable(t);
      QCOMPARE(p->currentTable(), t);
      QCOMPARE(p->samplesTable()->rowCount(), 6);
      for (int i = 0; i < 6; ++i) {
        QCOMPARE(p->samplesTable()->item(i, 1)->text(), p->tables()[t].rows[i].source);
        QCOMPARE(p->samplesTable()->item(i, 3)->text(), p->tables()[t].rows[i].hypothesis);
      }
    }
    checkMetricsTable(w, p);
    if (QTest::currentTestFailed()) return;
    // clicking a checkpoint's row shows its table
    p->metricsTable()->setCurrentCell(0, 0);
    QCOMPARE(p->currentTable(), 0);

    checkExportAndCopy(p);
  }

  void cancelLeavesTheViewUsable() {
    gui::MainWindow w(options());
    gui::DecodePanel* p = w.decodePanel();
    QTRY_VERIFY(!p->runDirs().isEmpty());
    QVERIFY(p->selectRun(m_run));
    gui::DecodeJob j = p->job();
    j.checkpoints = {"best", "last", "step_20", "step_40"};
    j.maxExamples = 0;  // all 40 pairs, beam 10, four checkpoints: far longer than the cancel takes
    p->setJob(j);
    QSignalSpy done(p, &gui::DecodePanel::finished);
    p->decode();
    QVERIFY(p->isBusy());
    p->cancelButton()->click();
    QTRY_COMPARE_WITH_TIMEOUT(done.size(), 1, 60000);
    QCOMPARE(done.at(0).at(0).toBool(), false);
    QVERIFY2(p->statusText().startsWith("Cancelled"), qPrintable(p->statusText()));
    QVERIFY(p->progressBar()->value() < p->progressBar()->maximum());
    QVERIFY(p->tables().isEmpty());
    QVERIFY(!p->isBusy());
    QVERIFY(p->decodeButton()->isEnabled());
    QVERIFY(!p->cancelButton()->isEnabled());
    // the next decode runs as usual
    j.checkpoints = {"best"};
    j.maxExamples = 2;
    j.beam = 1;
    p->setJob(j);
    p->decode();
    QTRY_COMPARE_WITH_TIMEOUT(done.size(), 2, 60000);
    QVERIFY2(done.at(1).at(0).toBool(), qPrintable(p->statusText()));
    QCOMPARE(p->tables().size(), 1);
    QCOMPARE(p->tables()[0].rows.size(), 2);
    QCOMPARE(p->progressBar()->value(), p->progressBar()->maximum());
  }
};

CS_TEST(GuiDecodeTest, "gui_decode")
#include "test_gui_decode.moc"
