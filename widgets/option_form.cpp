#include "option_form.h"

#include "qt_compat.h"

#include <QAbstractSpinBox>
#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QWheelEvent>
#include <QFormLayout>
#include <QFrame>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>

namespace csw {

namespace {
// A word-wrapped message whose minimum height follows its width. QFormLayout gave a field's cell the
// height of one line of it whatever its width, so a message of two or three lines was clipped top and
// bottom (#53); the minimum height makes every layout above make room for all of its lines.
class WrapLabel : public QLabel {
 public:
  explicit WrapLabel(QWidget* parent) : QLabel(parent) { setWordWrap(true); }
  void setMessage(const QString& text) {
    setText(text);
    fit();
  }

 protected:
  void resizeEvent(QResizeEvent* e) override {
    QLabel::resizeEvent(e);
    fit();
  }

 private:
  void fit() {
    const int h = text().isEmpty() ? 0 : heightForWidth(std::max(1, width()));
    if (h != minimumHeight()) setMinimumHeight(h);
  }
};
}  // namespace

// ---------------------------------------------------------------- ScientificSpinBox

ScientificSpinBox::ScientificSpinBox(QWidget* parent) : QDoubleSpinBox(parent) {
  setDecimals(323);  // no rounding of the stored value
  setRange(-DBL_MAX, DBL_MAX);
  setKeyboardTracking(true);
  setMinimumWidth(110);
}

QString ScientificSpinBox::textFromValue(double value) const { return QString::number(value, 'g', 10); }

double ScientificSpinBox::valueFromText(const QString& text) const {
  QString t = text.trimmed();
  if (m_optional && t.compare(specialValueText(), Qt::CaseInsensitive) == 0) return minimum();
  bool ok = false;
  double v = t.toDouble(&ok);
  if (!ok) v = locale().toDouble(t, &ok);
  return ok ? v : value();
}

QValidator::State ScientificSpinBox::validate(QString& text, int& pos) const {
  Q_UNUSED(pos);
  const QString t = text.trimmed();
  if (t.isEmpty()) return QValidator::Intermediate;
  if (m_optional) {
    if (t.compare(specialValueText(), Qt::CaseInsensitive) == 0) return QValidator::Acceptable;
    if (specialValueText().startsWith(t, Qt::CaseInsensitive)) return QValidator::Intermediate;
  }
  bool ok = false;
  const double v = t.toDouble(&ok);
  if (ok && std::isfinite(v))
    return (v >= minimum() && v <= maximum()) ? QValidator::Acceptable : QValidator::Intermediate;
  static const QRegularExpression partial(QStringLiteral("^[+-]?(\\d+\\.?\\d*|\\.\\d*)?([eE][+-]?\\d*)?$"));
  return partial.match(t).hasMatch() ? QValidator::Intermediate : QValidator::Invalid;
}

void ScientificSpinBox::fixup(QString& input) const {
  if (m_optional && specialValueText().startsWith(input.trimmed(), Qt::CaseInsensitive)) {
    input = specialValueText();  // "", "def", ...: back to unset
    return;
  }
  bool ok = false;
  const double v = input.trimmed().toDouble(&ok);
  input = textFromValue(ok ? std::clamp(v, minimum(), maximum()) : value());
}

void ScientificSpinBox::setOptional(const QString& specialText, double start, double rangeMin) {
  m_optional = true;
  m_start = start;
  m_rangeMin = rangeMin;
  setSpecialValueText(specialText);
}

void ScientificSpinBox::stepBy(int steps) {
  if (m_optional && isUnset()) {
    if (steps > 0) setValue(m_start);
    return;
  }
  double nv = value();
  for (int i = 0; i < std::abs(steps); ++i) {
    double step = singleStep();
    if (nv != 0.0 && std::isfinite(nv)) {
      step = std::pow(10.0, std::floor(std::log10(std::abs(nv)) + 1e-12));
      // Towards zero from exactly 10^k: use the next smaller decade (1e-3 -> 9e-4).
      const bool towardZero = (steps < 0) == (nv > 0);
      if (towardZero && std::abs(std::abs(nv) - step) < step * 1e-9) step /= 10.0;
    }
    nv += steps > 0 ? step : -step;
    nv = QString::number(nv, 'g', 12).toDouble();  // drop floating-point noise
  }
  if (m_optional && nv < m_rangeMin) {
    unset();  // below the range: back to the program's default
    return;
  }
  setValue(std::clamp(nv, minimum(), maximum()));
}

namespace {
// The Int editor of an optional option: minimum() (INT_MIN) means unset and shows the
// special text; stepping up from it starts at `start`, below `rangeMin` unsets again.
class OptionalSpinBox : public QSpinBox {
 public:
  OptionalSpinBox(QWidget* parent, const QString& specialText, int start, int rangeMin)
      : QSpinBox(parent), m_start(start), m_rangeMin(rangeMin) {
    setRange(INT_MIN, INT_MAX);
    setSpecialValueText(specialText);
  }
  void stepBy(int steps) override {
    if (value() == minimum()) {
      if (steps > 0) setValue(m_start);
      return;
    }
    const qint64 nv = qint64(value()) + steps;
    if (nv < m_rangeMin) setValue(minimum());
    else QSpinBox::stepBy(steps);
  }
  void fixup(QString& input) const override {
    if (specialValueText().startsWith(input.trimmed(), Qt::CaseInsensitive)) input = specialValueText();
    else QSpinBox::fixup(input);
  }

