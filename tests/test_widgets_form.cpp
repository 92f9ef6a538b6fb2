// Widgets: OptionForm (generated editors, values, changed signal, errors) and ScientificSpinBox.
#include <QAbstractButton>
#include <QCheckBox>
#include <QComboBox>
#include <QJsonValue>
#include <QSignalSpy>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>

#include "harness.h"
#include "option_form.h"

// In a namespace of its own, so that the using-directive stays in this file (tests/check_unity.py).
namespace widgets_form_test {
using namespace csw;

namespace {
QList<OptionDesc> sampleOptions() {
  QList<OptionDesc> o;
  OptionDesc d;
  d.section = QStringLiteral("model");
  d.key = QStringLiteral("hidden");
  d.label = QStringLiteral("Hidden size");
  d.help = QStringLiteral("Number of hidden units");
  d.type = OptionDesc::Int;
  d.defaultValue = 256;
  d.min = 1;
  d.max = 4096;
  o << d;
  d = OptionDesc();
  d.section = QStringLiteral("model");
  d.key = QStringLiteral("cell");
  d.label = QStringLiteral("Cell");
  d.type = OptionDesc::Enum;
  d.choices = QStringList{QStringLiteral("lstm"), QStringLiteral("gru"), QStringLiteral("mcrnn")};
  d.defaultValue = QStringLiteral("gru");
  o << d;
  d = OptionDesc();
  d.section = QStringLiteral("train");
  d.key = QStringLiteral("lr");
  d.label = QStringLiteral("Learning rate");
  d.help = QStringLiteral("Adam step size");
  d.type = OptionDesc::Float;
  d.value = 3e-4;
  d.defaultValue = 1e-3;
  d.min = 0;
  d.max = 10;
  o << d;
  d = OptionDesc();
  d.section = QStringLiteral("train");
  d.key = QStringLiteral("clip");
  d.label = QStringLiteral("Clip gradients");
  d.type = OptionDesc::Bool;
  d.defaultValue = true;
  o << d;
  d = OptionDesc();
  d.section = QStringLiteral("train");
  d.key = QStringLiteral("run_name");
  d.type = OptionDesc::String;
  d.defaultValue = QStringLiteral("baseline");
  d.advanced = true;
  o << d;
  return o;
}
}  // namespace

class TestWidgetsForm : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void editorsAndValues() {
    OptionForm f;
    f.setOptions(sampleOptions());
    QCOMPARE(f.paths(),
             (QStringList{QStringLiteral("model.hidden"), QStringLiteral("model.cell"), QStringLiteral("train.lr"),
                          QStringLiteral("train.clip"), QStringLiteral("train.run_name")}));
    QVERIFY(qobject_cast<QSpinBox*>(f.editor(QStringLiteral("model.hidden"))));
    QVERIFY(qobject_cast<QComboBox*>(f.editor(QStringLiteral("model.cell"))));
    QVERIFY(qobject_cast<ScientificSpinBox*>(f.editor(QStringLiteral("train.lr"))));
    QVERIFY(qobject_cast<QCheckBox*>(f.editor(QStringLiteral("train.clip"))));
    QVERIFY(qobject_cast<QLineEdit*>(f.editor(QStringLiteral("train.run_name"))));
    QCOMPARE(f.editor(QStringLiteral("model.hidden"))->toolTip(), QStringLiteral("Number of hidden units"));
    auto* hidden = qobject_cast<QSpinBox*>(f.editor(QStringLiteral("model.hidden")));
    // The option's range is not put on the editor (no silent clamping): a value
    // outside it is kept and rangeError() reports it on the field.
    QVERIFY(hidden->minimum() < 1 && hidden->maximum() > 4096);
    QVERIFY(f.rangeError(QStringLiteral("model.hidden")).isEmpty());
    hidden->setValue(5000);
    QCOMPARE(f.value(QStringLiteral("model.hidden")).toInt(), 5000);
    QVERIFY2(f.rangeError(QStringLiteral("model.hidden")).contains(QStringLiteral("[1, 4096]")),
             qPrintable(f.rangeError(QStringLiteral("model.hidden"))));
    QCOMPARE(f.rangeErrors().size(), 1);
    hidden->setValue(256);
    // Two sections -> two group boxes.
    QCOMPARE(f.findChildren<QGroupBox*>().size(), 2);

