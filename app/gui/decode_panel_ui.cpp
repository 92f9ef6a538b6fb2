// The Decode tab's widgets, their connections and the worker thread (the constructor and its
// build*() / connect*() steps); the panel's behaviour is in decode_panel.cpp.
#include "decode_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QShortcut>
#include <QSplitter>
#include <QSpinBox>
#include <QTableWidget>
#include <QThread>
#include <QVBoxLayout>

#include <algorithm>

#include "run_table.h"
#include "worker_thread.h"

namespace gui {

DecodePanel::DecodePanel(RunTableModel* runs, QWidget* parent) : QWidget(parent), m_runs(runs) {
  qRegisterMetaType<gui::DecodeJob>("gui::DecodeJob");
  qRegisterMetaType<gui::DecodeTable>("gui::DecodeTable");

  // The groups top to bottom, built in the order the widgets were always created (tab order).
  QFormLayout* form = buildSourceForm();
  QHBoxLayout* run = buildRunRow();
  QHBoxLayout* resultRow = buildResultRow();
  QSplitter* split = buildResultTables();
  m_status = buildStatusLabel();

  auto* lay = new QVBoxLayout(this);
  lay->addLayout(form);
  lay->addLayout(run);
  lay->addWidget(m_status);
  lay->addLayout(resultRow);
  lay->addWidget(split, 1);

  connectWorker();
  connectControls();
  installShortcuts();
  connectRunModel();
  refreshRuns();
}

// What to decode: the run, its checkpoints and the decoding parameters.
QFormLayout* DecodePanel::buildSourceForm() {
  auto* form = new QFormLayout;
  m_runCombo = new QComboBox;
  m_runCombo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_runCombo->setMinimumContentsLength(24);
  m_runCombo->setToolTip(tr("A seq2seq run of the workspace (headline generation, translation)"));
  form->addRow(tr("&Run"), m_runCombo);
  m_checkpoints = new QListWidget;
  m_checkpoints->setObjectName(QStringLiteral("decodeCheckpoints"));
  m_checkpoints->setFlow(QListView::LeftToRight);
  m_checkpoints->setWrapping(true);
  m_checkpoints->setMaximumHeight(64);
  m_checkpoints->setToolTip(
      tr("Tick the checkpoints to decode: best (lowest validation loss), last, or a saved "
         "step. Each keeps its own table of outputs."));
  form->addRow(tr("Checkpoints"), m_checkpoints);

  auto* params = new QHBoxLayout;
  m_split = new QComboBox;
  m_split->addItems({QStringLiteral("valid"), QStringLiteral("test"), QStringLiteral("train")});
  m_split->setToolTip(tr("The split whose first examples are decoded"));
  m_beam = new QSpinBox;
  m_beam->setRange(1, 100);
  m_beam->setValue(10);
  m_beam->setToolTip(tr("Beam width (10 as in the MC-RNN paper); 1 = greedy decoding"));
  m_lengthPenalty = new QDoubleSpinBox;
  m_lengthPenalty->setRange(0.0, 5.0);
  m_lengthPenalty->setSingleStep(0.1);
  m_lengthPenalty->setDecimals(2);
  m_lengthPenalty->setValue(1.0);
  m_lengthPenalty->setToolTip(tr("Alpha of the length normalisation of the beam's scores (0 = none)"));
  m_examples = new QSpinBox;
  m_examples->setRange(0, 1000000);
  m_examples->setValue(20);
  m_examples->setSpecialValueText(tr("all"));
  m_examples->setToolTip(tr("Decode the first N examples of the split (all = the whole split)"));
  m_maxLength = new QSpinBox;
  m_maxLength->setRange(0, 10000);
  m_maxLength->setSpecialValueText(tr("task default"));
  m_maxLength->setToolTip(tr("The longest hypothesis in tokens (task default = the run's setting)"));
  const QList<QPair<QString, QWidget*>> fields = {{tr("Split"), m_split},
                                                  {tr("Beam"), m_beam},
                                                  {tr("Length penalty"), m_lengthPenalty},
                                                  {tr("Examples"), m_examples},
                                                  {tr("Max length"), m_maxLength}};
  for (const auto& f : fields) {
    params->addWidget(new QLabel(f.first));
    params->addWidget(f.second);
  }
  params->addStretch(1);
  form->addRow(tr("Decoding"), params);
  return form;
}

// Decode / Cancel and the progress of the job.
QHBoxLayout* DecodePanel::buildRunRow() {
  m_decodeButton = new QPushButton(tr("&Decode (Ctrl+Return)"));
  m_cancelButton = new QPushButton(tr("Cancel (Esc)"));
  m_cancelButton->setEnabled(false);
  m_progress = new QProgressBar;
  m_progress->setRange(0, kProgressMax);
  m_progress->setValue(0);
  m_progress->setTextVisible(true);
  m_progress->setFormat(QStringLiteral("%p%"));
  m_progress->setMinimumWidth(160);
  m_progressLabel = new QLabel;
  m_progressLabel->setObjectName(QStringLiteral("decodeProgressLabel"));
  auto* run = new QHBoxLayout;
  run->addWidget(m_decodeButton);
  run->addWidget(m_cancelButton);
  run->addWidget(m_progress, 1);
  run->addWidget(m_progressLabel, 2);
  return run;
}

// The table selector and its buttons; the buttons are local, so their clicks are connected here.
QHBoxLayout* DecodePanel::buildResultRow() {
  m_tableCombo = new QComboBox;
  m_tableCombo->setObjectName(QStringLiteral("decodeTableSelector"));
  m_tableCombo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_tableCombo->setToolTip(tr("The decoded checkpoint whose outputs the table shows (Alt+Left / Alt+Right)"));
  auto* copy = new QPushButton(tr("&Copy"));
  copy->setToolTip(tr("Copy the selected rows (all rows when none is selected) as TSV (Ctrl+C)"));
  auto* exportCsv = new QPushButton(tr("Export CS&V..."));
  exportCsv->setToolTip(tr("Export the table as CSV (Ctrl+Shift+C)"));
  auto* exportTsv = new QPushButton(tr("Export &TSV..."));
  exportTsv->setToolTip(tr("Export the table as TSV (Ctrl+Shift+T)"));
  m_exportAll = new QCheckBox(tr("all checkpoints"));
  m_exportAll->setToolTip(tr("Export the tables of every decoded checkpoint, one after another"));
  auto* clear = new QPushButton(tr("Clear"));
  clear->setToolTip(tr("Forget every decoded table"));
  auto* resultRow = new QHBoxLayout;
  resultRow->addWidget(new QLabel(tr("Outputs of")));
  resultRow->addWidget(m_tableCombo, 1);
  resultRow->addWidget(copy);
  resultRow->addWidget(exportCsv);
  resultRow->addWidget(exportTsv);
  resultRow->addWidget(m_exportAll);
  resultRow->addWidget(clear);
  connect(copy, &QPushButton::clicked, this, &DecodePanel::copySelection);
  connect(exportCsv, &QPushButton::clicked, this, [this] { exportInteractive(TableFormat::Csv); });
  connect(exportTsv, &QPushButton::clicked, this, [this] { exportInteractive(TableFormat::Tsv); });
  connect(clear, &QPushButton::clicked, this, &DecodePanel::clearTables);
  return resultRow;
}

// The metrics table (with the scorers' signatures) above the samples table.
QSplitter* DecodePanel::buildResultTables() {
  m_metrics = new QTableWidget;
  m_metrics->setObjectName(QStringLiteral("decodeMetrics"));
  m_metrics->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_metrics->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_metrics->setSelectionMode(QAbstractItemView::SingleSelection);
  m_metrics->verticalHeader()->hide();
  // Each column as wide as its header and numbers; the spare width stays empty on the right
  // rather than going to the last metric.
  m_metrics->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_metrics->horizontalHeader()->setStretchLastSection(false);
  m_metrics->setToolTip(
      tr("Corpus BLEU and ROUGE F1 (0-100) of each decoded checkpoint, and of the lead baseline "
         "(the first words of the source) on the same examples; the best checkpoint per column "
         "in bold. Click a row to see its outputs."));

  m_samples = new QTableWidget;
  m_samples->setObjectName(QStringLiteral("decodeSamples"));
  m_samples->setColumnCount(5);
  m_samples->setHorizontalHeaderLabels({tr("#"), tr("Source"), tr("Reference"), tr("Hypothesis"), tr("Score")});
  m_samples->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_samples->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_samples->setSelectionMode(QAbstractItemView::ExtendedSelection);
  m_samples->setWordWrap(false);
  m_samples->verticalHeader()->hide();
  QHeaderView* h = m_samples->horizontalHeader();
  h->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  h->setSectionResizeMode(1, QHeaderView::Stretch);
  h->setSectionResizeMode(2, QHeaderView::Stretch);
  h->setSectionResizeMode(3, QHeaderView::Stretch);
  h->setSectionResizeMode(4, QHeaderView::ResizeToContents);
  m_samples->horizontalHeaderItem(4)->setToolTip(tr("The hypothesis' score under the model, as the beam ranks it"));

  // What the scores are, as the outside tools print it: sacreBLEU's signature and rouge-score's
  // settings (core/base/data/text_metrics.h), so a number here can be set beside a published one.
  auto* metricsBox = new QWidget;
  auto* mv = new QVBoxLayout(metricsBox);
  mv->setContentsMargins(0, 0, 0, 0);
  mv->addWidget(m_metrics, 1);
  auto* signatures = new QLabel(tr("BLEU: %1   ROUGE: %2").arg(bleuSignature(), rougeSignature()));
  signatures->setObjectName(QStringLiteral("metricSignatures"));
  signatures->setTextInteractionFlags(Qt::TextSelectableByMouse);
  signatures->setStyleSheet(QStringLiteral("color: palette(mid);"));
  signatures->setWordWrap(true);  // two lines in a narrow window rather than a tab wider than it
  signatures->setToolTip(
      tr("BLEU is a port of sacreBLEU's default (13a tokenisation, mixed case, exp smoothing); "
         "ROUGE-1/2/L F1 follow rouge-score's tokenizer, averaged over the pairs "
         "(core/model/tasks/SEQ2SEQ_NOTES.md, Metrics). `cellscope-cli decode --hyp-out H "
         "--ref-out R` writes the texts for outside scorers."));
  mv->addWidget(signatures);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(metricsBox);
  split->addWidget(m_samples);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 4);
  split->setChildrenCollapsible(false);
  m_metrics->setMinimumHeight(70);
  m_samples->setMinimumHeight(120);
  return split;
}

