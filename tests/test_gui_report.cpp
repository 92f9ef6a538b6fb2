// Sweeps > Report... (app/gui/report_dialog), offscreen: a tiny sweep trained through the CLI,
// the dialog opened from the window's menu, a spec and an output folder typed in, Render
// clicked; the report is written on the worker thread (the button is disabled meanwhile) with
// its figures drawn as PNG/PDF, the progress bar full, the result shown and "Open folder"
// enabled. A spec naming a sweep that has not run shows which command runs it and writes nothing.
#include <QAction>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QComboBox>
#include <QtTest/QtTest>

#include "corpus_fixture.h"
#include "harness.h"
#include "main_window.h"
#include "report_dialog.h"

class GuiReportTest : public QObject {
  Q_OBJECT

  static void writeJson(const QString& path, const QJsonObject& o) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(QJsonDocument(o).toJson());
  }

  static void typeInto(QLineEdit* edit, const QString& text) {
    edit->selectAll();
    QTest::keyClick(edit, Qt::Key_Delete);
    QTest::keyClicks(edit, text);
  }

 private Q_SLOTS:
  void initTestCase() {
    qunsetenv("CELLSCOPE_WORKSPACE");
    QCoreApplication::setOrganizationName("CellscopeTests");
    const QString root = cstest::temp_dir() + "/guireport";
    QDir().mkpath(root);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, root + "/qsettings");
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, root + "/qsettings");
  }

  void rendersAReportFromTheMenu() {
    const QString root = cstest::temp_dir() + "/guireport";
    const QString ws = root + "/ws";
    QDir().mkpath(ws);
    const QString corpus = cstest::write_text_fixture("gui_report_corpus.txt", 5000);
    const QJsonObject sweep{
        {"name", "gui-tiny"},
        {"base",
         QJsonObject{
             {"task", QJsonObject{{"name", "char_lm"}}},
             {"dataset", QJsonObject{{"path", corpus}}},
             {"model", QJsonObject{{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
             {"training",
              QJsonObject{
                  {"steps", 12}, {"batch", 8}, {"bptt", 16}, {"eval_every", 6}, {"log_every", 3}, {"threads", 1}}}}},
        {"grid", QJsonObject{{"model.hidden", QJsonArray{8, 16}}}},
        {"seeds", QJsonArray{1}}};
    writeJson(root + "/sweep.json", sweep);
    QString out, err;
    QCOMPARE(cstest::run_cli({"sweep", "run", root + "/sweep.json", "--workspace", ws, "--quiet"}, &out, &err), 0);
    const QJsonObject state = cstest::readJsonObject(ws + "/sweeps/gui-tiny/state.json").value("points").toObject();
    QCOMPARE(state.size(), 2);
    const QString run = state.begin()->toObject().value("run_dir").toString();
    QVERIFY(QFileInfo::exists(run + "/config.json"));
    writeJson(root + "/spec.json",
              QJsonObject{{"title", "GUI report"},
                          {"items", QJsonArray{QJsonObject{{"sweep", "gui-tiny"}},
                                               QJsonObject{{"sweep", "gui-tiny"}, {"series", "model.hidden"}},
                                               QJsonObject{{"analysis", "relevance"}, {"run", run}, {"last", 3}}}}});

    gui::WindowOptions o;
    o.workspace = ws;
    o.settingsFile = root + "/settings.ini";
    o.restoreLastConfig = false;
    gui::MainWindow w(o);
    w.resize(1200, 800);
    w.show();
    // Sweeps > Report... in the menu bar.
    QMenu* sweeps = w.menuBar()->findChild<QMenu*>(QStringLiteral("sweepsMenu"));
    QVERIFY(sweeps);
    QAction* report = w.findChild<QAction*>(QStringLiteral("reportAction"));
    QVERIFY(report);
    QVERIFY(sweeps->actions().contains(report));
    report->trigger();
    auto* dialog = w.findChild<gui::ReportDialog*>();
    QVERIFY(dialog);
    QVERIFY(QTest::qWaitForWindowExposed(dialog));
    auto* spec = dialog->findChild<QLineEdit*>(QStringLiteral("reportSpec"));
    auto* outEdit = dialog->findChild<QLineEdit*>(QStringLiteral("reportOut"));
    auto* render = dialog->findChild<QPushButton*>(QStringLiteral("reportRender"));
    auto* open = dialog->findChild<QPushButton*>(QStringLiteral("reportOpen"));
    auto* result = dialog->findChild<QLabel*>(QStringLiteral("reportResult"));
    auto* progress = dialog->findChild<QProgressBar*>(QStringLiteral("reportProgress"));
    QVERIFY(spec && outEdit && render && open && result && progress);
    // the bundled spec is offered first
    QVERIFY2(spec->text().endsWith("sweep-notes.json"), qPrintable(spec->text()));
    QVERIFY(!open->isEnabled());

    // A sweep that has not run: which command runs it, nothing written.
    writeJson(root + "/bad.json", QJsonObject{{"items", QJsonArray{QJsonObject{{"sweep", "never-ran"}}}}});
    typeInto(spec, root + "/bad.json");
    typeInto(outEdit, root + "/bad-out");
    QTest::mouseClick(render, Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(result->text().startsWith("Not written"), 60000);
    QVERIFY2(result->text().contains("cellscope-cli sweep run never-ran"), qPrintable(result->text()));
    QVERIFY(!QFileInfo::exists(root + "/bad-out"));
    QVERIFY(!QFileInfo::exists(root + "/bad-out.tmp"));
    QVERIFY(render->isEnabled());
    QVERIFY(!open->isEnabled());

    // The tiny report, rendered off the GUI thread.
    typeInto(spec, root + "/spec.json");
    typeInto(outEdit, root + "/report");
    QTest::mouseClick(render, Qt::LeftButton);
    QVERIFY(dialog->isRendering());
    QVERIFY(!render->isEnabled());  // one render at a time
    QTRY_VERIFY_WITH_TIMEOUT(!dialog->isRendering(), 120000);
    QVERIFY2(result->text().startsWith("Wrote " + root + "/report: 3 items from 2 runs"), qPrintable(result->text()));
    QCOMPARE(progress->value(), progress->maximum());
    QCOMPARE(progress->maximum(), 3);
    QVERIFY(open->isEnabled());
    QVERIFY(render->isEnabled());
    const QJsonObject manifest = cstest::readJsonObject(root + "/report/manifest.json");
    QCOMPARE(manifest.value("title").toString(), QStringLiteral("GUI report"));
    QVERIFY(manifest.value("images").toBool());
    QCOMPARE(manifest.value("items").toArray().size(), 3);
    QVERIFY(QFileInfo::exists(root + "/report/report.md"));
    for (const char* stem : {"02-gui-tiny-series", "03-relevance"}) {
      const QImage png(root + "/report/" + stem + ".png");
      QVERIFY2(!png.isNull() && png.width() > 200 && png.height() > 100, stem);
      QFile pdf(root + "/report/" + stem + ".pdf");
      QVERIFY(pdf.open(QIODevice::ReadOnly));
      QVERIFY(pdf.read(5) == "%PDF-");
    }
    QVERIFY(QFileInfo::exists(root + "/report/01-gui-tiny.tex"));

    // A sweep of the workspace, chosen in the Spec list: reported without writing a spec by hand.
    auto* specs = dialog->findChild<QComboBox*>(QStringLiteral("reportBundled"));
    QVERIFY(specs);
    const int own = specs->findText(QStringLiteral("Sweep gui-tiny (this workspace)"));
    QVERIFY2(own > 0, qPrintable(QString::number(specs->count())));
    specs->setCurrentIndex(own);
    QVERIFY2(spec->text().endsWith("sweep-gui-tiny.json") && QFileInfo::exists(spec->text()), qPrintable(spec->text()));
    typeInto(outEdit, root + "/own");
    QTest::mouseClick(render, Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!dialog->isRendering(), 120000);
    QVERIFY2(result->text().startsWith("Wrote " + root + "/own: 1 items from 2 runs"), qPrintable(result->text()));
    const QJsonObject ownManifest = cstest::readJsonObject(root + "/own/manifest.json");
    QCOMPARE(ownManifest.value("title").toString(), QStringLiteral("Sweep gui-tiny"));
    QVERIFY(QFileInfo::exists(root + "/own/gui-tiny.tex"));
    const QString md = [&] {
      QFile f(root + "/own/report.md");
      return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
    }();
    QVERIFY2(md.contains("Sweep gui-tiny over model.hidden"), qPrintable(md.left(2000)));
  }
};

CS_TEST(GuiReportTest, "gui_report")
#include "test_gui_report.moc"
