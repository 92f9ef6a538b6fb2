// Comparisons show like against like, in the window: two runs trained on different amounts
// of one corpus (dataset.max_chars) and for different numbers of steps, compared in the
// Analyses tab (side by side on the same characters, unknown symbols marked, metric by
// length on the same data with each run's counts, both steps in the caption, "Compare
// with" never offering the run itself) and in the Compare tab (legends: labels or the
// options that differ, the same names as the analyses and their exported figures).
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QHeaderView>
#include <QSlider>
#include <QTableView>
#include <QTableWidget>

#include "analysis/run_names.h"
#include "analysis_panel.h"
#include "bar_chart.h"
#include "compare_panel.h"
#include "corpus_fixture.h"
#include "curve_plot.h"
#include "figure_export.h"
#include "figures.h"
#include "harness.h"
#include "heatmap_view.h"
#include "run_table.h"

#include <memory>

class TestGuiCompareLike : public QObject {
  Q_OBJECT

  QString m_ws, m_all, m_part;

  static bool waitComputed(gui::AnalysisPanel& p, QSignalSpy& spy, int timeoutMs = 120000) {
    if (spy.isEmpty() && !spy.wait(timeoutMs)) return false;
    while (p.isBusy()) spy.wait(timeoutMs);
    return spy.last().value(0).toBool();
  }
  QStringList names() const {
    QStringList out;
    for (const std::string& n : cs::comparison_names_of_dirs({m_all.toStdString(), m_part.toStdString()}))
      out << QString::fromStdString(n);
    return out;
  }
  // The panel on run "all" at step 20, compared with run "part" (which stops at step 10).
  void setUpPair(gui::AnalysisPanel& p, const QString& kind) {
    p.resize(1400, 900);
    p.setWorkspace(m_ws);
    QVERIFY(p.selectRun(m_all));
    QVERIFY(p.setKind(kind));
    QVERIFY(p.selectSecondRun(m_part));
    int i20 = -1;
    for (int i = 0; i < p.checkpoints().size(); ++i)
      if (p.checkpoints()[i].id == "step_20") i20 = i;
    QVERIFY(i20 >= 0);
    p.checkpointSlider()->setValue(i20);
  }

