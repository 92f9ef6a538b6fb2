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
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
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
                       {"training", QJsonObject{{"steps", steps}, {"batch", 8}, {"bptt", 32}, {"log_every", 1},
                                                {"eval_every", 0}, {"eval_batch", 4}, {"lr", 0.003}, {"seed", 1},
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

  void unknownDatasetFormatIsMarkedOnItsField() {
    gui::MainWindow w(opts(m_root + "/ws-format"));
    w.show();
    w.configurePanel()->applyConfig(tinyConfig(10));
    QVERIFY(w.configurePanel()->form()->setValue("dataset.format", "nonsense"));
    w.configurePanel()->revalidateNow();
    csw::OptionForm* form = w.configurePanel()->form();
    QTRY_VERIFY_WITH_TIMEOUT(!form->errorText("dataset.format").isEmpty(), 30000);
    QVERIFY2(form->errorText("dataset.format").contains("nonsense"), qPrintable(form->errorText("dataset.format")));
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
};

CS_TEST(GuiFormsTest, "gui_forms")
#include "test_gui_forms.moc"
