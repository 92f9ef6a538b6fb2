// The workbench window (app/gui, linked through cellscope_app), offscreen:
// schema-generated form, validation next to the field, live training with
// pause/resume/stop, a queue, workspace watching, comparison with overlays and
// seed bands, config diff, export of every figure format and the run table.
#include <QApplication>
#include <QComboBox>
#include <QImage>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QXmlStreamReader>
#include <QtTest/QtTest>

#include "compare_panel.h"
#include "configure_panel.h"
#include "core_bridge.h"
#include "curve_plot.h"
#include "figure_export.h"
#include "harness.h"
#include "main_window.h"
#include "option_form.h"
#include "run_table.h"
#include "training_controller.h"
#include "training_panel.h"

using gui::MainWindow;

class GuiTest : public QObject {
  Q_OBJECT

  QString m_root;
  QJsonObject m_dataset;  // moby-dick (cut with max_chars) or a generated text file

  gui::WindowOptions opts(const QString& ws, bool restore = false) {
    gui::WindowOptions o;
    o.workspace = ws;
    o.settingsFile = m_root + "/settings.ini";
    o.restoreLastConfig = restore;
    return o;
  }

  QJsonObject tinyConfig(int steps, int seed = 1, int evalEvery = 0) {
    return QJsonObject{{"task", QJsonObject{{"name", "char_lm"}}},
                       {"dataset", m_dataset},
                       {"model", QJsonObject{{"cell", "gru"}, {"embed", 16}, {"hidden", 32}}},
                       {"training", QJsonObject{{"steps", steps},
                                                {"batch", 8},
                                                {"bptt", 32},
                                                {"log_every", 1},
                                                {"eval_every", evalEvery},
                                                {"eval_batch", 4},
                                                {"lr", 0.003},
                                                {"seed", seed},
                                                {"eval_test", false}}}};
  }

  static QJsonObject readJson(const QString& path) { return cstest::readJsonObject(path); }

