// Forms say exactly what is wrong, offscreen: a value out of range is
// kept as typed and marked on its own field (never clamped, the error never on
// another field), an unknown dataset format or an unreadable dataset file is
// marked on its field with Start disabled, the mouse wheel changes a spin box only
// when it has focus, and a failed Start keeps the previous curves while its
// message goes once the configuration is fixed.
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QAbstractItemView>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QProgressBar>
#include <QSettings>
#include <QSpinBox>
#include <QAbstractButton>
#include <QWheelEvent>
#include <QtTest/QtTest>

#include "configure_panel.h"
#include "core_bridge.h"
#include "curve_plot.h"
#include "harness.h"
#include "main_window.h"
#include "option_form.h"
#include "training_controller.h"
#include "training_panel.h"

class GuiFormsTest : public QObject {
  Q_OBJECT
  QString m_root;
  QJsonObject m_dataset;

  gui::WindowOptions opts(const QString& ws) {
    gui::WindowOptions o;
    o.workspace = ws;
    o.settingsFile = m_root + "/settings.ini";
    return o;
  }

  QJsonObject tinyConfig(int steps) {
    return QJsonObject{{"task", QJsonObject{{"name", "char_lm"}}},
                       {"dataset", m_dataset},
                       {"model", QJsonObject{{"cell", "gru"}, {"embed", 16}, {"hidden", 32}}},
                       {"training", QJsonObject{{"steps", steps},
                                                {"batch", 8},
                                                {"bptt", 32},
                                                {"log_every", 1},
                                                {"eval_every", 0},
                                                {"eval_batch", 4},
                                                {"lr", 0.003},
                                                {"seed", 1},
                                                {"eval_test", false}}}};
  }

  // Types text into a spin box as a user does (select all, type, leave the field).
  static void typeInto(QAbstractSpinBox* box, const QString& text) {
    box->setFocus();
    box->selectAll();
    QTest::keyClicks(box, text);
    QTest::keyClick(box, Qt::Key_Enter);
    box->clearFocus();  // focus out: where QAbstractSpinBox fixes up (clamped) the text
    QApplication::processEvents();
  }

  static void wheel(QWidget* w, int steps) {
    const QPointF pos(w->width() / 2.0, w->height() / 2.0);
    QWheelEvent ev(pos, w->mapToGlobal(pos), QPoint(), QPoint(0, 120 * steps), Qt::NoButton, Qt::NoModifier,
                   Qt::NoScrollPhase, false);
    QApplication::sendEvent(w, &ev);
  }