 private:
  int m_start, m_rangeMin;
};

QString unsetText() { return QObject::tr("default"); }
}  // namespace

// ---------------------------------------------------------------- OptionForm

namespace {
// A value to show: not invalid, not a JSON null (QJsonValue::Null.toVariant()).
bool hasValue(const QVariant& v) { return v.isValid() && !v.isNull() && v.metaType().id() != QMetaType::Nullptr; }
}  // namespace

namespace {
OptionForm::FileChooser& fileChooser() {
  static OptionForm::FileChooser chooser;
  return chooser;
}
}  // namespace

void OptionForm::setFileChooser(FileChooser chooser) { fileChooser() = std::move(chooser); }

struct OptionForm::Field {
  OptionDesc desc;
  QWidget* editor = nullptr;
  QAbstractButton* browse = nullptr;  // file fields (OptionDesc::fileFilter)
  QFrame* frame = nullptr;
  QLabel* label = nullptr;
  QLabel* error = nullptr;
  QString section;
};

struct OptionForm::Section {
  QString name;
  QGroupBox* box = nullptr;
  QFormLayout* basic = nullptr;
  QToolButton* toggle = nullptr;
  QWidget* advanced = nullptr;
  QFormLayout* advancedLayout = nullptr;
};

OptionForm::OptionForm(QWidget* parent) : QWidget(parent) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  m_generalError = new WrapLabel(this);
  m_generalError->setObjectName(QStringLiteral("csGeneralError"));
  m_generalError->setStyleSheet(QStringLiteral("color: #d32f2f;"));
  m_generalError->hide();
  outer->addWidget(m_generalError);
  m_scroll = new QScrollArea(this);
  m_scroll->setWidgetResizable(true);
  m_scroll->setFrameShape(QFrame::NoFrame);
  outer->addWidget(m_scroll, 1);
  m_body = new QWidget(m_scroll);
  m_content = new QVBoxLayout(m_body);
  m_content->addStretch(1);
  m_scroll->setWidget(m_body);
  m_scroll->viewport()->installEventFilter(this);  // the form's wheel scrolling (eventFilter)
}

OptionForm::~OptionForm() {
  qDeleteAll(m_fields);
  qDeleteAll(m_sections);
}

OptionForm::Field* OptionForm::field(const QString& path) const { return m_byPath.value(path, nullptr); }

QAbstractButton* OptionForm::browseButton(const QString& path) const {
  const Field* f = field(path);
  return f ? f->browse : nullptr;
}

static QString sectionTitle(const QString& s) {
  if (s.isEmpty()) return QObject::tr("General");
  QString t = s;
  t.replace(QLatin1Char('_'), QLatin1Char(' '));
  t[0] = t[0].toUpper();
  return t;
}