  static QByteArray head(const QString& path, int n) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return QByteArray();
    return f.read(n);
  }

 private Q_SLOTS:
  void initTestCase() {
    m_root = cstest::temp_dir() + "/gui";
    QDir().mkpath(m_root);
    qunsetenv("CELLSCOPE_WORKSPACE");
    // Never touch the user's settings.
    QCoreApplication::setOrganizationName("CellscopeTests");
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_root + "/qsettings");
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_root + "/qsettings");
    const QString moby = QDir(gui::dataCacheDir()).filePath("moby-dick.txt");
    if (QFileInfo::exists(moby)) {
      m_dataset = QJsonObject{{"name", "moby-dick"}, {"max_chars", 60000}};
    } else {
      // No corpus fetched (datasets/fetch.sh): a generated text file instead.
      QFile f(m_root + "/corpus.txt");
      QVERIFY(f.open(QIODevice::WriteOnly));
      for (int i = 0; i < 1500; ++i) f.write("Call me Ishmael. Some years ago, never mind how long precisely.\n");
      f.close();
      m_dataset = QJsonObject{{"path", f.fileName()}};
    }
  }

  void formFromSchema() {
    MainWindow w(opts(m_root + "/ws-form"));
    w.show();
    QVERIFY(w.configurePanel()->setConfigValue("model.cell", "gru"));
    csw::OptionForm* form = w.configurePanel()->form();
    const QStringList paths = form->paths();
    // Every option of the schema for (gru, char_lm) except the dedicated controls.
    const auto descs = gui::optionDescs("gru", "char_lm");
    QCOMPARE(paths.size(), descs.size());
    QVERIFY(paths.contains("model.hidden"));
    QVERIFY(paths.contains("training.lr"));
    QVERIFY(paths.contains("training.bptt"));  // a task option
    QVERIFY(!paths.contains("task.name"));
    QVERIFY(!paths.contains("model.cell"));
    const QString tip = form->editor("model.hidden")->toolTip();
    QVERIFY2(tip.contains("Hidden state size") && tip.contains("Range: [1, 65536]"), qPrintable(tip));
    // Values carry over when the cell changes; the form is rebuilt.
    QVERIFY(form->setValue("model.hidden", 48));
    QVERIFY(w.configurePanel()->setConfigValue("model.cell", "lstm"));
    QCOMPARE(w.configurePanel()->currentConfig().value("model").toObject().value("cell").toString(), QString("lstm"));
    QCOMPARE(form->value("model.hidden").toInt(), 48);
    // The parameter count follows the options (computed off the GUI thread).
    w.configurePanel()->applyConfig(tinyConfig(10));
    QTRY_VERIFY_WITH_TIMEOUT(w.configurePanel()->parameterCount() > 0, 30000);
    const qint64 small = w.configurePanel()->parameterCount();
    QVERIFY(w.configurePanel()->setConfigValue("model.hidden", 64));
    QTRY_VERIFY_WITH_TIMEOUT(w.configurePanel()->parameterCount() > small, 30000);
    // GRU: embedding V*16 + 3 gates (16*64 + 64*64 + 2*64) + output 64*V + V; doubling hidden grows it.
    QVERIFY(w.configurePanel()->parameterCount() - small > 3 * (16 * 32 + 64 * 64 - 32 * 32));
  }

  void validationNextToField() {
    const QString ws = m_root + "/ws-invalid";
    MainWindow w(opts(ws));
    w.show();
    w.configurePanel()->applyConfig(tinyConfig(10));
    QVERIFY(w.configurePanel()->setConfigValue("training.batch", 32));
    QVERIFY(
        w.configurePanel()->setConfigValue("dataset.max_chars", 20));  // too short for one batch: a cross-field error
    w.configurePanel()->revalidateNow();
    const QString err = w.configurePanel()->form()->errorText("dataset.max_chars");
    QVERIFY2(err.contains("training.batch"), qPrintable(err));
    QTRY_VERIFY(w.configurePanel()->form()->errorLabel("dataset.max_chars")->isVisible());  // rebuilt fields show on
                                                                                            // the next event loop turn
    QVERIFY(w.configurePanel()->form()->errorText("training.batch").isEmpty());
    QVERIFY(!w.startTraining());
    QVERIFY(!w.controller()->isTraining());
    QCOMPARE(QDir(ws).entryList(QDir::Dirs | QDir::NoDotAndDotDot).size(), 0);  // nothing created
    QVERIFY(w.configurePanel()->setConfigValue("dataset.max_chars", 60000));
    w.configurePanel()->revalidateNow();
    QVERIFY(w.configurePanel()->form()->errorText("dataset.max_chars").isEmpty());
    QVERIFY(w.configurePanel()->validationErrors().isEmpty());
  }

  void trainPauseResumeStop() {
    const QString ws = m_root + "/ws-live";
    MainWindow w(opts(ws));
    w.show();
    w.configurePanel()->applyConfig(tinyConfig(1000000));
    QSignalSpy started(w.controller(), &gui::TrainingController::runStarted);
    QVERIFY(w.startTraining());
    QVERIFY(w.controller()->isTraining());
    csw::CurvePlot* metric = w.trainingPanel()->plot("metric");
    QTRY_VERIFY_WITH_TIMEOUT(metric->pointCount("train") >= 5, 60000);
    QCOMPARE(started.size(), 1);
    const QString runDir = w.controller()->currentRunDir();
    QVERIFY(QFileInfo::exists(runDir + "/config.json"));
    QVERIFY(w.trainingPanel()->plot("lr")->pointCount("lr") > 0);
    QVERIFY(w.trainingPanel()->plot("grad_norm")->pointCount("grad_norm") > 0);
    QTRY_VERIFY_WITH_TIMEOUT(w.progressText().contains("ETA"), 10000);
    QVERIFY(w.progressText().contains("chars/s"));
    QVERIFY(!w.trainingPanel()->logText().isEmpty());

    // Pause: no new points once the queue is drained.
    w.controller()->togglePause();
    QVERIFY(w.controller()->isPaused());
    QTest::qWait(400);
    const int c1 = metric->pointCount("train");
    QTest::qWait(700);
    QCOMPARE(metric->pointCount("train"), c1);
    // Resume.
    w.controller()->togglePause();
    QVERIFY(!w.controller()->isPaused());
    QTRY_VERIFY_WITH_TIMEOUT(metric->pointCount("train") > c1 + 2, 30000);

    // x axis as epochs: the same points, x now fractional epochs.
    w.trainingPanel()->setXAxis(gui::XAxis::Epoch);
    const auto xs = metric->seriesX("train");
    QVERIFY(!xs.isEmpty());
    QVERIFY(xs.last() < 100.0 && xs.last() > 0.0);
    w.trainingPanel()->setXAxis(gui::XAxis::Step);

    // Stop: the run keeps a checkpoint and says it was stopped.
    QSignalSpy finished(w.controller(), &gui::TrainingController::runFinished);
    w.controller()->stop();
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isTraining(), 30000);
    QCOMPARE(finished.size(), 1);
    QCOMPARE(finished.at(0).at(1).toString(), QString("stopped"));
    QCOMPARE(readJson(runDir + "/summary.json").value("status").toString(), QString("stopped"));
    QVERIFY(QFileInfo::exists(runDir + "/checkpoints/last.pt"));
    QCOMPARE(w.comparePanel()->runModel()->rowCount(), 1);
    QCOMPARE(w.comparePanel()->runModel()->runs()[0].status(), QString("stopped"));
  }

  void queueTwoSeeds() {
    // Two runs that differ only in the seed, the second from the queue.
    const QString ws = m_root + "/ws-seeds";
    MainWindow w(opts(ws));
    w.show();
    QSignalSpy finished(w.controller(), &gui::TrainingController::runFinished);
    w.configurePanel()->applyConfig(tinyConfig(40, 1, 20));
    QVERIFY(w.startTraining());
    w.configurePanel()->applyConfig(tinyConfig(40, 2, 20));
    w.enqueueCurrent();
    QCOMPARE(w.controller()->queueSize(), 1);
    QTRY_VERIFY_WITH_TIMEOUT(finished.size() == 2, 120000);
    QCOMPARE(w.controller()->queueSize(), 0);
    for (const auto& args : finished) QCOMPARE(args.at(1).toString(), QString("finished"));
    QTRY_COMPARE(w.comparePanel()->runModel()->rowCount(), 2);
    for (const auto& r : w.comparePanel()->runModel()->runs()) {
      QCOMPARE(r.status(), QString("finished"));
      QVERIFY(r.summary.value("best_valid").isDouble());
    }
    QVERIFY(w.comparePanel()->runModel()->differing().contains("training.seed"));
  }

  void compareOverlaySeedsDiff() {
    const QString ws = m_root + "/ws-seeds";
    MainWindow w(opts(ws));
    w.show();
    QCOMPARE(w.comparePanel()->runModel()->rowCount(), 2);
    for (const auto& r : w.comparePanel()->runModel()->runs()) w.comparePanel()->runModel()->setChecked(r.dir, true);
    csw::CurvePlot* plot = w.comparePanel()->comparePlot();
    QCOMPARE(w.comparePanel()->compareMetric(), QString("valid|bpc"));
    QCOMPARE(plot->seriesIds().size(), 2);
    for (const QString& id : plot->seriesIds()) QCOMPARE(plot->pointCount(id), 2);  // evals at 20 and 40
    QVERIFY(plot->legendVisible());
    // Training loss overlay: 40 points each.
    QVERIFY(w.comparePanel()->setCompareMetric("train|loss"));
    for (const QString& id : plot->seriesIds()) QCOMPARE(plot->pointCount(id), 40);
    // Seeds -> one mean curve with a band; the mean is the mean of the two runs.
    const auto y0 = plot->seriesY(plot->seriesIds()[0]), y1 = plot->seriesY(plot->seriesIds()[1]);
    w.comparePanel()->setSeedAggregation(true);
    QCOMPARE(plot->seriesIds().size(), 1);
    const QString mid = plot->seriesIds()[0];
    QVERIFY(plot->hasBand(mid));
    QVERIFY(plot->seriesLabel(mid).contains("mean of 2 seeds"));
    const auto ym = plot->seriesY(mid);
    QCOMPARE(ym.size(), 40);
    QVERIFY(qAbs(ym[5] - 0.5 * (y0[5] + y1[5])) < 1e-9);
    w.comparePanel()->setSeedAggregation(false);
    QCOMPARE(plot->seriesIds().size(), 2);

    // Config diff of two selected runs.
    w.comparePanel()->selectRows({0, 1});
    const QString diff = w.comparePanel()->configDiffText();
    QVERIFY2(diff.startsWith("training.seed: "), qPrintable(diff));
    QCOMPARE(diff.count('\n'), 0);  // only the seed differs

    // Sort and filter.
    w.comparePanel()->runProxy()->sort(gui::RunTableModel::BestValid, Qt::AscendingOrder);
    const double b0 = w.comparePanel()
                          ->runProxy()
                          ->index(0, gui::RunTableModel::BestValid)
                          .data(gui::RunTableModel::SortRole)
                          .toDouble();
    const double b1 = w.comparePanel()
                          ->runProxy()
                          ->index(1, gui::RunTableModel::BestValid)
                          .data(gui::RunTableModel::SortRole)
                          .toDouble();
    QVERIFY(b0 <= b1);
    w.comparePanel()->runProxy()->setFilterFixedString("gru");
    QCOMPARE(w.comparePanel()->runProxy()->rowCount(), 2);
    w.comparePanel()->runProxy()->setFilterFixedString("no-such-run");
    QCOMPARE(w.comparePanel()->runProxy()->rowCount(), 0);
    w.comparePanel()->runProxy()->setFilterFixedString(QString());
  }

  void exportFigures() {
    const QString ws = m_root + "/ws-seeds";
    MainWindow w(opts(ws));
    w.resize(1200, 800);
    w.show();
    const QString dir = w.comparePanel()->runModel()->runs()[0].dir;
    w.showRunInTrainingView(dir);
    csw::CurvePlot* metric = w.trainingPanel()->plot("metric");
    QCOMPARE(metric->pointCount("train"), 40);
    QCOMPARE(metric->pointCount("valid"), 2);
    const QString out = m_root + "/export";
    QDir().mkpath(out);
    csw::ExportOptions eo = w.exporter()->options();
    eo.scale = 2.0;
    eo.size = QSize(600, 400);
    eo.fontPointSize = 11;
    w.exporter()->setOptions(eo);
    QString err;
    QVERIFY2(w.exporter()->exportPlot(metric, out + "/m.png", &err), qPrintable(err));
    QVERIFY2(w.exporter()->exportPlot(metric, out + "/m.pdf", &err), qPrintable(err));
    QVERIFY2(w.exporter()->exportPlot(metric, out + "/m.svg", &err), qPrintable(err));
    QVERIFY2(w.exporter()->exportPlot(metric, out + "/m.csv", &err), qPrintable(err));
    QCOMPARE(head(out + "/m.png", 8), QByteArray("\x89PNG\r\n\x1a\n", 8));
    QImage png(out + "/m.png");
    QCOMPARE(png.size(), QSize(1200, 800));  // size x scale
    QCOMPARE(head(out + "/m.pdf", 5), QByteArray("%PDF-"));
    // SVG: well-formed XML whose text contains the axis labels and the title.
    QFile svg(out + "/m.svg");
    QVERIFY(svg.open(QIODevice::ReadOnly));
    QXmlStreamReader xml(&svg);
    QString text;
    bool sawSvg = false;
    while (!xml.atEnd()) {
      xml.readNext();
      if (xml.isStartElement() && xml.name() == QLatin1String("svg")) sawSvg = true;
      if (xml.isCharacters()) text += xml.text().toString() + "\n";
    }
    QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
    QVERIFY(sawSvg);
    QVERIFY2(text.contains("step") && text.contains("bpc") && text.contains("Training and validation"),
             qPrintable(text.left(500)));
    // CSV: long format, one row per raw point.
    QFile csv(out + "/m.csv");
    QVERIFY(csv.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(csv.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.first(), QString("series,x,y"));
    QCOMPARE(lines.size(), 1 + 40 + 2);
    QVERIFY(lines[1].startsWith("train,1,"));

    // Every figure of the run into a folder.
    QStringList written;
    QVERIFY2(w.trainingPanel()->exportAllFigures(out + "/all", &written, &err), qPrintable(err));
    QCOMPARE(written.size(), 4 * 4);  // metric, lr, grad_norm, throughput (no extra metrics) x 4 formats
    for (const QString& f : written) QVERIFY(QFileInfo(f).size() > 0);

    // Comparison figure and the run table.
    for (const auto& r : w.comparePanel()->runModel()->runs()) w.comparePanel()->runModel()->setChecked(r.dir, true);
    QVERIFY2(w.exporter()->exportPlot(w.comparePanel()->comparePlot(), out + "/compare.svg", &err), qPrintable(err));
    QVERIFY2(w.comparePanel()->exportRunTable(out + "/runs.csv", &err), qPrintable(err));
    QFile t(out + "/runs.csv");
    QVERIFY(t.open(QIODevice::ReadOnly));
    const QStringList rows = QString::fromUtf8(t.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(rows.size(), 3);
    QVERIFY(rows[0].startsWith(
        "Run,Status,Task,Cell,Parameters,Step,Best valid,Best step,Test,Throughput,Processes,Differing config"));
    QVERIFY(rows[1].contains(",finished,char_lm,gru,"));
    QVERIFY(rows[1].contains("seed=1") || rows[1].contains("seed=2"));
  }

  void workspaceWatchAndSettings() {
    // A run started from the CLI in the same workspace shows up in the window.
    const QString ws = m_root + "/ws-watch";
    QDir().mkpath(ws);
    {
      MainWindow w(opts(ws));
      w.show();
      QCOMPARE(w.comparePanel()->runModel()->rowCount(), 0);
      const QString cfgPath = m_root + "/cli-config.json";
      QFile f(cfgPath);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QJsonDocument(tinyConfig(5)).toJson());
      f.close();
      QString out, err;
      QCOMPARE(cstest::run_cli({"train", cfgPath, "--workspace", ws, "--quiet"}, &out, &err), 0);
      QTRY_COMPARE_WITH_TIMEOUT(w.comparePanel()->runModel()->rowCount(), 1, 10000);
      QTRY_COMPARE_WITH_TIMEOUT(w.comparePanel()->runModel()->runs()[0].status(), QString("finished"), 10000);
      // Remember workspace and choices.
      QVERIFY(w.configurePanel()->setConfigValue("model.cell", "lstm"));
      QVERIFY(w.configurePanel()->setConfigValue("model.hidden", 40));
      w.close();
    }
    MainWindow w2(opts(QString(), /*restore=*/true));
    QCOMPARE(w2.workspace(), QFileInfo(ws).absoluteFilePath());
    QCOMPARE(w2.configurePanel()->currentConfig().value("model").toObject().value("cell").toString(), QString("lstm"));
    QCOMPARE(w2.configurePanel()->form()->value("model.hidden").toInt(), 40);
  }

  void failureIsReported() {
    const QString ws = m_root + "/ws-fail";
    MainWindow w(opts(ws));
    QSignalSpy failed(w.controller(), &gui::TrainingController::runFailed);
    QJsonObject cfg = tinyConfig(10);
    cfg.insert("dataset", QJsonObject{{"path", m_root + "/does-not-exist.txt"}});
    w.configurePanel()->applyConfig(cfg);
    QCOMPARE(w.configurePanel()->datasetFormat(), QString("unreadable"));
    // The form refuses it (marked under the dataset); the controller, asked directly, reports the failure.
    QVERIFY(!w.startTraining());
    QVERIFY2(w.configurePanel()->datasetError().contains("does-not-exist.txt"),
             qPrintable(w.configurePanel()->datasetError()));
    QVERIFY(w.controller()->start(w.configurePanel()->currentConfig()));
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isTraining(), 30000);
    QCOMPARE(failed.size(), 1);
    QVERIFY2(w.controller()->lastError().contains("does-not-exist.txt"), qPrintable(w.controller()->lastError()));
    QCOMPARE(QDir(ws).entryList(QDir::Dirs | QDir::NoDotAndDotDot).size(), 0);  // no half-made run
  }

  void formatDetection() {
    const QString d = m_root + "/formats";
    QDir().mkpath(d);
    auto write = [&](const QString& name, const QByteArray& data) {
      QFile f(d + "/" + name);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(data);
    };
    write("a.txt", "Hello world.\nSecond line.\n");
    write("b.dat", QByteArray(4000, 'a').replace(7, 1, " "));
    write("c.data", "{\"text\": \"x\", \"label\": \"ham\"}\n{\"text\": \"y\", \"label\": \"spam\"}\n");
    QCOMPARE(gui::detectFormat(d + "/a.txt"), QString("text"));
    QCOMPARE(gui::detectFormat(d + "/b.dat"), QString("text8"));
    QCOMPARE(gui::detectFormat(d + "/c.data"), QString("jsonl"));
    MainWindow w(opts(m_root + "/ws-form"));
    w.configurePanel()->setDatasetFile(d + "/a.txt");
    QCOMPARE(w.configurePanel()->datasetFormat(), QString("text"));
    QCOMPARE(w.configurePanel()->currentConfig().value("dataset").toObject().value("path").toString(),
             QFileInfo(d + "/a.txt").absoluteFilePath());
  }
};

CS_TEST(GuiTest, "gui")
#include "test_gui.moc"
