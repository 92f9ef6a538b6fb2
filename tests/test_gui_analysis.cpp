// The Analyses tab on a tiny trained run: relevance computed on the worker
// thread, the checkpoint slider recomputes (a different matrix) and moves the
// training curve's marker, a clear message for an analysis that does not fit
// the run, export in the four formats, and the window's hook (tab + Ctrl+3).
#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QSlider>
#include <QStandardItemModel>
#include <QXmlStreamReader>

#include <algorithm>
#include <cmath>

#include "analysis_bridge.h"
#include "analysis_panel.h"
#include "corpus_fixture.h"
#include "curve_plot.h"
#include "figures.h"
#include "harness.h"
#include "heatmap_view.h"
#include "main_window.h"
#include "qcp.h"

class TestGuiAnalysis : public QObject {
  Q_OBJECT

  QString m_ws, m_run, m_runB;

  static QByteArray head(const QString& path, int n) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return QByteArray();
    return f.read(n);
  }

  // Waits for the panel's next computed() and returns its ok flag.
  static bool waitComputed(gui::AnalysisPanel& p, QSignalSpy& spy, int timeoutMs = 60000) {
    if (spy.isEmpty() && !spy.wait(timeoutMs)) return false;
    // The newest outcome counts (a queued request may follow).
    while (p.isBusy()) spy.wait(timeoutMs);
    return spy.last().value(0).toBool();
  }

 private Q_SLOTS:
  void initTestCase() {
    m_ws = cstest::temp_dir() + "/analysis_ws";
    QDir().mkpath(m_ws);
    m_run = m_ws + "/gru-tiny";
    const QString text = cstest::write_text_fixture("analysis_gui.txt", 8000);
    const QJsonObject cfg{{"task", QJsonObject{{"name", "char_lm"}}},
                          {"dataset", QJsonObject{{"path", text}, {"valid_fraction", 0.1}, {"test_fraction", 0.1}}},
                          {"model", QJsonObject{{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
                          {"training", QJsonObject{{"steps", 40},
                                                   {"batch", 4},
                                                   {"bptt", 16},
                                                   {"lr", 0.01},
                                                   {"eval_every", 20},
                                                   {"checkpoint_every", 20},
                                                   {"eval_batch", 4},
                                                   {"eval_test", false},
                                                   {"threads", 1},
                                                   {"log_every", 5}}}};
    const QString cfgPath = m_ws + "/../analysis_cfg.json";
    QFile f(cfgPath);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QJsonDocument(cfg).toJson());
    f.close();
    QString out, err;
    int rc = cstest::run_cli({"train", cfgPath, "--run-dir", m_run}, &out, &err);
    QVERIFY2(rc == 0, qPrintable(out + err));
    m_runB = m_ws + "/gru-tiny-b";
    rc = cstest::run_cli(
        {"train", cfgPath, "--run-dir", m_runB, "--set", "training.seed=2", "--set", "training.steps=20"}, &out, &err);
    QVERIFY2(rc == 0, qPrintable(out + err));
    QVERIFY(QFile::exists(m_run + "/checkpoints/step_20.pt"));
    QVERIFY(QFile::exists(m_run + "/checkpoints/step_40.pt"));
  }

  void relevanceScrubAndExport() {
    gui::AnalysisPanel p;
    p.resize(1400, 900);
    p.setWorkspace(m_ws);
    QVERIFY(p.selectRun(m_run));
    QVERIFY(p.setKind("relevance"));
    QVERIFY(p.helpText().contains("cos"));
    // Checkpoints step_20 and step_40 at least, in step order.
    const auto cks = p.checkpoints();
    QVERIFY2(cks.size() >= 2, qPrintable(QString::number(cks.size())));
    int i20 = -1, i40 = -1;
    for (int i = 0; i < cks.size(); ++i) {
      if (cks[i].id == "step_20") i20 = i;
      if (cks[i].id == "step_40") i40 = i;
    }
    QVERIFY(i20 >= 0 && i40 > i20);
    QCOMPARE(p.checkpointSlider()->maximum(), int(cks.size()) - 1);

    p.setText("the whale and the sea ");
    p.setLastK(6);
    p.checkpointSlider()->setValue(i20);
    QCOMPARE(p.trainingCurve()->markerX(), 20.0);
    QVERIFY(p.trainingCurve()->pointCount(p.trainingCurve()->seriesIds().value(0)) > 0);

    QSignalSpy spy(&p, &gui::AnalysisPanel::computed);
    p.compute();
    QVERIFY(p.isBusy());  // on the worker thread, the GUI is not blocked
    QVERIFY2(waitComputed(p, spy), qPrintable(p.lastError()));
    QVERIFY(p.figure());
    auto* h = p.figure()->panelAs<csw::HeatmapView>(0);
    QVERIFY(h);
    QCOMPARE(h->rows(), 6);
    QCOMPARE(h->columns(), 22);
    QCOMPARE(h->columnLabel(3), QString("_"));  // the space
    QVERIFY(p.figure()->title().contains("step 20") || p.figure()->title().contains("step_20"));
    QVector<double> at20;
    for (int r = 0; r < h->rows(); ++r)
      for (int c = 0; c < h->columns(); ++c) at20 << h->value(r, c);

    // Scrub to step 40: the marker moves at once and the view is recomputed.
    spy.clear();
    p.checkpointSlider()->setValue(i40);
    QCOMPARE(p.trainingCurve()->markerX(), 40.0);
    QVERIFY2(waitComputed(p, spy), qPrintable(p.lastError()));
    h = p.figure()->panelAs<csw::HeatmapView>(0);
    QVERIFY(p.figure()->title().contains("40"));
    double diff = 0;
    int k = 0;
    for (int r = 0; r < h->rows(); ++r)
      for (int c = 0; c < h->columns(); ++c, ++k)
        if (std::isfinite(h->value(r, c)) && std::isfinite(at20[k])) diff += std::abs(h->value(r, c) - at20[k]);
    QVERIFY2(diff > 1e-4, qPrintable(QString::number(diff)));
    // Same NaN pattern (j >= t blank), cosines in [-1, 1].
    for (int r = 0; r < h->rows(); ++r)
      for (int c = 0; c < h->columns(); ++c) {
        const double v = h->value(r, c);
        const int t = 22 - 6 + r;
        if (c >= t) QVERIFY(std::isnan(v));
        else QVERIFY(v >= -1.0 - 1e-9 && v <= 1.0 + 1e-9);
      }

    // Export in the four formats.
    const QString dir = cstest::temp_dir() + "/analysis_export";
    QDir().mkpath(dir);
    QString err;
    QVERIFY2(p.exportTo(dir + "/rel.png", &err), qPrintable(err));
    QCOMPARE(head(dir + "/rel.png", 8), QByteArray("\x89PNG\r\n\x1a\n", 8));
    QVERIFY2(p.exportTo(dir + "/rel.pdf", &err), qPrintable(err));
    QVERIFY(head(dir + "/rel.pdf", 5).startsWith("%PDF"));
    QVERIFY2(p.exportTo(dir + "/rel.svg", &err), qPrintable(err));
    QVERIFY(QString::fromUtf8(head(dir + "/rel.svg", 4000)).contains("<svg"));
    QVERIFY2(p.exportTo(dir + "/rel.csv", &err), qPrintable(err));
    QFile csv(dir + "/rel.csv");
    QVERIFY(csv.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(csv.readAll()).trimmed().split('\n');
    QCOMPARE(lines.size(), 1 + 6);  // header + the last K characters
  }

  // #53 item 3: a 15 x 21 relevance heatmap exported as PNG, PDF, SVG and SVG again (as a user
  // does, the window's events in between) from a window of 1800x1000 kept 2 of the 21 column labels
  // and 8 of the 15 row labels in the SVGs: the tick thinning measured the export's layout against
  // the screen's viewport. Every export now writes every label, the screen keeps its own labels,
  // and the SVG names fonts a browser knows, with the caption inside the viewBox.
  void svgKeepsEveryTickLabelOnScreenSizes() {
    const QString dir = cstest::temp_dir() + "/svg_ticks";
    QDir().mkpath(dir);
    for (const QSize& win : {QSize(1024, 640), QSize(1800, 1000), QSize(700, 500)}) {
      gui::AnalysisPanel p;
      p.resize(win);
      p.show();
      QVERIFY(QTest::qWaitForWindowExposed(&p));
      p.setWorkspace(m_ws);
      QVERIFY(p.selectRun(m_run));
      QVERIFY(p.setKind("relevance"));
      p.setText("the whale and the sea");
      p.setLastK(15);
      QSignalSpy spy(&p, &gui::AnalysisPanel::computed);
      p.compute();
      QVERIFY2(waitComputed(p, spy), qPrintable(p.lastError()));
      QTest::qWait(100);
      auto* h = p.figure()->panelAs<csw::HeatmapView>(0);
      QVERIFY(h);
      QCOMPARE(h->rows(), 15);
      QCOMPARE(h->columns(), 21);
      const int screenCols = h->columnLabelStep(), screenRows = h->rowLabelStep();
      int svgs = 0;
      for (const char* ext : {"png", "pdf", "svg", "png", "svg"}) {
        const QString out = QStringLiteral("%1/rel-%2-%3.%4").arg(dir).arg(win.width()).arg(svgs).arg(ext);
        QString err;
        QVERIFY2(p.exportTo(out, &err), qPrintable(err));
        QTest::qWait(50);  // the window's queued replots, as after a file dialog
        const QString where = QStringLiteral("window %1x%2, %3").arg(win.width()).arg(win.height()).arg(out);
        QVERIFY2(h->columnLabelStep() == screenCols && h->rowLabelStep() == screenRows, qPrintable(where));
        if (QString(ext) != "svg") continue;
        ++svgs;
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QXmlStreamReader xml(&f);
        int labels = 0, inText = 0;
        double height = 0, lowest = 0;
        QStringList families;
        while (!xml.atEnd()) {
          xml.readNext();
          if (!xml.isStartElement() && !xml.isEndElement() && !xml.isCharacters()) continue;
          if (xml.isStartElement() && xml.name() == QLatin1String("svg"))
            height = xml.attributes().value("viewBox").toString().split(' ').value(3).toDouble();
          if (xml.isStartElement() && xml.attributes().hasAttribute("font-family"))
            families << xml.attributes().value("font-family").toString();
          if (xml.isStartElement() && xml.name() == QLatin1String("text")) {
            ++inText;
            lowest = std::max(lowest, xml.attributes().value("y").toDouble());
          } else if (xml.isEndElement() && xml.name() == QLatin1String("text")) {
            --inText;
          } else if (xml.isCharacters() && inText > 0) {
            // The tick labels: one character each ('_' for the space); the colour scale's are numbers.
            const QString t = xml.text().toString().trimmed();
            if (t.size() == 1 && (t[0].isLetter() || t[0] == QLatin1Char('_'))) ++labels;
          }
        }
        QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
        QVERIFY2(labels == 15 + 21, qPrintable(QStringLiteral("%1: %2 tick labels").arg(where).arg(labels)));
        QVERIFY2(height > 0 && lowest < height - 2,
                 qPrintable(QStringLiteral("%1: text at y=%2, viewBox height %3").arg(where).arg(lowest).arg(height)));
        QVERIFY(!families.isEmpty());
        for (const QString& fam : families)
          QVERIFY2(fam.endsWith(QLatin1String("sans-serif")) || fam.endsWith(QLatin1String("serif")) ||
                       fam.endsWith(QLatin1String("monospace")),
                   qPrintable(where + ": font-family=" + fam));
      }
      QCOMPARE(svgs, 2);
    }
  }

  // A run with one validation point (step 100) and checkpoints at steps 50, 100 (the best) and
  // 145 (the last), scrubbed with the keyboard: three stops, "best" one with step 100, and at
  // each the marker is drawn inside the curve pane's x axis, which covers the training range
  // (before: four stops, "step 100 (best)" and "best (step 100)", and an axis of 98..102 fitted
  // to the one point, so the marker at 50 or 145 was outside the pane).
  void markerInViewAtEveryCheckpoint() {
    const QString ws = cstest::temp_dir() + "/analysis_marker_ws";
    const QString run = ws + "/one-eval";
    QDir().mkpath(run + "/checkpoints");
    auto write = [](const QString& path, const QByteArray& data) {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(data);
    };
    const QJsonObject cfg{{"task", QJsonObject{{"name", "char_lm"}}},
                          {"model", QJsonObject{{"cell", "gru"}, {"hidden", 16}}},
                          {"training", QJsonObject{{"steps", 145}, {"eval_every", 100}, {"checkpoint_every", 50}}}};
    write(run + "/config.json", QJsonDocument(cfg).toJson());
    write(run + "/summary.json", R"({"status": "finished", "task": "char_lm", "cell": "gru", "primary_metric": "bpc",
                                     "step": 145, "best_valid": 3.1, "best_step": 100})");
    QByteArray metrics;
    for (int s = 5; s <= 145; s += 5)
      metrics += QByteArray(R"({"step": )") + QByteArray::number(s) +
                 R"(, "loss": 2.5})"
                 "\n";
    metrics += R"({"step": 100, "eval": true, "split": "valid", "bpc": 3.1})"
               "\n";
    write(run + "/metrics.jsonl", metrics);
    for (const char* ck : {"step_50.pt", "step_100.pt", "best.pt", "last.pt"}) write(run + "/checkpoints/" + ck, "x");

    gui::AnalysisPanel p;
    p.resize(1200, 800);
    p.setWorkspace(ws);
    p.show();
    QVERIFY(QTest::qWaitForWindowExposed(&p));
    QVERIFY(p.selectRun(run));
    QSlider* slider = p.checkpointSlider();
    QVERIFY(slider->isEnabled());
    QCOMPARE(slider->value(), 1);  // it opens at the best checkpoint
    QLabel* label = nullptr;
    for (QLabel* l : p.findChildren<QLabel*>())
      if (QRegularExpression(R"(\(\d+ of \d+\))").match(l->text()).hasMatch()) label = l;
    QVERIFY(label);
    csw::CurvePlot* curve = p.trainingCurve();
    slider->setFocus();
    QTest::keyClick(slider, Qt::Key_Home);
    QStringList labels;
    QList<double> markers;
    for (int stop = 0; stop <= slider->maximum(); ++stop) {
      if (stop > 0) QTest::keyClick(slider, Qt::Key_Right);
      QCOMPARE(slider->value(), stop);
      labels << label->text().section("  (", 0, 0);
      QVERIFY2(curve->hasMarker(), qPrintable(labels.last()));
      markers << curve->markerX();
      curve->plot()->replot(QCustomPlot::rpImmediateRefresh);
      const QCPRange x = curve->plot()->xAxis->range();
      // The training range and the marker, inside the axis.
      QVERIFY2(x.lower <= 0 && x.upper >= 145, qPrintable(QString("x %1..%2").arg(x.lower).arg(x.upper)));
      QVERIFY2(
          x.lower < curve->markerX() && curve->markerX() < x.upper,
          qPrintable(
              QString("%1: marker %2, x %3..%4").arg(labels.last()).arg(curve->markerX()).arg(x.lower).arg(x.upper)));
      // Drawn: a red dashed line down the plot area at the marker's pixel.
      const QRect area = curve->plotAreaRect();
      const int px = qRound(curve->markerPixelX());
      QVERIFY2(area.left() < px && px < area.right(),
               qPrintable(QString("pixel %1 of %2..%3").arg(px).arg(area.left()).arg(area.right())));
      const QImage img = curve->plot()->grab().toImage();
      int red = 0;
      for (int y = area.top(); y <= area.bottom(); ++y) {
        bool hit = false;
        for (int dx = -1; dx <= 1; ++dx) {
          const QColor c = img.pixelColor(px + dx, y);
          hit = hit || (c.red() > 150 && c.green() < 110 && c.blue() < 110);
        }
        red += hit;
      }
      QVERIFY2(red > area.height() / 4,
               qPrintable(QString("%1: %2 red pixels of %3").arg(labels.last()).arg(red).arg(area.height())));
    }
    QCOMPARE(labels, (QStringList{"step 50", "step 100 (best)", "last (step 145)"}));
    QCOMPARE(markers, (QList<double>{50, 100, 145}));
  }

  void sideBySideSharesTheScale() {
    gui::AnalysisPanel p;
    p.setWorkspace(m_ws);
    QVERIFY(p.selectRun(m_run));
    QVERIFY(p.setKind("relevance"));
    QVERIFY(p.selectSecondRun(m_runB));
    p.setText("a whale ");
    p.setLastK(3);
    QSignalSpy spy(&p, &gui::AnalysisPanel::computed);
    p.compute();
    QVERIFY2(waitComputed(p, spy), qPrintable(p.lastError()));
    QCOMPARE(p.figure()->panelCount(), 2);
    auto* a = p.figure()->panelAs<csw::HeatmapView>(0);
    auto* b = p.figure()->panelAs<csw::HeatmapView>(1);
    double lo = 1e9, hi = -1e9;
    for (auto* h : {a, b})
      for (int r = 0; r < h->rows(); ++r)
        for (int c = 0; c < h->columns(); ++c)
          if (std::isfinite(h->value(r, c))) lo = std::min(lo, h->value(r, c)), hi = std::max(hi, h->value(r, c));
    QCOMPARE(a->dataLower(), lo);
    QCOMPARE(a->dataUpper(), hi);
    QCOMPARE(b->dataLower(), lo);
    QCOMPARE(b->dataUpper(), hi);
    // Different weights (another seed): different matrices.
    double diff = 0;
    for (int r = 0; r < a->rows(); ++r)
      for (int c = 0; c < a->columns(); ++c)
        if (std::isfinite(a->value(r, c))) diff += std::abs(a->value(r, c) - b->value(r, c));
    QVERIFY(diff > 1e-4);
  }

  void overTrainingWithTwoRunsShowsBoth() {
    // metric_time with a second run at a different checkpoint id: one curve per run
    // (an analysis over the whole history takes no checkpoint).
    gui::AnalysisJob j;
    j.kind = "metric_time";
    j.runs = QStringList{m_run, m_runB};
    j.checkpoints = QStringList{"best", "step_20"};
    j.split = "valid";
    auto o = gui::runAnalysisJob(j);
    QVERIFY2(o.ok, qPrintable(o.error));
    const auto& series = std::get<cs::SeriesSet>(o.result->data).series;
    QCOMPARE(series.size(), size_t(2));
    QVERIFY(!series[0].x.empty() && !series[1].x.empty());
  }

  void wrongAnalysisGivesOneClearMessage() {
    gui::AnalysisPanel p;
    p.setWorkspace(m_ws);
    QVERIFY(p.selectRun(m_run));
    QVERIFY(p.setKind("zone_relevance"));  // needs an MZU cell; this run is a GRU
    p.setText("the whale");
    QSignalSpy spy(&p, &gui::AnalysisPanel::computed);
    p.compute();
    QVERIFY(!waitComputed(p, spy));
    QVERIFY(!p.lastError().isEmpty());
    qInfo() << "message:" << p.lastError();
    QVERIFY2(!p.lastError().contains('\n'), qPrintable(p.lastError()));
    QVERIFY(p.statusText() == p.lastError());
    QVERIFY(!p.figure());
    QString err;
    QVERIFY(!p.exportTo(cstest::temp_dir() + "/nothing.png", &err));
    QVERIFY(err.contains("compute"));

    // Bad bucket edges: a message at once, no job.
    QVERIFY(p.setKind("length"));
    p.setEdges({5});
    spy.clear();
    p.compute();
    QCOMPARE(spy.size(), 1);
    QVERIFY(!spy[0][0].toBool());
    QVERIFY(!p.isBusy());
    QVERIFY2(p.statusText().contains("edges"), qPrintable(p.statusText()));
  }

  // The Analysis combo offers what applies to the run's cell: a satMZU run greys out MC-RNN
  // channel attention (before: offered, then an error), saying why; a GRU run greys out the
  // MZU's zone analyses too; relevance stays.
  void kindsFollowTheCell() {
    const QString sat = m_ws + "/sat-tiny";
    QString out, err;
    const int rc =
        cstest::run_cli({"train", m_ws + "/../analysis_cfg.json", "--run-dir", sat, "--set", "model.cell=sat_mzu",
                         "--set", "model.filter=16", "--set", "training.steps=2", "--quiet"},
                        &out, &err);
    QVERIFY2(rc == 0, qPrintable(out + err));
    gui::AnalysisPanel p;
    p.setWorkspace(m_ws);
    auto* combo = p.findChild<QComboBox*>("analysisKind");
    QVERIFY(combo);
    auto* items = qobject_cast<QStandardItemModel*>(combo->model());
    QVERIFY(items);
    auto item = [&](const QString& kind) { return items->item(combo->findData(kind)); };
    QVERIFY(p.selectRun(sat));
    QVERIFY(!item("channel_attention")->isEnabled());
    QVERIFY2(item("channel_attention")->toolTip().contains("needs a cell among: mcrnn"),
             qPrintable(item("channel_attention")->toolTip()));
    QVERIFY(item("zone_relevance")->isEnabled());
    QVERIFY(item("composition")->isEnabled());
    QVERIFY(item("relevance")->isEnabled());
    QVERIFY(p.selectRun(m_run));  // a GRU
    QVERIFY(!item("zone_relevance")->isEnabled());
    QVERIFY(!item("composition")->isEnabled());
    QVERIFY(!item("channel_attention")->isEnabled());
    QVERIFY(item("relevance")->isEnabled());
    QVERIFY(item("gate_histogram")->isEnabled());
    QVERIFY(QDir(sat).removeRecursively());

    // The Run combo names a labelled run by its label, as the Compare tab does.
    QCOMPARE(cstest::run_cli({"label", m_runB, "seed two"}, &out, &err), 0);
    p.setWorkspace(m_ws);
    auto* runs = p.findChild<QComboBox*>("analysisRun");
    QVERIFY(runs);
    const int i = runs->findData(QFileInfo(m_runB).absoluteFilePath()) >= 0
                      ? runs->findData(QFileInfo(m_runB).absoluteFilePath())
                      : runs->findData(m_runB);
    QVERIFY(i >= 0);
    QVERIFY2(runs->itemText(i).startsWith("seed two  (gru-tiny-b)"), qPrintable(runs->itemText(i)));
    QCOMPARE(cstest::run_cli({"label", m_runB, "--clear"}, &out, &err), 0);
  }

  // "Compare with" offers the other runs of the analysed run's task only (before: every run of
  // the workspace, a classifier as the partner of a language model).
  void partnersAreRunsOfTheSameTask() {
    const QString ws = cstest::temp_dir() + "/analysis_partner_ws";
    auto write = [](const QString& path, const QByteArray& data) {
      QDir().mkpath(QFileInfo(path).absolutePath());
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(data);
    };
    for (const char* name : {"lm-a", "lm-b", "cls-c"}) {
      const bool lm = QString(name).startsWith("lm");
      const QString run = ws + "/" + name;
      const QJsonObject cfg{{"task", QJsonObject{{"name", lm ? "char_lm" : "classify"}}},
                            {"model", QJsonObject{{"cell", "gru"}, {"hidden", 16}}},
                            {"training", QJsonObject{{"steps", 10}}}};
      write(run + "/config.json", QJsonDocument(cfg).toJson());
      const QJsonObject summary{
          {"status", "finished"}, {"task", lm ? "char_lm" : "classify"}, {"cell", "gru"}, {"step", 10}};
      write(run + "/summary.json", QJsonDocument(summary).toJson());
      write(run + "/metrics.jsonl",
            QJsonDocument(QJsonObject{{"step", 10}, {"loss", 2.5}}).toJson(QJsonDocument::Compact) + "\n");
      write(run + "/checkpoints/last.pt", "x");
    }
    gui::AnalysisPanel p;
    p.setWorkspace(ws);
    auto abs = [&](const char* name) { return QFileInfo(ws + "/" + name).absoluteFilePath(); };
    auto choices = [&] {
      QStringList out;
      for (const QString& d : p.secondRunChoices()) out << QFileInfo(d).absoluteFilePath();
      return out;
    };
    QVERIFY(p.selectRun(ws + "/lm-a"));
    QCOMPARE(choices(), QStringList{abs("lm-b")});
    QVERIFY(p.selectRun(ws + "/cls-c"));
    QCOMPARE(choices(), QStringList());
    QVERIFY(p.selectRun(ws + "/lm-b"));
    QCOMPARE(choices(), QStringList{abs("lm-a")});
  }

  void windowHasTheTab() {
    gui::WindowOptions o;
    o.workspace = m_ws;
    o.settingsFile = cstest::temp_dir() + "/analysis_settings.ini";
    o.restoreLastConfig = false;
    gui::MainWindow w(o);
    QVERIFY(w.analysisPanel());
    const auto panels = w.panels();
    const auto entry = std::find_if(panels.begin(), panels.end(),
                                    [&](const gui::PanelEntry& e) { return e.widget == w.analysisPanel(); });
    QVERIFY(entry != panels.end());
    QCOMPARE(entry->title, QString("Analyses"));
    QCOMPARE(w.analysisPanel()->workspace(), QFileInfo(m_ws).absoluteFilePath());
    QVERIFY(w.analysisPanel()->runDirs().size() >= 1);
    // View > Analyses is bound to Ctrl+3.
    QAction* act = nullptr;
    for (QAction* a : w.findChildren<QAction*>())
      if (a->shortcut() == QKeySequence(QStringLiteral("Ctrl+3"))) act = a;
    QVERIFY(act);
    QVERIFY(act->text().contains("Analyses"));
    act->trigger();
    QCOMPARE(w.currentPanel(), static_cast<QWidget*>(w.analysisPanel()));
  }
};

CS_TEST(TestGuiAnalysis, "gui_analysis")
#include "test_gui_analysis.moc"