// The section of option d (made on its first option), with its Advanced panel once d is advanced.
OptionForm::Section* OptionForm::sectionFor(QHash<QString, Section*>& sections, const OptionDesc& d) {
  Section* sec = sections.value(d.section, nullptr);
  if (!sec) {
    sec = new Section;
    sec->name = d.section;
    sec->box = new QGroupBox(sectionTitle(d.section), m_body);
    sec->box->setObjectName(QStringLiteral("section_") + d.section);
    auto* v = new QVBoxLayout(sec->box);
    sec->basic = new QFormLayout;
    sec->basic->setFieldGrowthPolicy(QFormLayout::ExpandingFieldsGrow);
    v->addLayout(sec->basic);
    m_content->insertWidget(m_content->count() - 1, sec->box);
    sections.insert(d.section, sec);
    m_sections.append(sec);
  }
  if (d.advanced && !sec->advanced) {
    auto* v = static_cast<QVBoxLayout*>(sec->box->layout());
    sec->toggle = new QToolButton(sec->box);
    sec->toggle->setText(tr("Advanced"));
    sec->toggle->setCheckable(true);
    sec->toggle->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    sec->toggle->setArrowType(Qt::RightArrow);
    sec->toggle->setAutoRaise(true);
    sec->advanced = new QWidget(sec->box);
    sec->advancedLayout = new QFormLayout(sec->advanced);
    sec->advancedLayout->setContentsMargins(12, 0, 0, 0);
    sec->advancedLayout->setFieldGrowthPolicy(QFormLayout::ExpandingFieldsGrow);
    sec->advanced->hide();
    v->addWidget(sec->toggle);
    v->addWidget(sec->advanced);
    QToolButton* tb = sec->toggle;
    QWidget* panel = sec->advanced;
    connect(tb, &QToolButton::toggled, this, [tb, panel](bool on) {
      panel->setVisible(on);
      tb->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
    });
  }
  return sec;
}

// The editor of option d (its type's), showing `initial`; each edit emits changed(path).
QWidget* OptionForm::makeEditor(const OptionDesc& d, const QVariant& initial, QWidget* parent) {
  const QString path = d.path();
  switch (d.type) {
    case OptionDesc::Int: {
      // No range on the editor: a value out of range is kept as typed and
      // reported on this field (rangeError), never clamped silently.
      const bool ranged = d.min < d.max;
      QSpinBox* e =
          d.optional ? new OptionalSpinBox(parent, unsetText(), ranged ? int(std::max(d.min, double(INT_MIN + 1))) : 0,
                                           ranged ? int(std::max(d.min, double(INT_MIN + 1))) : INT_MIN + 1)
                     : new QSpinBox(parent);
      e->setRange(INT_MIN, INT_MAX);
      e->setValue(d.optional && !hasValue(initial) ? INT_MIN : initial.toInt());
      connect(e, qOverload<int>(&QSpinBox::valueChanged), this, [this, path] { emitChanged(path); });
      return e;
    }
    case OptionDesc::Float: {
      auto* e = new ScientificSpinBox(parent);  // unbounded, see Int
      if (d.optional) e->setOptional(unsetText(), d.min < d.max ? d.min : 0.0, d.min < d.max ? d.min : -DBL_MAX);
      if (d.optional && !hasValue(initial)) e->unset();
      else e->setValue(initial.toDouble());
      connect(e, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this, path] { emitChanged(path); });
      return e;
    }
    case OptionDesc::Bool: {
      auto* e = new QCheckBox(parent);
      if (d.optional) {
        // Partially checked = unset; the text says so.
        e->setTristate(true);
        auto showState = [e] { e->setText(e->checkState() == Qt::PartiallyChecked ? unsetText() : QString()); };
        qt_compat::onCheckStateChanged(e, e, showState);
        e->setCheckState(hasValue(initial) ? (initial.toBool() ? Qt::Checked : Qt::Unchecked) : Qt::PartiallyChecked);
        showState();
        qt_compat::onCheckStateChanged(e, this, [this, path] { emitChanged(path); });
      } else {
        e->setChecked(initial.toBool());
        connect(e, &QCheckBox::toggled, this, [this, path] { emitChanged(path); });
      }
      return e;
    }
    case OptionDesc::Enum: {
      auto* e = new QComboBox(parent);
      e->addItems(d.choices);
      const int idx = d.choices.indexOf(initial.toString());
      e->setCurrentIndex(idx >= 0 ? idx : (d.choices.isEmpty() ? -1 : 0));
      connect(e, &QComboBox::currentTextChanged, this, [this, path] { emitChanged(path); });
      return e;
    }
    case OptionDesc::String:
    default: {
      auto* e = new QLineEdit(parent);
      e->setText(hasValue(initial) ? initial.toString() : QString());
      if (d.optional) e->setPlaceholderText(unsetText());  // empty = unset
      connect(e, &QLineEdit::textChanged, this, [this, path] { emitChanged(path); });
      return e;
    }
  }
}