 private Q_SLOTS:
  void initTestCase() {
    m_root = cstest::temp_dir() + "/forms";
    QDir().mkpath(m_root);
    qunsetenv("CELLSCOPE_WORKSPACE");
    QCoreApplication::setOrganizationName("CellscopeTests");
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_root + "/qsettings");
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_root + "/qsettings");
    QFile f(m_root + "/corpus.txt");
    QVERIFY(f.open(QIODevice::WriteOnly));
    for (int i = 0; i < 1500; ++i) f.write("Call me Ishmael. Some years ago, never mind how long precisely.\n");
    f.close();
    m_dataset = QJsonObject{{"path", f.fileName()}};
  }

  void outOfRangeIsKeptAndMarkedOnItsField() {
    gui::MainWindow w(opts(m_root + "/ws-range"));
    w.show();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    w.configurePanel()->applyConfig(tinyConfig(10));
    w.configurePanel()->revalidateNow();
    QVERIFY(w.configurePanel()->isValid());
    csw::OptionForm* form = w.configurePanel()->form();
    auto* valid = qobject_cast<QAbstractSpinBox*>(form->editor("dataset.valid_fraction"));
    auto* test = qobject_cast<QAbstractSpinBox*>(form->editor("dataset.test_fraction"));
    QVERIFY(valid && test);
    typeInto(valid, "0.7");
    typeInto(test, "0.6");
    w.configurePanel()->revalidateNow();
    QCOMPARE(form->value("dataset.valid_fraction").toDouble(), 0.7);  // not clamped to 0.5
    QCOMPARE(form->value("dataset.test_fraction").toDouble(), 0.6);
    const QString ev = form->errorText("dataset.valid_fraction"), et = form->errorText("dataset.test_fraction");
    QVERIFY2(ev.contains("0.7") && ev.contains("0.5"), qPrintable(ev));
    QVERIFY2(et.contains("0.6") && et.contains("0.5"), qPrintable(et));
    QTRY_VERIFY(form->errorLabel("dataset.valid_fraction")->isVisible());
    QVERIFY(!w.configurePanel()->startButton()->isEnabled());
    // An integer too: hidden 0 stays 0 with its message.
    auto* hidden = qobject_cast<QAbstractSpinBox*>(form->editor("model.hidden"));
    typeInto(hidden, "0");
    QCOMPARE(form->value("model.hidden").toInt(), 0);
    // Fixed: the messages go and Start comes back.
    QVERIFY(form->setValue("dataset.valid_fraction", 0.1));
    QVERIFY(form->setValue("dataset.test_fraction", 0.1));
    QVERIFY(form->setValue("model.hidden", 32));
    w.configurePanel()->revalidateNow();
    QVERIFY2(w.configurePanel()->isValid(), qPrintable(w.configurePanel()->validationErrors().join("; ")));
    QVERIFY(form->errorText("dataset.valid_fraction").isEmpty());
    QVERIFY(w.configurePanel()->startButton()->isEnabled());
  }

  // dataset.format is a choice of the format registry (data/dataset_formats.h): the form offers no unknown name,
  // and one of another task (cbt, the cloze task's, under char_lm) is marked on its field, naming it.
  void datasetFormatOfAnotherTaskIsMarkedOnItsField() {
    gui::MainWindow w(opts(m_root + "/ws-format"));
    w.show();
    w.configurePanel()->applyConfig(tinyConfig(10));
    QVERIFY(!w.configurePanel()->form()->setValue("dataset.format", "nonsense"));
    QVERIFY(w.configurePanel()->form()->setValue("dataset.format", "cbt"));
    w.configurePanel()->revalidateNow();
    csw::OptionForm* form = w.configurePanel()->form();
    QTRY_VERIFY_WITH_TIMEOUT(!form->errorText("dataset.format").isEmpty(), 30000);
    QVERIFY2(form->errorText("dataset.format").contains("cbt") && form->errorText("dataset.format").contains("char_lm"),
             qPrintable(form->errorText("dataset.format")));
    QTRY_VERIFY(form->errorLabel("dataset.format")->isVisible());
    QVERIFY(!w.configurePanel()->isValid());
    QVERIFY(!w.configurePanel()->startButton()->isEnabled());
    // A dataset file that cannot be read: under the dataset, at once.
    w.configurePanel()->applyConfig(tinyConfig(10));
    w.configurePanel()->setDatasetFile(m_root + "/no-such-file.txt");
    w.configurePanel()->revalidateNow();
    QVERIFY2(w.configurePanel()->datasetError().contains("no-such-file.txt"),
             qPrintable(w.configurePanel()->datasetError()));
    QVERIFY(!w.configurePanel()->startButton()->isEnabled());
    QVERIFY(!w.startTraining());
    // Fixed: the message goes.
    w.configurePanel()->setDatasetFile(m_root + "/corpus.txt");
    w.configurePanel()->revalidateNow();
    QVERIFY(w.configurePanel()->datasetError().isEmpty());
    QVERIFY(w.configurePanel()->startButton()->isEnabled());
  }

  // The script cell's model.script names a file: the form offers Browse... beside it.
  void scriptFieldHasBrowse() {
    gui::MainWindow w(opts(m_root + "/ws-script-browse"));
    w.configurePanel()->applyConfig(
        QJsonObject{{"task", QJsonObject{{"name", "char_lm"}}}, {"model", QJsonObject{{"cell", "script"}}}});
    csw::OptionForm* form = w.configurePanel()->form();
    QVERIFY(form->editor("model.script"));
    QAbstractButton* browse = form->browseButton("model.script");
    QVERIFY(browse);
    QCOMPARE(browse->text(), QString("Browse..."));
    QVERIFY(!form->browseButton("model.hidden"));
  }

  void wheelChangesAFieldOnlyWithFocus() {
    gui::MainWindow w(opts(m_root + "/ws-wheel"));
    w.show();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    csw::OptionForm* form = w.configurePanel()->form();
    QVERIFY(form->setValue("model.hidden", 128));
    auto* hidden = qobject_cast<QSpinBox*>(form->editor("model.hidden"));
    QVERIFY(hidden);
    w.configurePanel()->setFocus();
    QVERIFY(!hidden->hasFocus());
    wheel(hidden, -2);
    QCOMPARE(hidden->value(), 128);  // scrolling over the form changes nothing
    auto* cell = w.configurePanel()->findChildren<QComboBox*>().value(0);
    QVERIFY(cell);
    hidden->setFocus();
    QTRY_VERIFY(hidden->hasFocus());
    wheel(hidden, -2);
    QCOMPARE(hidden->value(), 126);  // a focused field takes the wheel
    // While the form scrolls (a wheel event reached its scroll area 0.4 s ago or less), the
    // focused field passes the wheel on too (before: "hidden 64 became 59" as it passed under
    // the pointer). A real wheel over any part of the form reaches the scroll area; a test's
    // event is not passed to parents (Qt delivers synthetic wheel events to the receiver only).
    auto* area = form->findChild<QScrollArea*>();
    QVERIFY(area);
    wheel(area->viewport(), -1);
    wheel(hidden, -2);
    QCOMPARE(hidden->value(), 126);
    wheel(hidden, -2);
    QCOMPARE(hidden->value(), 126);
    QTest::qWait(600);  // the scrolling has stopped
    wheel(hidden, -1);
    QCOMPARE(hidden->value(), 125);
    // A combo box of the form too.
    auto* opt = qobject_cast<QComboBox*>(form->editor("training.optimizer"));
    if (opt) {
      hidden->setFocus();
      const int before = opt->currentIndex();
      wheel(opt, -1);
      QCOMPARE(opt->currentIndex(), before);
    }
  }

  void failedStartKeepsTheCurvesAndItsMessageClears() {
    gui::MainWindow w(opts(m_root + "/ws-fail"));
    w.show();
    w.configurePanel()->applyConfig(tinyConfig(12));
    QVERIFY(w.startTraining());
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isTraining(), 120000);
    csw::CurvePlot* metric = w.trainingPanel()->plot("metric");
    const int before = metric->pointCount("train");
    QVERIFY(before > 0);
    // A Start that fails while loading the data (a file that vanished after validation).
    QJsonObject bad = tinyConfig(12);
    bad.insert("dataset", QJsonObject{{"path", m_root + "/vanished.txt"}});
    QSignalSpy failed(w.controller(), &gui::TrainingController::runFailed);
    QVERIFY(w.controller()->start(bad));
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isTraining(), 60000);
    QCOMPARE(failed.size(), 1);
    QCOMPARE(metric->pointCount("train"), before);  // the previous curves are still there
    QVERIFY(w.trainingPanel()->failureShown());
    QVERIFY2(w.trainingPanel()->runLabelText().contains("vanished.txt"), qPrintable(w.trainingPanel()->runLabelText()));
    QVERIFY(w.progressText().startsWith("Failed"));
    // Fixed (a valid configuration): the message goes, the curves stay.
    QVERIFY(w.configurePanel()->setConfigValue("model.hidden", 24));
    w.configurePanel()->revalidateNow();
    QVERIFY(!w.trainingPanel()->failureShown());
    QVERIFY(!w.trainingPanel()->runLabelText().contains("vanished.txt"));
    QVERIFY(!w.progressText().startsWith("Failed"));
    QCOMPARE(metric->pointCount("train"), before);
  }

  // #38 item 7: the Configure form stays where it is drawn. After a preset loads (picked in
  // the Preset combo) and after Add to queue, the Steps field is drawn at one place: it
  // does not move under the pointer while the rows settle or the parameter count arrives.
  void formStaysPutAfterAPresetLoads() {
    gui::MainWindow w(opts(m_root + "/ws-put"));
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    gui::ConfigurePanel* panel = w.configurePanel();
    auto* preset = panel->findChild<QComboBox*>("presetCombo");
    QVERIFY(preset);
    auto* params = panel->findChild<QLabel*>("parameterCount");
    QVERIFY(params);
    auto* inner = panel->form()->findChild<QScrollArea*>();
    QVERIFY(inner);
    auto where = [&](const QString& path) -> QRect {
      QWidget* e = panel->form()->editor(path);
      return e && e->isVisible() ? QRect(e->mapTo(&w, QPoint(0, 0)), e->size()) : QRect();
    };
    // Every 20 ms for `ms`: the Steps field is drawn at one place, at its full height (rows
    // squeezed together for a while were the bug), Clip's row apart from it.
    auto staysPut = [&](const QString& what, int ms) {
      QRect first;
      for (int t = 0; t <= ms; t += 20) {
        const QRect steps = where("training.steps"), clip = where("training.clip");
        if (first.isNull() && steps.isValid()) first = steps;
        const QString at = QStringLiteral("%1 +%2 ms: steps %3,%4 %5x%6 (first at y %7), clip y %8")
                               .arg(what)
                               .arg(t)
                               .arg(steps.x())
                               .arg(steps.y())
                               .arg(steps.width())
                               .arg(steps.height())
                               .arg(first.y())
                               .arg(clip.y());
        if (first.isValid()) {
          QVERIFY2(steps == first, qPrintable(at));
          QVERIFY2(steps.height() >= panel->form()->editor("training.steps")->sizeHint().height(), qPrintable(at));
          QVERIFY2(clip.isValid() && !clip.intersects(steps), qPrintable(at));
        }
        QTest::qWait(20);
      }
      QVERIFY2(first.isValid(), qPrintable(what));
    };
    for (const QString& name :
         {QStringLiteral("quick-sat-mzu"), QStringLiteral("quick-gru"), QStringLiteral("quick-word-mcrnn"),
          QStringLiteral("quick-lstm"), QStringLiteral("quick-gru")}) {
      // The user has scrolled the form to the training options...
      QWidget* steps = panel->form()->editor("training.steps");
      QTRY_VERIFY(steps && steps->isVisible());
      inner->verticalScrollBar()->setValue(steps->mapTo(inner->widget(), QPoint(0, 0)).y() -
                                           inner->viewport()->height() / 2);
      QTest::qWait(50);
      // ... and picks a preset (what choosing it with the mouse sends).
      const int i = preset->findText(name);
      QVERIFY2(i > 0, qPrintable(name));
      preset->setCurrentIndex(i);
      Q_EMIT preset->activated(i);
      staysPut(name, 500);  // the rows settle; validation (150 ms) says "counting..."
      if (QTest::currentTestFailed()) return;
      QTRY_VERIFY_WITH_TIMEOUT(params->text().contains("<b>") || params->text().contains("problem"), 60000);
      staysPut(name + " (counted)", 200);
      if (QTest::currentTestFailed()) return;
    }
    // Add to queue (nothing running: it starts) changes the count line again.
    QVERIFY(panel->form()->setValue("training.steps", 5));
    QTest::qWait(600);
    QPushButton* queue = nullptr;
    for (QPushButton* b : panel->findChildren<QPushButton*>())
      if (b->text() == "Add to queue") queue = b;
    QVERIFY(queue);
    QTRY_VERIFY_WITH_TIMEOUT(queue->isEnabled(), 60000);
    QTest::mouseClick(queue, Qt::LeftButton);
    staysPut("Add to queue", 1000);
    if (QTest::currentTestFailed()) return;
    w.controller()->stop();
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isTraining(), 120000);
  }

  // #38: a value out of its range is one problem, said once on its field and counted once.
  void oneProblemIsSaidOnceAndCountedOnce() {
    gui::MainWindow w(opts(m_root + "/ws-once"));
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.configurePanel()->applyConfig(tinyConfig(10));
    w.configurePanel()->revalidateNow();
    csw::OptionForm* form = w.configurePanel()->form();
    auto* params = w.configurePanel()->findChild<QLabel*>("parameterCount");
    QVERIFY(params);
    auto* steps = qobject_cast<QAbstractSpinBox*>(form->editor("training.steps"));
    QVERIFY(steps);
    typeInto(steps, "0");
    QTRY_VERIFY(form->errorLabel("training.steps")->isVisible());
    const QString shown = form->errorLabel("training.steps")->text();
    QVERIFY2(shown.contains("out of range"), qPrintable(shown));
    QVERIFY2(!shown.contains(";") && !shown.contains("expected an integer"), qPrintable(shown));
    QVERIFY2(params->text().contains("fix the problem above"), qPrintable(params->text()));
    QCOMPARE(w.configurePanel()->validationErrors().size(), 1);
    // ... and it stays so: the parameter count asked for by the valid state before (400 ms later)
    // must not build the invalid configuration and replace it with "cannot build the model".
    QTest::qWait(700);
    QVERIFY2(params->text().contains("fix the problem above"), qPrintable(params->text()));
    // Two fields out of range: two problems.
    typeInto(qobject_cast<QAbstractSpinBox*>(form->editor("model.hidden")), "0");
    QTRY_VERIFY(form->errorLabel("model.hidden")->isVisible());
    QVERIFY2(params->text().contains("fix the 2 problems above"), qPrintable(params->text()));
  }

  // #38: the format line under the dataset describes the file as it is: it gives way to an
  // error about the file ("looks binary", "cannot read") and follows a file that is deleted
  // or comes back, without anything else being touched.
  void datasetFormatLineFollowsTheFile() {
    gui::MainWindow w(opts(m_root + "/ws-fmt"));
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    gui::ConfigurePanel* panel = w.configurePanel();
    panel->applyConfig(tinyConfig(10));
    auto* format = panel->findChild<QLabel*>("datasetFormat");
    auto* error = panel->findChild<QLabel*>("datasetError");
    QVERIFY(format && error);
    QTRY_VERIFY(format->isVisible());
    QVERIFY2(format->text().contains("text (detected)"), qPrintable(format->text()));
    // A binary file: the loader says "looks binary"; no "text (detected)" above it.
    const QString bin = m_root + "/noise.bin";
    {
      QFile f(bin);
      QVERIFY(f.open(QIODevice::WriteOnly));
      QByteArray b;
      for (int i = 0; i < 20000; ++i) b.append(char((i * 7919) % 32));
      f.write(b);
    }
    panel->setDatasetFile(bin);
    QTRY_VERIFY_WITH_TIMEOUT(error->isVisible(), 60000);
    QVERIFY2(error->text().contains("binary"), qPrintable(error->text()));
    QVERIFY2(!format->isVisible(), qPrintable(format->text()));
    // Another value while the file is still binary: the message stays on screen through
    // "counting..." (it went and came back, moving the form under the pointer).
    QTRY_VERIFY(panel->form()->editor("training.steps")->isVisible());
    QWidget* stepsEditor = panel->form()->editor("training.steps");
    const QPoint stepsAt = stepsEditor->mapTo(&w, QPoint(0, 0));
    typeInto(qobject_cast<QAbstractSpinBox*>(panel->form()->editor("model.hidden")), "24");
    for (int t = 0; t < 1500; t += 20) {
      QVERIFY2(error->isVisible() && error->text().contains("binary"), qPrintable(QString::number(t)));
      QCOMPARE(stepsEditor->mapTo(&w, QPoint(0, 0)), stepsAt);
      QTest::qWait(20);
    }
    QVERIFY(!panel->isValid());
    // A text file: its format line, no error.
    const QString txt = m_root + "/short.txt";
    {
      QFile f(txt);
      QVERIFY(f.open(QIODevice::WriteOnly));
      for (int i = 0; i < 400; ++i) f.write("It was the best of times, it was the worst of times.\n");
    }
    panel->setDatasetFile(txt);
    QTRY_VERIFY_WITH_TIMEOUT(!error->isVisible() && format->isVisible(), 60000);
    QVERIFY2(format->text().contains("text (detected)") && format->text().contains("short.txt"),
             qPrintable(format->text()));
    QTRY_VERIFY_WITH_TIMEOUT(panel->startButton()->isEnabled(), 60000);
    // Deleted behind the window's back: the error says so, the old format line goes.
    QVERIFY(QFile::remove(txt));
    QTRY_VERIFY_WITH_TIMEOUT(error->isVisible(), 10000);
    QVERIFY2(error->text().contains("short.txt"), qPrintable(error->text()));
    QVERIFY2(!format->isVisible(), qPrintable(format->text()));
    QVERIFY(!panel->startButton()->isEnabled());
    // Back again: so is its format line.
    {
      QFile f(txt);
      QVERIFY(f.open(QIODevice::WriteOnly));
      for (int i = 0; i < 400; ++i) f.write("It was the best of times, it was the worst of times.\n");
    }
    QTRY_VERIFY_WITH_TIMEOUT(!error->isVisible() && format->isVisible(), 10000);
    QVERIFY2(format->text().contains("text (detected)"), qPrintable(format->text()));
    QTRY_VERIFY_WITH_TIMEOUT(panel->startButton()->isEnabled(), 60000);
  }

  // #38: the dataset combo says what the data cache holds when the user looks at it: a CBT
  // set that is built meanwhile (a cloze run builds it on first use) is no longer marked.
  void datasetComboFollowsTheDataCache() {
    const QString cache = m_root + "/data-cache";
    QVERIFY(QDir().mkpath(cache));
    const QByteArray oldDataDir = qgetenv("CELLSCOPE_DATA_DIR");
    qputenv("CELLSCOPE_DATA_DIR", cache.toUtf8());
    struct Restore {
      QByteArray v;
      ~Restore() {
        if (v.isEmpty()) qunsetenv("CELLSCOPE_DATA_DIR");
        else qputenv("CELLSCOPE_DATA_DIR", v);
      }
    } restore{oldDataDir};
    gui::MainWindow w(opts(m_root + "/ws-cache"));
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    gui::ConfigurePanel* panel = w.configurePanel();
    QVERIFY(panel->setConfigValue("task.name", "cloze"));
    auto* combo = panel->findChild<QComboBox*>("datasetCombo");
    QVERIFY(combo);
    const int i = combo->findData("moby-dick-cbt-cn");
    QVERIFY(i >= 0);
    QCOMPARE(combo->itemText(i), QString("moby-dick-cbt-cn (built on first use)"));  // built, not downloaded
    // The set's files appear in the cache (what `cellscope-cli datasets build` or a first
    // cloze run leaves there: the manifest's list).
    QFile mf(gui::manifestPath());
    QVERIFY(mf.open(QIODevice::ReadOnly));
    QStringList files;
    for (const QJsonValue& e : QJsonDocument::fromJson(mf.readAll()).object().value("datasets").toArray())
      if (e.toObject().value("name").toString() == "moby-dick-cbt-cn")
        for (const QJsonValue& f : e.toObject().value("files").toArray()) files << f.toString();
    QVERIFY(!files.isEmpty());
    for (const QString& f : files) {
      QVERIFY(QDir().mkpath(QFileInfo(cache + "/" + f).absolutePath()));
      QFile out(cache + "/" + f);
      QVERIFY(out.open(QIODevice::WriteOnly));
      out.write("1 x\n");
    }
    // The user opens the list: the set is there, unmarked.
    QTest::mouseClick(combo, Qt::LeftButton);
    QTRY_VERIFY(combo->view()->isVisible());
    QCOMPARE(combo->itemText(i), QString("moby-dick-cbt-cn"));
    QCOMPARE(combo->view()->model()->index(i, 0).data().toString(), QString("moby-dick-cbt-cn"));
    combo->hidePopup();
    // Gone again (a cache cleared): marked again at the next validation.
    QVERIFY(QDir(cache + "/moby-dick-cbt-cn").removeRecursively());
    panel->revalidateNow();
    QCOMPARE(combo->itemText(i), QString("moby-dick-cbt-cn (built on first use)"));
  }
};

CS_TEST(GuiFormsTest, "gui_forms")
#include "test_gui_forms.moc"
