#include "generate_panel.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSaveFile>
#include <QSpinBox>
#include <QTextCursor>
#include <QTextEdit>
#include <QThread>
#include <QVBoxLayout>

#include <cmath>

#include "run_table.h"
#include "worker_thread.h"

namespace gui {

void GenerateWorker::generate(const GenRequest& r) { Q_EMIT done(runGeneration(r)); }

QColor GeneratePanel::shade(double prob) {
  int r = 255, g = 255, b = 255;
  surprisalColour(prob, &r, &g, &b);  // the CLI's HTML shading too
  return QColor(r, g, b);
}

GeneratePanel::GeneratePanel(RunTableModel* runs, QWidget* parent) : QWidget(parent), m_runs(runs) {
  qRegisterMetaType<gui::GenRequest>("gui::GenRequest");
  qRegisterMetaType<gui::GenResult>("gui::GenResult");
  auto* form = new QFormLayout;
  m_runCombo = new QComboBox;
  m_runCombo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_runCombo->setToolTip(tr("A char_lm or word_lm run of the workspace"));
  m_checkpoint = new QComboBox;
  m_checkpoint->setToolTip(tr("The checkpoint to sample from: best (lowest validation loss), last, or a saved step"));
  auto* runRow = new QHBoxLayout;
  runRow->addWidget(m_runCombo, 1);
  runRow->addWidget(new QLabel(tr("Checkpoint")));
  runRow->addWidget(m_checkpoint);
  form->addRow(tr("Run"), runRow);
  m_seedText = new QLineEdit(QStringLiteral("Call me Ishmael. "));
  m_seedText->setToolTip(tr("Text fed to the model before sampling (its tokens are scored and underlined)"));
  form->addRow(tr("Seed &text"), m_seedText);
  auto* params = new QHBoxLayout;
  m_length = new QSpinBox;
  m_length->setRange(1, 20000);
  m_length->setValue(300);
  m_length->setToolTip(tr("Tokens to generate: characters for a char-LM, words for a word-LM"));
  m_temperature = new QDoubleSpinBox;
  m_temperature->setRange(0.0, 5.0);
  m_temperature->setSingleStep(0.1);
  m_temperature->setDecimals(2);
  m_temperature->setValue(0.8);
  m_temperature->setToolTip(tr("softmax(logits / T); 0 = greedy (always the most probable token)"));
  m_seed = new QSpinBox;
  m_seed->setRange(0, 1000000000);
  m_seed->setValue(1);
  m_seed->setToolTip(tr("The sampler's random seed: the same seed gives the same text"));
  m_topK = new QSpinBox;
  m_topK->setRange(0, 100000);
  m_topK->setSpecialValueText(tr("all"));
  m_topK->setToolTip(tr("Sample among the k most probable tokens only"));
  params->addWidget(new QLabel(tr("Length")));
  params->addWidget(m_length);
  params->addWidget(new QLabel(tr("Temperature")));
  params->addWidget(m_temperature);
  params->addWidget(new QLabel(tr("Seed")));
  params->addWidget(m_seed);
  params->addWidget(new QLabel(tr("Top-k")));
  params->addWidget(m_topK);
  params->addStretch(1);
  form->addRow(tr("Sampling"), params);

  m_go = new QPushButton(tr("&Generate"));
  m_go->setShortcut(QKeySequence(QStringLiteral("Ctrl+G")));
  m_go->setToolTip(tr("Generate (Ctrl+G)"));
  m_save = new QPushButton(tr("Save as &HTML..."));
  auto* copy = new QPushButton(tr("&Copy text"));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(m_go);
  buttons->addWidget(copy);
  buttons->addWidget(m_save);
  buttons->addStretch(1);
  // legend: the shading ramp
  auto* legend = new QLabel;
  QString ramp;
  for (int bits : {0, 2, 4, 6, 8, 10})
    ramp += QStringLiteral("<span style=\"background:%1\">&nbsp;%2%3&nbsp;</span>")
                .arg(shade(std::exp2(-bits)).name())
                .arg(bits)
                .arg(bits == 10 ? QStringLiteral("+") : QString());
  legend->setText(tr("surprisal of each token, -log2 p (bits): ") + ramp +
                  tr(" &nbsp; (seed text underlined; hover for p)"));
  legend->setObjectName(QStringLiteral("surprisalLegend"));
  legend->setWordWrap(true);  // its own row, wrapped: beside the buttons it widened the tab past a 1024 px window

  m_text = new QTextEdit;
  m_text->setReadOnly(true);
  QFont mono(QStringLiteral("Monospace"));
  mono.setStyleHint(QFont::TypeWriter);
  mono.setPointSize(11);
  m_text->setFont(mono);
  m_text->setPlaceholderText(tr("Pick a char-LM or word-LM run and press Generate (Ctrl+G)."));
  m_status = new QLabel;
  m_status->setWordWrap(true);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* lay = new QVBoxLayout(this);
  lay->addLayout(form);
  lay->addLayout(buttons);
  lay->addWidget(legend);
  lay->addWidget(m_text, 1);
  lay->addWidget(m_status);

  m_worker = startWorkerThread<GenerateWorker>(this, &m_thread, QStringLiteral("cellscope-generate"));
  connect(this, &GeneratePanel::requestGeneration, m_worker, &GenerateWorker::generate, Qt::QueuedConnection);
  connect(m_worker, &GenerateWorker::done, this, &GeneratePanel::show, Qt::QueuedConnection);

  connect(m_go, &QPushButton::clicked, this, &GeneratePanel::generate);
  connect(m_seedText, &QLineEdit::returnPressed, this, &GeneratePanel::generate);
  connect(copy, &QPushButton::clicked, this, [this] { QApplication::clipboard()->setText(plainText()); });
  connect(m_save, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save sample as HTML"), QStringLiteral("sample.html"),
                                                      tr("HTML (*.html)"));
    QString err;
    if (!path.isEmpty() && !saveHtml(path, &err)) m_status->setText(err);
  });
  connect(m_runCombo, &QComboBox::currentIndexChanged, this, [this] { refreshCheckpoints(); });
  if (m_runs) {
    connect(m_runs, &QAbstractItemModel::modelReset, this, &GeneratePanel::refreshRuns);
    connect(m_runs, &QAbstractItemModel::rowsInserted, this, &GeneratePanel::refreshRuns);
    connect(m_runs, &QAbstractItemModel::dataChanged, this, [this] {
      if (m_runCombo->count() == 0) refreshRuns();
    });
  }
  m_save->setEnabled(false);
  refreshRuns();
}