// The widget of a field's row: its editor in a frame (with a Browse... button for a file) over its
// error label.
QWidget* OptionForm::fieldCell(Field* f, QWidget* parent) {
  const OptionDesc& d = f->desc;
  const QString path = d.path();
  // Field cell: [frame(editor)] over [error label].
  auto* cell = new QWidget(parent);
  auto* cv = new QVBoxLayout(cell);
  cv->setContentsMargins(0, 0, 0, 0);
  cv->setSpacing(1);
  f->frame = new QFrame(cell);
  f->frame->setObjectName(QStringLiteral("csFieldFrame"));
  auto* fl = new QHBoxLayout(f->frame);
  fl->setContentsMargins(2, 2, 2, 2);
  f->editor->setParent(f->frame);
  fl->addWidget(f->editor);
  if (d.type == OptionDesc::Bool) fl->addStretch(1);
  if (auto* line = qobject_cast<QLineEdit*>(f->editor); line && !d.fileFilter.isEmpty()) {
    auto* b = new QToolButton(f->frame);
    b->setText(tr("Browse..."));
    b->setObjectName(path + QStringLiteral(".browse"));
    b->setToolTip(tr("Choose the file of %1").arg(path));
    fl->addWidget(b);
    f->browse = b;
    const QString caption = tr("Choose %1").arg(d.label.isEmpty() ? d.key : d.label), filter = d.fileFilter;
    connect(b, &QToolButton::clicked, this, [this, line, caption, filter] {
      const QString start = line->text().isEmpty() ? QString() : QFileInfo(line->text()).absolutePath();
      const QString chosen = fileChooser() ? fileChooser()(this, caption, start, filter)
                                           : QFileDialog::getOpenFileName(this, caption, start, filter);
      if (!chosen.isEmpty()) line->setText(chosen);  // textChanged: the form's changed()
    });
  }
  cv->addWidget(f->frame);
  f->error = new WrapLabel(cell);
  f->error->setObjectName(QStringLiteral("csFieldError"));
  f->error->setStyleSheet(QStringLiteral("color: #d32f2f;"));
  f->error->hide();
  cv->addWidget(f->error);
  return cell;
}

void OptionForm::setOptions(const QList<OptionDesc>& options) {
  m_building = true;
  // Tear down.
  for (Section* s : m_sections) delete s->box;
  qDeleteAll(m_sections);
  qDeleteAll(m_fields);
  m_sections.clear();
  m_fields.clear();
  m_byPath.clear();
  m_generalErrors.clear();
  m_generalError->hide();

  QHash<QString, Section*> sections;
  for (const OptionDesc& d : options) {
    Section* sec = sectionFor(sections, d);
    auto* f = new Field;
    f->desc = d;
    f->section = d.section;
    const QString path = d.path();
    const QVariant initial = d.value.isValid() ? d.value : d.defaultValue;
    QWidget* parent = d.advanced ? sec->advanced : sec->box;
    f->editor = makeEditor(d, initial, parent);
    f->editor->setObjectName(path);
    f->editor->setToolTip(d.help);
    if (qobject_cast<QAbstractSpinBox*>(f->editor) || qobject_cast<QComboBox*>(f->editor)) {
      // The wheel changes a value only when the field has focus: scrolling the form never edits it.
      f->editor->setFocusPolicy(Qt::StrongFocus);
      f->editor->installEventFilter(this);
    }
    QWidget* cell = fieldCell(f, parent);
    f->label = new QLabel(d.label.isEmpty() ? d.key : d.label, parent);
    f->label->setToolTip(d.help);
    f->label->setBuddy(f->editor);
    (d.advanced ? sec->advancedLayout : sec->basic)->addRow(f->label, cell);
    m_fields.append(f);
    m_byPath.insert(path, f);
  }
  m_building = false;
  settleLayout();
}

void OptionForm::settleLayout() {
  // A widget added to a visible parent's layout is shown by a queued call, so for one pass
  // of the event loop the new sections are hidden: the body's minimum size (hence the scroll
  // area's size for it) is taken without them, and the rows are laid out squeezed into the
  // old height until something else (a label changing its height) makes the scroll area
  // look again. Show them now and lay the body and its scroll area out at once.
  for (Section* sec : m_sections)
    if (sec->box->isHidden()) sec->box->setVisible(true);
  m_content->activate();
  m_content->update();
  if (m_scroll) {
    QEvent ev(QEvent::LayoutRequest);  // QScrollArea: its widget's size and the scroll range
    QCoreApplication::sendEvent(m_scroll, &ev);
  }
  m_content->activate();
}