// The one-line status under the controls.
QLabel* DecodePanel::buildStatusLabel() {
  m_status = new QLabel(tr("Pick a seq2seq run and its checkpoints, then Decode (Ctrl+Return)."));
  m_status->setObjectName(QStringLiteral("decodeStatus"));
  m_status->setWordWrap(true);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
  return m_status;
}

// The decode worker on its own thread, and its results back to the panel.
void DecodePanel::connectWorker() {
  m_worker = startWorkerThread<DecodeWorker>(this, &m_thread, QStringLiteral("cellscope-decode"));
  connect(this, &DecodePanel::requestDecode, m_worker, &DecodeWorker::decode, Qt::QueuedConnection);
  connect(m_worker, &DecodeWorker::progress, this, &DecodePanel::onProgress, Qt::QueuedConnection);
  connect(m_worker, &DecodeWorker::tableReady, this, &DecodePanel::onTable, Qt::QueuedConnection);
  connect(
      m_worker, &DecodeWorker::failed, this,
      [this](const QString& message) {
        m_failed = true;
        m_status->setText(tr("Could not decode: %1").arg(message));
      },
      Qt::QueuedConnection);
  connect(
      m_worker, &DecodeWorker::cancelled, this, [this] { m_wasCancelled = true; }, Qt::QueuedConnection);
  connect(m_worker, &DecodeWorker::finished, this, &DecodePanel::onDone, Qt::QueuedConnection);
}