GeneratePanel::~GeneratePanel() { stopWorkerThread(m_thread); }

QStringList GeneratePanel::runDirs() const {
  QStringList d;
  for (int i = 0; i < m_runCombo->count(); ++i) d << m_runCombo->itemData(i).toString();
  return d;
}

void GeneratePanel::refreshRuns() {
  const QString keep = m_runCombo->currentData().toString();
  QSignalBlocker block(m_runCombo);
  m_runCombo->clear();
  if (m_runs) {
    for (const RunInfo& r : m_runs->runs()) {
      const QString task = r.config.value(QStringLiteral("task")).toObject().value(QStringLiteral("name")).toString();
      if (task != QStringLiteral("char_lm") && task != QStringLiteral("word_lm")) continue;
      if (!QFileInfo::exists(r.dir + QStringLiteral("/checkpoints"))) continue;
      const QString cell = r.config.value(QStringLiteral("model")).toObject().value(QStringLiteral("cell")).toString();
      // The run's label first (as the Compare and Analyses tabs name it), its folder after it.
      const QString name = r.label.isEmpty() ? r.name : QStringLiteral("%1  (%2)").arg(r.label, r.name);
      m_runCombo->addItem(QStringLiteral("%1  [%2, %3]").arg(name, task, cell), r.dir);
    }
  }
  const int i = m_runCombo->findData(keep);
  m_runCombo->setCurrentIndex(i >= 0 ? i : m_runCombo->count() - 1);  // default: the newest run
  block.unblock();
  refreshCheckpoints();
  m_go->setEnabled(m_runCombo->count() > 0 && !m_busy);
}

void GeneratePanel::refreshCheckpoints() {
  const QString keep = m_checkpoint->currentText();
  m_checkpoint->clear();
  const QString dir = m_runCombo->currentData().toString();
  if (dir.isEmpty()) return;
  QDir cp(dir + QStringLiteral("/checkpoints"));
  QStringList items;
  if (cp.exists(QStringLiteral("best.pt"))) items << QStringLiteral("best");
  if (cp.exists(QStringLiteral("last.pt"))) items << QStringLiteral("last");
  QList<int> steps;
  for (const QString& f : cp.entryList({QStringLiteral("step_*.pt")}, QDir::Files)) {
    bool ok = false;
    const int s = f.mid(5, f.size() - 8).toInt(&ok);
    if (ok) steps << s;
  }
  std::sort(steps.begin(), steps.end());
  for (int s : steps) items << QString::number(s);
  m_checkpoint->addItems(items);
  const int i = m_checkpoint->findText(keep);
  if (i >= 0) m_checkpoint->setCurrentIndex(i);
}