    const QVariantMap v = f.values();
    QCOMPARE(v.value(QStringLiteral("model.hidden")).toInt(), 256);
    QCOMPARE(v.value(QStringLiteral("model.cell")).toString(), QStringLiteral("gru"));
    QCOMPARE(v.value(QStringLiteral("train.lr")).toDouble(), 3e-4);  // value wins over default
    QCOMPARE(v.value(QStringLiteral("train.clip")).toBool(), true);
    QCOMPARE(v.value(QStringLiteral("train.run_name")).toString(), QStringLiteral("baseline"));

    // Round trip.
    QVERIFY(f.setValue(QStringLiteral("model.hidden"), 512));
    QVERIFY(f.setValue(QStringLiteral("model.cell"), QStringLiteral("mcrnn")));
    QVERIFY(f.setValue(QStringLiteral("train.lr"), 2.5e-5));
    QVERIFY(f.setValue(QStringLiteral("train.clip"), false));
    QVERIFY(f.setValue(QStringLiteral("train.run_name"), QStringLiteral("exp, 2")));
    QVERIFY(!f.setValue(QStringLiteral("model.cell"), QStringLiteral("transformer")));
    QVERIFY(!f.setValue(QStringLiteral("no.such"), 1));
    const QVariantMap w = f.values();
    QCOMPARE(w.value(QStringLiteral("model.hidden")).toInt(), 512);
    QCOMPARE(w.value(QStringLiteral("model.cell")).toString(), QStringLiteral("mcrnn"));
    QCOMPARE(w.value(QStringLiteral("train.lr")).toDouble(), 2.5e-5);  // no decimal rounding
    QCOMPARE(w.value(QStringLiteral("train.clip")).toBool(), false);
    QCOMPARE(w.value(QStringLiteral("train.run_name")).toString(), QStringLiteral("exp, 2"));
    // Map round trip into a fresh form.
    OptionForm g;
    g.setOptions(sampleOptions());
    g.setValues(w);
    QCOMPARE(g.values(), w);
    g.resetToDefaults();
    QCOMPARE(g.value(QStringLiteral("train.lr")).toDouble(), 1e-3);
    QCOMPARE(g.value(QStringLiteral("model.hidden")).toInt(), 256);
    // options() reports current values.
    QCOMPARE(f.options().at(0).value.toInt(), 512);
  }