 private Q_SLOTS:
  void initTestCase() {
    m_ws = cstest::temp_dir() + "/compare_like_ws";
    QDir().mkpath(m_ws);
    // "Q" and "é" only in the middle of the corpus: run "all" learns them, run "part"
    // (its first 2500 characters) does not.
    const QString corpus = cstest::temp_dir() + "/compare_like.txt";
    QFile f(corpus);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(cstest::fixture_text(3000) + " Q\u00e9 zz. Q\u00e9.\n" +
                                      cstest::fixture_text(5000, 9)));
    f.close();
    const QJsonObject cfg{{"task", QJsonObject{{"name", "char_lm"}}},
                          {"dataset", QJsonObject{{"path", corpus}, {"valid_fraction", 0.1}, {"test_fraction", 0.1}}},
                          {"model", QJsonObject{{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
                          {"training", QJsonObject{{"steps", 20},
                                                   {"batch", 4},
                                                   {"bptt", 16},
                                                   {"lr", 0.01},
                                                   {"eval_every", 10},
                                                   {"checkpoint_every", 10},
                                                   {"eval_batch", 4},
                                                   {"threads", 1},
                                                   {"log_every", 5}}}};
    const QString cfgPath = cstest::temp_dir() + "/compare_like_cfg.json";
    QFile cf(cfgPath);
    QVERIFY(cf.open(QIODevice::WriteOnly));
    cf.write(QJsonDocument(cfg).toJson());
    cf.close();
    m_all = m_ws + "/all";
    m_part = m_ws + "/part";
    QString out, err;
    int rc = cstest::run_cli({"train", cfgPath, "--run-dir", m_all, "--quiet"}, &out, &err);
    QVERIFY2(rc == 0, qPrintable(out + err));
    rc = cstest::run_cli({"train", cfgPath, "--run-dir", m_part, "--set", "dataset.max_chars=2500", "--set",
                          "training.steps=10", "--quiet"},
                         &out, &err);
    QVERIFY2(rc == 0, qPrintable(out + err));
    QVERIFY(QFile::exists(m_all + "/checkpoints/step_20.pt"));
  }

  void sideBySideOnTheSameCharactersAtBothSteps() {
    gui::AnalysisPanel p;
    setUpPair(p, "relevance");
    p.setText(QString());  // the Text box empty
    p.setLastK(4);
    QSignalSpy spy(&p, &gui::AnalysisPanel::computed);
    p.compute();
    QVERIFY2(waitComputed(p, spy), qPrintable(p.lastError()));
    QCOMPARE(p.figure()->panelCount(), 2);
    auto* a = p.figure()->panelAs<csw::HeatmapView>(0);
    auto* b = p.figure()->panelAs<csw::HeatmapView>(1);
    // The same characters on both sides (the first run's text), not each run's own split.
    QCOMPARE(a->columns(), b->columns());
    // (a symbol run "part" never saw would be marked «x» in its panel: compare without the marks)
    auto unmarked = [](QString s) { return s.startsWith(QChar(0xab)) ? s.mid(1, s.size() - 2) : s; };
    for (int c = 0; c < a->columns(); ++c) QCOMPARE(unmarked(b->columnLabel(c)), unmarked(a->columnLabel(c)));
    const QString caption = p.figure()->caption();
    const QStringList n = names();
    QVERIFY2(caption.contains("the start of the valid split of " + n[0]), qPrintable(caption));
    // The second run is at another step: said, with both steps.
    QVERIFY2(caption.contains("different steps"), qPrintable(caption));
    QVERIFY2(caption.contains(n[0] + " at step 20"), qPrintable(caption));
    QVERIFY2(caption.contains(n[1] + " at step 10"), qPrintable(caption));
    QVERIFY2(p.figure()->title().contains("step 20") && p.figure()->title().contains("step 10"),
             qPrintable(p.figure()->title()));
    QVERIFY(!p.lastWarnings().isEmpty());
    QVERIFY2(p.statusText().contains("Warning"), qPrintable(p.statusText()));
    // Legends: the short names, on screen and in the exported figure.
    QVERIFY2(!n[0].contains('=') && !n[1].contains('=') && n[0] != n[1], qPrintable(n.join(" | ")));
    QCOMPARE(a->title(), n[0]);
    QCOMPARE(b->title(), n[1]);
    const QString svg = cstest::temp_dir() + "/compare_like_rel.svg";
    QString err;
    QVERIFY2(p.exportTo(svg, &err), qPrintable(err));
    QFile sf(svg);
    QVERIFY(sf.open(QIODevice::ReadOnly));
    const QString svgText = QString::fromUtf8(sf.readAll());
    QVERIFY2(svgText.contains(n[1].toHtmlEscaped()), qPrintable(n[1]));
  }

  void symbolsARunDoesNotKnowAreMarked() {
    gui::AnalysisPanel p;
    setUpPair(p, "relevance");
    p.setText(QString::fromUtf8("the Q\u00e9 boat"));
    p.setLastK(3);
    QSignalSpy spy(&p, &gui::AnalysisPanel::computed);
    p.compute();
    QVERIFY2(waitComputed(p, spy), qPrintable(p.lastError()));
    auto* a = p.figure()->panelAs<csw::HeatmapView>(0);
    auto* b = p.figure()->panelAs<csw::HeatmapView>(1);
    QCOMPARE(a->columnLabel(5), QString::fromUtf8("\u00e9"));
    QCOMPARE(b->columnLabel(5), QString::fromUtf8("\u00ab\u00e9\u00bb"));
    QVERIFY2(p.figure()->caption().contains(names()[1] + " does not know"), qPrintable(p.figure()->caption()));
    QVERIFY2(p.figure()->caption().contains("the given text"), qPrintable(p.figure()->caption()));
  }

  void metricByLengthOnTheSameData() {
    gui::AnalysisPanel p;
    setUpPair(p, "length");
    p.setSplit("valid");
    QSignalSpy spy(&p, &gui::AnalysisPanel::computed);
    p.compute();
    QVERIFY2(waitComputed(p, spy), qPrintable(p.lastError()));
    const QString caption = p.figure()->caption();
    QVERIFY2(caption.contains("is evaluated on the data of " + names()[0]), qPrintable(caption));
    QVERIFY2(caption.contains("max_chars"), qPrintable(caption));
    auto* bc = p.figure()->panelAs<csw::BarChart>(0);
    QVERIFY(bc);
    QVERIFY2(caption.contains("n is the same for every run"), qPrintable(caption));
  }

  void eachRunsCountsWhenTheyDiffer() {
    // Buckets of runs on different data: every run's n under its bucket.
    cs::AnalysisResult r;
    r.kind = "length";
    cs::BucketSet set;
    for (int run = 0; run < 2; ++run) {
      cs::LengthBuckets b = cs::make_length_buckets({0, 10, 20});
      b.metric = "bpc";
      b.length_unit = "characters";
      b.split = "test";
      b.run = run ? "b" : "a";
      b.name = run ? "GRU h128" : "gcnMZU+DT h256";
      b.buckets[0].sequences = run ? 5 : 3;
      b.buckets[1].sequences = 7;
      b.buckets[0].value = b.buckets[1].value = 2.0;
      set.runs.push_back(b);
    }
    r.data = set;
    std::unique_ptr<csf::Figure> fig(csf::make_figure(r, csf::FigureStyle()));
    auto* bc = fig->panelAs<csw::BarChart>(0);
    QVERIFY(bc);
    QVERIFY2(bc->buckets().value(0).contains("n=3/5"), qPrintable(bc->buckets().join(" | ")));
    QVERIFY2(bc->buckets().value(1).contains("n=7/7"), qPrintable(bc->buckets().join(" | ")));
  }

  void compareWithNeverOffersTheRunItself() {
    gui::AnalysisPanel p;
    p.setWorkspace(m_ws);
    QComboBox* second = nullptr;
    for (QComboBox* c : p.findChildren<QComboBox*>())
      if (c->count() > 0 && c->itemText(0) == "(none)") second = c;
    QVERIFY(second);
    for (const QString& run : {m_all, m_part}) {
      QVERIFY(p.selectRun(run));
      QStringList offered;
      for (int i = 1; i < second->count(); ++i) offered << QFileInfo(second->itemData(i).toString()).absoluteFilePath();
      QVERIFY2(!offered.contains(QFileInfo(run).absoluteFilePath()), qPrintable(offered.join(", ")));
      QCOMPARE(offered.size(), 1);
    }
    // The figure's export is proposed in the analysed run's folder, named after the run.
    QVERIFY(p.selectRun(m_part));
    const QFileInfo proposed(p.defaultExportPath(QStringLiteral("png")));
    QCOMPARE(proposed.absolutePath(), QFileInfo(m_part).absoluteFilePath());
    QVERIFY2(proposed.fileName().startsWith(QFileInfo(m_part).fileName() + "_"), qPrintable(proposed.fileName()));
    // A choice that becomes the analysed run is dropped.
    QVERIFY(p.selectRun(m_all));
    QVERIFY(p.selectSecondRun(m_part));
    QVERIFY(p.selectRun(m_part));
    QVERIFY(p.secondRun().isEmpty());
  }

  void compareLegendsAreShortNamesOrLabels() {
    QWidget host;
    gui::FigureExporter exporter(&host);
    gui::ComparePanel c(&exporter);
    c.setWorkspace(m_ws);
    c.runModel()->setChecked(QFileInfo(m_all).absoluteFilePath(), true);
    c.runModel()->setChecked(QFileInfo(m_part).absoluteFilePath(), true);
    c.redraw();
    auto labels = [&] {
      QStringList out;
      for (const QString& id : c.comparePlot()->seriesIds()) out << c.comparePlot()->seriesLabel(id);
      out.sort();
      return out;
    };
    QStringList want = names();
    want.sort();
    QCOMPARE(labels(), want);
    for (const QString& l : labels()) QVERIFY2(!l.contains('=') && !l.contains("..."), qPrintable(l));
    // The default series is the validation metric: sparse evaluation points (markers, never
    // smoothed), as in the Training tab.
    QVERIFY(!c.comparePlot()->seriesIds().isEmpty());
    for (const QString& id : c.comparePlot()->seriesIds()) QVERIFY2(c.comparePlot()->seriesSparse(id), qPrintable(id));
    // The config diff of the two runs keeps both value columns in view in a narrow panel.
    QTableView* runView = nullptr;
    QTableWidget* diff = nullptr;
    for (QTableView* v : c.findChildren<QTableView*>()) {
      if (auto* w = qobject_cast<QTableWidget*>(v)) diff = w;
      else if (v->model() && v->model()->rowCount() == 2) runView = v;
    }
    QVERIFY(runView && diff);
    c.resize(1024, 700);
    c.show();
    runView->selectAll();
    QTRY_VERIFY(diff->rowCount() > 0);
    QTest::qWait(50);
    auto* header = diff->horizontalHeader();
    for (int col = 1; col <= 2; ++col)
      QVERIFY2(header->sectionViewportPosition(col) + header->sectionSize(col) <= diff->viewport()->width() + 1 &&
                   header->sectionSize(col) >= diff->viewport()->width() / 4,
               qPrintable(QString("column %1 at %2+%3 of %4")
                              .arg(col)
                              .arg(header->sectionViewportPosition(col))
                              .arg(header->sectionSize(col))
                              .arg(diff->viewport()->width())));
    // A label the user set wins.
    QString out, err;
    QCOMPARE(cstest::run_cli({"label", m_part, "small corpus"}, &out, &err), 0);
    c.redraw();
    QVERIFY2(labels().contains("small corpus"), qPrintable(labels().join(" | ")));
    QCOMPARE(cstest::run_cli({"label", m_part, "--clear"}, &out, &err), 0);
  }
};

CS_TEST(TestGuiCompareLike, "gui_compare_like")
#include "test_gui_compare_like.moc"