bool GeneratePanel::selectRun(const QString& dir) {
  refreshRuns();
  const int i = m_runCombo->findData(QDir(dir).absolutePath());
  const int j = i >= 0 ? i : m_runCombo->findData(dir);
  if (j < 0) return false;
  m_runCombo->setCurrentIndex(j);
  return true;
}

GenRequest GeneratePanel::request() const {
  GenRequest r;
  r.runDir = m_runCombo->currentData().toString();
  r.checkpoint = m_checkpoint->currentText().isEmpty() ? QStringLiteral("best") : m_checkpoint->currentText();
  r.seedText = m_seedText->text();
  r.length = m_length->value();
  r.temperature = m_temperature->value();
  r.seed = static_cast<quint64>(m_seed->value());
  r.topK = m_topK->value();
  return r;
}

void GeneratePanel::setRequest(const GenRequest& r) {
  if (!r.runDir.isEmpty()) selectRun(r.runDir);
  const int i = m_checkpoint->findText(r.checkpoint);
  if (i >= 0) m_checkpoint->setCurrentIndex(i);
  m_seedText->setText(r.seedText);
  m_length->setValue(r.length);
  m_temperature->setValue(r.temperature);
  m_seed->setValue(static_cast<int>(r.seed));
  m_topK->setValue(r.topK);
}

void GeneratePanel::generate() {
  if (m_busy) return;
  GenRequest r = request();
  if (r.runDir.isEmpty()) {
    m_status->setText(tr("No char_lm or word_lm run with a checkpoint in this workspace yet: train one first."));
    return;
  }
  m_busy = true;
  m_go->setEnabled(false);
  m_status->setText(tr("Generating %1 tokens...").arg(r.length));
  Q_EMIT requestGeneration(r);
}

void GeneratePanel::show(const GenResult& r) {
  m_busy = false;
  m_go->setEnabled(m_runCombo->count() > 0);
  m_last = r;
  if (!r.error.isEmpty()) {
    m_status->setText(tr("Could not generate: %1").arg(r.error));
    m_save->setEnabled(false);
    Q_EMIT finished(false);
    return;
  }
  m_text->clear();
  QTextCursor c(m_text->document());
  c.beginEditBlock();
  int generated = 0;
  for (const GenToken& t : r.tokens) {
    QTextCharFormat f;
    f.setBackground(shade(t.prob));
    f.setForeground(Qt::black);
    f.setFontUnderline(t.seed);
    f.setToolTip(std::isfinite(t.prob) ? tr("p = %1").arg(t.prob, 0, 'g', 3) : tr("first token (nothing precedes it)"));
    c.insertText(t.text, f);
    if (!t.seed) ++generated;
  }
  c.endEditBlock();
  QString s = tr("%1 %2 generated in %3 s; %4 bits per %5 under the model.")
                  .arg(generated)
                  .arg(r.task == QStringLiteral("word_lm") ? tr("words") : tr("characters"))
                  .arg(r.seconds, 0, 'f', 2)
                  .arg(r.bitsPerToken, 0, 'f', 2)
                  .arg(r.task == QStringLiteral("word_lm") ? tr("word") : tr("character"));
  if (r.unknownSeed > 0)
    s += tr(" %1 seed token(s) are not in the run's vocabulary (fed as <unk>).").arg(r.unknownSeed);
  m_status->setText(s);
  m_save->setEnabled(true);
  Q_EMIT finished(true);
}

QString GeneratePanel::plainText() const { return m_text->toPlainText(); }
QString GeneratePanel::statusText() const { return m_status->text(); }

QString GeneratePanel::toHtml() const { return m_last.html; }

bool GeneratePanel::saveHtml(const QString& path, QString* error) const {
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly) || f.write(toHtml().toUtf8()) < 0 || !f.commit()) {
    if (error) *error = tr("Could not write %1: %2").arg(path, f.errorString());
    return false;
  }
  return true;
}

}  // namespace gui