  void changedSignal() {
    OptionForm f;
    QSignalSpy spy(&f, &OptionForm::changed);
    f.setOptions(sampleOptions());
    QCOMPARE(spy.count(), 0);  // building emits nothing
    f.setValue(QStringLiteral("model.hidden"), 1024);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toString(), QStringLiteral("model.hidden"));
    QCOMPARE(spy.at(0).at(1).toInt(), 1024);
    // User edits through the editors.
    qobject_cast<QCheckBox*>(f.editor(QStringLiteral("train.clip")))->click();
    QCOMPARE(spy.count(), 2);
    QCOMPARE(spy.at(1).at(0).toString(), QStringLiteral("train.clip"));
    QCOMPARE(spy.at(1).at(1).toBool(), false);
    auto* le = qobject_cast<QLineEdit*>(f.editor(QStringLiteral("train.run_name")));
    le->clear();
    spy.clear();
    QTest::keyClicks(le, QStringLiteral("ab"));
    QCOMPARE(spy.count(), 2);
    QCOMPARE(spy.last().at(1).toString(), QStringLiteral("ab"));
    qobject_cast<QComboBox*>(f.editor(QStringLiteral("model.cell")))->setCurrentIndex(0);
    QCOMPARE(spy.last().at(0).toString(), QStringLiteral("model.cell"));
    QCOMPARE(spy.last().at(1).toString(), QStringLiteral("lstm"));
  }

  void errorsShowAndClear() {
    OptionForm f;
    f.setOptions(sampleOptions());
    f.setAttribute(Qt::WA_DontShowOnScreen);
    f.resize(400, 500);
    f.show();
    QLabel* err = f.errorLabel(QStringLiteral("train.lr"));
    QVERIFY(err);
    QVERIFY(!err->isVisible());
    QVERIFY(!f.hasErrors());
    f.setError(QStringLiteral("train.lr"), QStringLiteral("must be > 0"));
    QVERIFY(err->isVisible());
    QCOMPARE(err->text(), QStringLiteral("must be > 0"));
    QCOMPARE(f.errorText(QStringLiteral("train.lr")), QStringLiteral("must be > 0"));
    QVERIFY(err->styleSheet().contains(QLatin1String("#d32f2f")));
    // The editor's frame turns red.
    QWidget* frame = f.editor(QStringLiteral("train.lr"))->parentWidget();
    QVERIFY(frame->property("csError").toBool());
    QVERIFY(frame->styleSheet().contains(QLatin1String("border")));
    QVERIFY(f.hasErrors());
    // An advanced field's error expands its panel.
    QVERIFY(!f.advancedPanel(QStringLiteral("train"))->isVisible());
    f.setError(QStringLiteral("train.run_name"), QStringLiteral("already exists"));
    QVERIFY(f.advancedPanel(QStringLiteral("train"))->isVisible());
    QVERIFY(f.errorLabel(QStringLiteral("train.run_name"))->isVisible());
    // Unknown path: the general label at the top.
    f.setError(QStringLiteral("data.path"), QStringLiteral("missing"));
    QVERIFY(f.errorLabel(QStringLiteral("data.path"))->isVisible());
    QCOMPARE(f.errorLabel(QStringLiteral("data.path"))->text(), QStringLiteral("data.path: missing"));

    f.clearErrors();
    QVERIFY(!err->isVisible());
    QVERIFY(err->text().isEmpty());
    QVERIFY(!frame->property("csError").toBool());
    QVERIFY(frame->styleSheet().isEmpty());
    QVERIFY(!f.errorLabel(QStringLiteral("train.run_name"))->isVisible());
    QVERIFY(!f.errorLabel(QStringLiteral("data.path"))->isVisible());
    QVERIFY(!f.hasErrors());
  }

  // A field's message is shown whole (#53: clipped top and bottom): a long one wraps, and the label is as tall as
  // its lines at its width, inside its cell, at a narrow form width as at a wide one, after it is shown and after
  // the form is resized.
  void errorMessagesAreNotClipped() {
    OptionForm f;
    f.setOptions(sampleOptions());
    f.setAttribute(Qt::WA_DontShowOnScreen);
    f.resize(300, 500);
    f.show();
    QVERIFY(QTest::qWaitForWindowExposed(&f) || true);
    const QString longMessage = QStringLiteral(
        "must be greater than 0 and at most 10: a learning rate of 0 never moves the weights, and a negative one "
        "climbs the loss");
    f.setError(QStringLiteral("train.lr"), longMessage);
    f.setError(QStringLiteral("model.hidden"), QStringLiteral("too big"));
    auto whole = [&](const QString& path) {
      QLabel* err = f.errorLabel(path);
      QTRY_VERIFY(err->isVisible());
      QCoreApplication::processEvents();
      const int need = err->heightForWidth(err->width());
      QVERIFY2(err->height() >= need && err->height() >= err->fontMetrics().height(),
               qPrintable(QStringLiteral("%1: %2 px tall, its text needs %3 at width %4")
                              .arg(path)
                              .arg(err->height())
                              .arg(need)
                              .arg(err->width())));
      QVERIFY2(err->geometry().bottom() < err->parentWidget()->height(),
               qPrintable(QStringLiteral("%1: the label ends below its cell").arg(path)));
    };
    whole(QStringLiteral("train.lr"));
    whole(QStringLiteral("model.hidden"));
    QVERIFY(
        f.errorLabel(QStringLiteral("train.lr"))->heightForWidth(f.errorLabel(QStringLiteral("train.lr"))->width()) >
        f.errorLabel(QStringLiteral("train.lr"))->fontMetrics().height());  // it did wrap
    f.resize(900, 500);
    QCoreApplication::processEvents();
    whole(QStringLiteral("train.lr"));
    f.resize(260, 500);
    QCoreApplication::processEvents();
    whole(QStringLiteral("train.lr"));
  }

  void scientificSpinBox() {
    ScientificSpinBox s;
    s.setRange(0, 10);
    s.setValue(3e-4);
    QCOMPARE(s.value(), 3e-4);
    QCOMPARE(s.text(), QStringLiteral("0.0003"));
    s.setValue(1e-5);
    QCOMPARE(s.text(), QStringLiteral("1e-05"));
    QCOMPARE(s.valueFromText(QStringLiteral("2.5e-3")), 2.5e-3);
    QString t = QStringLiteral("1e-");
    int pos = 3;
    QCOMPARE(s.validate(t, pos), QValidator::Intermediate);
    t = QStringLiteral("abc");
    QCOMPARE(s.validate(t, pos), QValidator::Invalid);
    t = QStringLiteral("5e-4");
    QCOMPARE(s.validate(t, pos), QValidator::Acceptable);
    t = QStringLiteral("50");
    QCOMPARE(s.validate(t, pos), QValidator::Intermediate);  // out of range
    s.setValue(0.003);
    s.stepBy(1);
    QCOMPARE(s.value(), 0.004);
    s.setValue(0.001);
    s.stepBy(-1);
    QCOMPARE(s.value(), 0.0009);
  }

  // Options without a default (OptionDesc::optional): they start unset ("default"), values()
  // leaves them out, setting one carries it, an invalid or null QVariant unsets it again, and
  // an unset one is never out of range.
  void optionalOptionsStartUnset() {
    QList<OptionDesc> opts;
    auto add = [&opts](const QString& key, OptionDesc::Type type, double min = 0, double max = 0) {
      OptionDesc d;
      d.section = QStringLiteral("dataset");
      d.key = key;
      d.type = type;
      d.min = min;
      d.max = max;
      d.optional = true;
      opts << d;
    };
    add(QStringLiteral("words"), OptionDesc::Int, 1, 1000);
    add(QStringLiteral("ratio"), OptionDesc::Float, 0.5, 0.95);
    add(QStringLiteral("lowercase"), OptionDesc::Bool);
    add(QStringLiteral("lang"), OptionDesc::String);
    OptionDesc plain;
    plain.section = QStringLiteral("dataset");
    plain.key = QStringLiteral("count");
    plain.type = OptionDesc::Int;
    plain.defaultValue = 7;
    opts << plain;
    OptionForm f;
    f.setOptions(opts);
    const QStringList optional = {"dataset.words", "dataset.ratio", "dataset.lowercase", "dataset.lang"};
    QCOMPARE(f.values().keys(), QStringList{"dataset.count"});
    for (const QString& p : optional) {
      QVERIFY2(f.isUnset(p), qPrintable(p));
      QVERIFY2(!f.value(p).isValid(), qPrintable(p));
    }
    QVERIFY(f.rangeErrors().isEmpty());
    // What the editors show.
    auto* words = qobject_cast<QSpinBox*>(f.editor("dataset.words"));
    QVERIFY(words);
    QCOMPARE(words->text(), QStringLiteral("default"));
    auto* ratio = qobject_cast<ScientificSpinBox*>(f.editor("dataset.ratio"));
    QVERIFY(ratio);
    QCOMPARE(ratio->text(), QStringLiteral("default"));
    auto* lower = qobject_cast<QCheckBox*>(f.editor("dataset.lowercase"));
    QCOMPARE(lower->checkState(), Qt::PartiallyChecked);
    QCOMPARE(lower->text(), QStringLiteral("default"));
    QCOMPARE(qobject_cast<QLineEdit*>(f.editor("dataset.lang"))->placeholderText(), QStringLiteral("default"));

    // Set: carried as typed values.
    QSignalSpy changed(&f, &OptionForm::changed);
    QVERIFY(f.setValue("dataset.words", 40));
    QVERIFY(f.setValue("dataset.ratio", 0.75));
    QVERIFY(f.setValue("dataset.lowercase", false));
    QVERIFY(f.setValue("dataset.lang", "de"));
    QCOMPARE(changed.size(), 4);
    QVariantMap v = f.values();
    QCOMPARE(v.value("dataset.words"), QVariant(40));
    QCOMPARE(v.value("dataset.ratio").toDouble(), 0.75);
    QCOMPARE(v.value("dataset.lowercase"), QVariant(false));
    QCOMPARE(lower->text(), QString());
    QCOMPARE(v.value("dataset.lang"), QVariant(QStringLiteral("de")));
    QVERIFY(!f.isUnset("dataset.words"));
    // Out of range once set: reported.
    QVERIFY(f.setValue("dataset.words", 0));
    QVERIFY(f.rangeError("dataset.words").contains("out of range"));
    // Unset again: an invalid QVariant, a JSON null.
    QVERIFY(f.setValue("dataset.words", QVariant()));
    QVERIFY(f.setValue("dataset.ratio", QJsonValue(QJsonValue::Null).toVariant()));
    QVERIFY(f.setValue("dataset.lang", QString()));
    QVERIFY(f.isUnset("dataset.words") && f.isUnset("dataset.ratio") && f.isUnset("dataset.lang"));
    QVERIFY(f.rangeErrors().isEmpty());
    // Stepping: up from unset starts at the range's minimum, below the range unsets again.
    words->stepBy(1);
    QCOMPARE(f.value("dataset.words"), QVariant(1));
    words->stepBy(-1);
    QVERIFY(f.isUnset("dataset.words"));
    ratio->stepBy(1);
    QCOMPARE(f.value("dataset.ratio").toDouble(), 0.5);
    // Typing the special text unsets; resetToDefaults unsets every optional option.
    QVERIFY(f.setValue("dataset.words", 12));
    QString t = QStringLiteral("default");
    int pos = 0;
    QCOMPARE(ratio->validate(t, pos), QValidator::Acceptable);
    QCOMPARE(ratio->valueFromText(t), ratio->minimum());
    f.resetToDefaults();
    for (const QString& p : optional) QVERIFY2(f.isUnset(p), qPrintable(p));
    QCOMPARE(f.values().keys(), QStringList{"dataset.count"});
  }

  // A string option naming a file has a Browse... button beside its field: what is chosen goes
  // into the field (and changed() fires); a cancelled choice changes nothing; the chooser starts
  // in the folder of the file named already. Other string options have no button.
  void fileFieldHasBrowse() {
    OptionDesc script;
    script.section = QStringLiteral("model");
    script.key = QStringLiteral("script");
    script.type = OptionDesc::String;
    script.fileFilter = QStringLiteral("TorchScript cell sources (*.py)");
    OptionDesc name = script;
    name.key = QStringLiteral("name");
    name.fileFilter.clear();
    OptionForm f;
    f.setOptions({script, name});
    QVERIFY(!f.browseButton(QStringLiteral("model.name")));
    QAbstractButton* browse = f.browseButton(QStringLiteral("model.script"));
    QVERIFY(browse);
    QCOMPARE(browse->text(), QStringLiteral("Browse..."));
    QString askedDir, askedFilter, answer = QStringLiteral("/data/cells/my_cell.py");
    OptionForm::setFileChooser([&](QWidget*, const QString&, const QString& dir, const QString& filter) {
      askedDir = dir;
      askedFilter = filter;
      return answer;
    });
    QSignalSpy changed(&f, &OptionForm::changed);
    browse->click();
    QCOMPARE(f.value(QStringLiteral("model.script")).toString(), QStringLiteral("/data/cells/my_cell.py"));
    QCOMPARE(askedFilter, QStringLiteral("TorchScript cell sources (*.py)"));
    QVERIFY(!changed.isEmpty());
    answer.clear();  // cancelled
    browse->click();
    QCOMPARE(askedDir, QStringLiteral("/data/cells"));
    QCOMPARE(f.value(QStringLiteral("model.script")).toString(), QStringLiteral("/data/cells/my_cell.py"));
    OptionForm::setFileChooser(nullptr);
  }
};

CS_TEST(TestWidgetsForm, "widgets_form")
}  // namespace widgets_form_test
#include "test_widgets_form.moc"