// The controls of the panel (the result row's buttons are connected in buildResultRow()).
void DecodePanel::connectControls() {
  connect(m_decodeButton, &QPushButton::clicked, this, &DecodePanel::decode);
  connect(m_cancelButton, &QPushButton::clicked, this, &DecodePanel::cancel);
  connect(m_runCombo, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
    refreshCheckpoints();
    takeRunDefaults();
  });
  connect(m_tableCombo, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int i) { showTable(i); });
  connect(m_metrics, &QTableWidget::currentCellChanged, this, [this](int row, int, int, int) {
    if (row >= 0 && row < m_metricsRowTable.size() && m_metricsRowTable[row] >= 0)
      setCurrentTable(m_metricsRowTable[row]);
  });
}

// The panel's keyboard shortcuts (active while the focus is inside the panel).
void DecodePanel::installShortcuts() {
  auto shortcut = [this](const QKeySequence& k, auto slot) {
    auto* s = new QShortcut(k, this);
    s->setContext(Qt::WidgetWithChildrenShortcut);
    connect(s, &QShortcut::activated, this, slot);
  };
  shortcut(QKeySequence(QStringLiteral("Ctrl+Return")), [this] { decode(); });
  shortcut(QKeySequence(QStringLiteral("Ctrl+Enter")), [this] { decode(); });
  shortcut(QKeySequence(Qt::Key_Escape), [this] { cancel(); });
  shortcut(QKeySequence(QStringLiteral("Alt+Left")), [this] { setCurrentTable(std::max(0, currentTable() - 1)); });
  shortcut(QKeySequence(QStringLiteral("Alt+Right")), [this] { setCurrentTable(currentTable() + 1); });
  shortcut(QKeySequence::Copy, [this] { copySelection(); });
  shortcut(QKeySequence(QStringLiteral("Ctrl+Shift+C")), [this] { exportInteractive(TableFormat::Csv); });
  shortcut(QKeySequence(QStringLiteral("Ctrl+Shift+T")), [this] { exportInteractive(TableFormat::Tsv); });
}

// Follow the workspace's runs: new, removed and updated runs.
void DecodePanel::connectRunModel() {
  if (m_runs) {
    connect(m_runs, &QAbstractItemModel::modelReset, this, &DecodePanel::refreshRuns);
    connect(m_runs, &QAbstractItemModel::rowsInserted, this, &DecodePanel::refreshRuns);
    connect(m_runs, &QAbstractItemModel::rowsRemoved, this, &DecodePanel::refreshRuns);
    // A run that saves its first checkpoint (or a new step_N) while the tab is open.
    connect(m_runs, &RunTableModel::runUpdated, this, [this](const QString& dir) {
      if (m_busy) return;
      if (m_runCombo->findData(dir) < 0) refreshRuns();
      else if (dir == currentRun()) refreshCheckpoints();
    });
  }
}

DecodePanel::~DecodePanel() {
  m_worker->cancel();  // a decode still going stops at its next example
  stopWorkerThread(m_thread);
}

}  // namespace gui
