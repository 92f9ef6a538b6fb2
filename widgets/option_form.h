// OptionForm: an editable form generated from plain option descriptors.
//
// The app converts its configuration schema into a list of OptionDesc; the form
// groups them by section (one QGroupBox per section, in order of first
// appearance) and creates one editor per option:
//   Int    -> QSpinBox (range min..max)
//   Float  -> ScientificSpinBox (a QDoubleSpinBox that shows and accepts
//             scientific notation such as 3e-4, no decimal rounding; range min..max)
//   Bool   -> QCheckBox
//   String -> QLineEdit
//   Enum   -> QComboBox (choices)
// A range (applied when min < max; default 0, 0 = unbounded) is never put on the
// editor: a value out of range stays as typed (never clamped) and rangeError()
// says so for that field. Spin boxes and combo boxes take the mouse wheel only
// when they have focus (scrolling the form never changes a value).
// The help text is the tooltip of the label and of the editor. Options marked
// advanced go into a collapsible "Advanced" part of their section (collapsed
// by default).
//
// Values are addressed by "section.key". changed(path, value) is emitted
// whenever a value changes (user edit or setValue()).
// An optional option (OptionDesc::optional: the schema has no default, the
// program decides when it is left out, e.g. "the format's default") starts
// *unset*: a spin box shows "default" (typing "default", or stepping below the
// range, unsets it again; stepping up from it starts at the range's minimum), a
// check box is partially checked ("default"), a line edit is empty. values()
// leaves unset options out and value() returns an invalid QVariant for them, so a
// configuration built from the form never carries a made-up value such as 0;
// setValue(path, QVariant()) or a null QVariant unsets one.
// Validation: setError(path, message) shows message in red under the field and
// draws a red frame around its editor (expanding the advanced part if needed);
// an unknown path shows "path: message" in a red label at the top of the form.
// clearErrors() hides all of them. Errors stay until cleared (the app revalidates).
#pragma once

#include <QDoubleSpinBox>

#include <cfloat>
#include <functional>
#include <QElapsedTimer>
#include <QHash>
#include <QList>
#include <QStringList>
#include <QVariant>
#include <QWidget>

class QAbstractButton;
class QFrame;
class QLabel;
class QScrollArea;
class QVBoxLayout;

namespace csw {

struct OptionDesc {
  QString section, key, label, help;
  enum Type { Int, Float, Bool, String, Enum } type = String;
  QVariant value, defaultValue;  // value invalid = use defaultValue
  double min = 0.0, max = 0.0;   // applied when min < max
  QStringList choices;           // Enum
  bool advanced = false;
  bool optional = false;  // no default: starts unset, left out of values() until set
  QString fileFilter;     // String naming a file: a Browse... button (QFileDialog's name filters)
  QString path() const { return section + QLatin1Char('.') + key; }
};

// Double spin box that displays values with %g (so 0.0003 shows as "0.0003"
// and 1e-05 as "1e-05"), accepts scientific input, and does not round to a
// fixed number of decimals. Arrow steps move by one unit of the value's
// leading decimal digit (0.003 -> 0.004, 2e-5 -> 3e-5).
class ScientificSpinBox : public QDoubleSpinBox {
  Q_OBJECT
 public:
  explicit ScientificSpinBox(QWidget* parent = nullptr);
  QString textFromValue(double value) const override;
  double valueFromText(const QString& text) const override;
  QValidator::State validate(QString& text, int& pos) const override;
  void fixup(QString& input) const override;
  void stepBy(int steps) override;
  // Optional value: minimum() (-DBL_MAX) means unset and shows specialText; stepping
  // up from it starts at `start`, stepping below `rangeMin` unsets it again.
  void setOptional(const QString& specialText, double start, double rangeMin);
  bool isOptional() const { return m_optional; }
  bool isUnset() const { return m_optional && value() == minimum(); }
  void unset() { setValue(minimum()); }

 private:
  bool m_optional = false;
  double m_start = 0.0, m_rangeMin = -DBL_MAX;
};

class OptionForm : public QWidget {
  Q_OBJECT
 public:
  explicit OptionForm(QWidget* parent = nullptr);
  ~OptionForm() override;

  // Rebuilds the form (previous editors and errors are discarded; no changed signals).
  void setOptions(const QList<OptionDesc>& options);
  // Lays the rows out now (setOptions does it too): the sections shown, the form's layout
  // and its scroll area's range up to date before the next paint (no rows squeezed together
  // that spread out later, under the pointer). See FORM_LAYOUT_NOTES.md.
  void settleLayout();
  QList<OptionDesc> options() const;  // with current values
  QStringList paths() const;

  QVariantMap values() const;                 // "section.key" -> int / double / bool / QString
  QVariant value(const QString& path) const;  // invalid for an unset optional option
  bool isUnset(const QString& path) const;    // an optional option left at "default"
  // Sets one value (converted to the option's type). Returns false for an
  // unknown path or an unconvertible value.
  bool setValue(const QString& path, const QVariant& value);
  void setValues(const QVariantMap& values);
  void resetToDefaults();

  void setError(const QString& path, const QString& message);
  void clearError(const QString& path);
  void clearErrors();
  bool hasErrors() const;
  QString errorText(const QString& path) const;
  // "V is out of range: must be in [min, max]" when the field's value is outside
  // its option's range, else empty; rangeErrors(): "path: message" for every field.
  QString rangeError(const QString& path) const;
  QStringList rangeErrors() const;

  // What a Browse... button asks (a file's path, empty when cancelled): QFileDialog unless a test
  // sets another (nullptr restores QFileDialog).
  using FileChooser =
      std::function<QString(QWidget* parent, const QString& caption, const QString& dir, const QString& filter)>;
  static void setFileChooser(FileChooser chooser);

  // Widgets, for tests and custom layouts.
  QWidget* editor(const QString& path) const;
  QAbstractButton* browseButton(const QString& path) const;  // nullptr: not a file field
  QLabel* errorLabel(const QString& path) const;             // the general label for an unknown path
  QWidget* advancedPanel(const QString& section) const;
  void setAdvancedExpanded(const QString& section, bool expanded);

 Q_SIGNALS:
  void changed(const QString& path, const QVariant& value);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  struct Field;
  struct Section;
  Field* field(const QString& path) const;
  QVariant editorValue(const Field& f) const;
  void setFrameError(Field& f, bool error);
  bool isUnset(const Field& f) const;
  void unset(Field& f);
  void emitChanged(const QString& path);
  // setOptions in parts (option_form.cpp).
  Section* sectionFor(QHash<QString, Section*>& sections, const OptionDesc& d);
  QWidget* makeEditor(const OptionDesc& d, const QVariant& initial, QWidget* parent);
  QWidget* fieldCell(Field* f, QWidget* parent);

  QVBoxLayout* m_content = nullptr;
  QWidget* m_body = nullptr;
  QScrollArea* m_scroll = nullptr;
  QLabel* m_generalError = nullptr;
  QList<Field*> m_fields;
  QHash<QString, Field*> m_byPath;
  QList<Section*> m_sections;
  QStringList m_generalErrors;
  bool m_building = false;
  QElapsedTimer m_wheelScroll;  // since the form last scrolled by the wheel (eventFilter)
};

}  // namespace csw