QList<OptionDesc> OptionForm::options() const {
  QList<OptionDesc> out;
  for (const Field* f : m_fields) {
    OptionDesc d = f->desc;
    d.value = editorValue(*f);
    out << d;
  }
  return out;
}

QStringList OptionForm::paths() const {
  QStringList out;
  for (const Field* f : m_fields) out << f->desc.path();
  return out;
}

QVariant OptionForm::editorValue(const Field& f) const {
  switch (f.desc.type) {
    case OptionDesc::Int:
      return static_cast<QSpinBox*>(f.editor)->value();
    case OptionDesc::Float:
      return static_cast<QDoubleSpinBox*>(f.editor)->value();
    case OptionDesc::Bool:
      return static_cast<QCheckBox*>(f.editor)->isChecked();
    case OptionDesc::Enum:
      return static_cast<QComboBox*>(f.editor)->currentText();
    case OptionDesc::String:
    default:
      return static_cast<QLineEdit*>(f.editor)->text();
  }
}

bool OptionForm::isUnset(const Field& f) const {
  if (!f.desc.optional) return false;
  switch (f.desc.type) {
    case OptionDesc::Int: {
      auto* e = static_cast<QSpinBox*>(f.editor);
      return e->value() == e->minimum();
    }
    case OptionDesc::Float:
      return static_cast<ScientificSpinBox*>(f.editor)->isUnset();
    case OptionDesc::Bool:
      return static_cast<QCheckBox*>(f.editor)->checkState() == Qt::PartiallyChecked;
    case OptionDesc::Enum:
      return false;
    case OptionDesc::String:
    default:
      return static_cast<QLineEdit*>(f.editor)->text().isEmpty();
  }
}

void OptionForm::unset(Field& f) {
  switch (f.desc.type) {
    case OptionDesc::Int: {
      auto* e = static_cast<QSpinBox*>(f.editor);
      e->setValue(e->minimum());
      break;
    }
    case OptionDesc::Float:
      static_cast<ScientificSpinBox*>(f.editor)->unset();
      break;
    case OptionDesc::Bool:
      static_cast<QCheckBox*>(f.editor)->setCheckState(Qt::PartiallyChecked);
      break;
    case OptionDesc::Enum:
      break;
    case OptionDesc::String:
    default:
      static_cast<QLineEdit*>(f.editor)->clear();
      break;
  }
}

QVariantMap OptionForm::values() const {
  QVariantMap out;
  for (const Field* f : m_fields)
    if (!isUnset(*f)) out.insert(f->desc.path(), editorValue(*f));
  return out;
}

QVariant OptionForm::value(const QString& path) const {
  const Field* f = field(path);
  return f && !isUnset(*f) ? editorValue(*f) : QVariant();
}

bool OptionForm::isUnset(const QString& path) const {
  const Field* f = field(path);
  return f && isUnset(*f);
}

bool OptionForm::setValue(const QString& path, const QVariant& v) {
  Field* f = field(path);
  if (!f) return false;
  if (f->desc.optional && f->desc.type != OptionDesc::Enum && !hasValue(v)) {
    unset(*f);
    return true;
  }
  bool ok = true;
  switch (f->desc.type) {
    case OptionDesc::Int: {
      const int i = v.toInt(&ok);
      if (ok) static_cast<QSpinBox*>(f->editor)->setValue(i);
      break;
    }
    case OptionDesc::Float: {
      const double d = v.toDouble(&ok);
      if (ok) static_cast<QDoubleSpinBox*>(f->editor)->setValue(d);
      break;
    }
    case OptionDesc::Bool:
      static_cast<QCheckBox*>(f->editor)->setCheckState(v.toBool() ? Qt::Checked : Qt::Unchecked);
      break;
    case OptionDesc::Enum: {
      auto* cb = static_cast<QComboBox*>(f->editor);
      const int idx = cb->findText(v.toString());
      ok = idx >= 0;
      if (ok) cb->setCurrentIndex(idx);
      break;
    }
    case OptionDesc::String:
    default:
      static_cast<QLineEdit*>(f->editor)->setText(v.toString());
      break;
  }
  return ok;
}

void OptionForm::setValues(const QVariantMap& values) {
  for (auto it = values.constBegin(); it != values.constEnd(); ++it) setValue(it.key(), it.value());
}

void OptionForm::resetToDefaults() {
  for (Field* f : m_fields) {
    if (f->desc.optional && !hasValue(f->desc.defaultValue)) unset(*f);
    else if (f->desc.defaultValue.isValid()) setValue(f->desc.path(), f->desc.defaultValue);
  }
}

// The wheel over a spin box or combo box changes its value only when the field has the focus
// and the form is not being scrolled: a wheel event that reaches the scroll area (the form
// scrolled) starts a gesture, and a field passed under the pointer within kScrollGestureMs of
// the last one lets the form go on scrolling, focused or not (before, a focused field caught
// the scroll: "hidden 64 became 59").
bool OptionForm::eventFilter(QObject* watched, QEvent* event) {
  constexpr qint64 kScrollGestureMs = 400;
  if (event->type() == QEvent::Wheel) {
    if (watched == m_scroll->viewport()) {
      m_wheelScroll.start();
      return false;  // the scroll area scrolls
    }
    auto* w = qobject_cast<QWidget*>(watched);
    const bool scrolling = m_wheelScroll.isValid() && m_wheelScroll.elapsed() < kScrollGestureMs;
    if (w && (!w->hasFocus() || scrolling)) {
      event->ignore();  // QApplication passes it on to the parents: the form scrolls
      return true;
    }
  }
  return QWidget::eventFilter(watched, event);
}

QString OptionForm::rangeError(const QString& path) const {
  const Field* f = field(path);
  if (!f || !(f->desc.min < f->desc.max)) return QString();
  if (f->desc.type != OptionDesc::Int && f->desc.type != OptionDesc::Float) return QString();
  if (isUnset(*f)) return QString();
  const double v = editorValue(*f).toDouble();
  if (v >= f->desc.min && v <= f->desc.max) return QString();
  return tr("%1 is out of range: must be in [%2, %3]")
      .arg(QString::number(v, 'g', 10), QString::number(f->desc.min, 'g', 10), QString::number(f->desc.max, 'g', 10));
}

QStringList OptionForm::rangeErrors() const {
  QStringList out;
  for (const Field* f : m_fields) {
    const QString e = rangeError(f->desc.path());
    if (!e.isEmpty()) out << f->desc.path() + QStringLiteral(": ") + e;
  }
  return out;
}

void OptionForm::emitChanged(const QString& path) {
  if (m_building) return;
  Q_EMIT changed(path, value(path));
}

void OptionForm::setFrameError(Field& f, bool error) {
  f.frame->setStyleSheet(
      error ? QStringLiteral("QFrame#csFieldFrame { border: 1px solid #d32f2f; border-radius: 3px; }") : QString());
  f.frame->setProperty("csError", error);
}

void OptionForm::setError(const QString& path, const QString& message) {
  Field* f = field(path);
  if (!f) {
    m_generalErrors << QStringLiteral("%1: %2").arg(path, message);
    static_cast<WrapLabel*>(m_generalError)->setMessage(m_generalErrors.join(QLatin1Char('\n')));
    m_generalError->show();
    return;
  }
  f->error->show();
  static_cast<WrapLabel*>(f->error)->setMessage(message);
  setFrameError(*f, true);
  if (f->desc.advanced) setAdvancedExpanded(f->section, true);
}

void OptionForm::clearError(const QString& path) {
  Field* f = field(path);
  if (!f) return;
  f->error->clear();
  f->error->hide();
  setFrameError(*f, false);
}

void OptionForm::clearErrors() {
  for (Field* f : m_fields) clearError(f->desc.path());
  m_generalErrors.clear();
  m_generalError->clear();
  m_generalError->hide();
}

bool OptionForm::hasErrors() const {
  if (!m_generalErrors.isEmpty()) return true;
  for (const Field* f : m_fields)
    if (!f->error->text().isEmpty()) return true;
  return false;
}

QString OptionForm::errorText(const QString& path) const {
  const Field* f = field(path);
  return f ? f->error->text() : QString();
}

QWidget* OptionForm::editor(const QString& path) const {
  const Field* f = field(path);
  return f ? f->editor : nullptr;
}

QLabel* OptionForm::errorLabel(const QString& path) const {
  const Field* f = field(path);
  return f ? f->error : m_generalError;
}

QWidget* OptionForm::advancedPanel(const QString& section) const {
  for (const Section* s : m_sections)
    if (s->name == section) return s->advanced;
  return nullptr;
}

void OptionForm::setAdvancedExpanded(const QString& section, bool expanded) {
  for (Section* s : m_sections)
    if (s->name == section && s->toggle) s->toggle->setChecked(expanded);
}

}  // namespace csw
