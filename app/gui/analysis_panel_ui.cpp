// The Analyses tab's widgets and their connections (AnalysisPanel::buildUi); the
// panel's behaviour is in analysis_panel.cpp.
#include "analysis_panel.h"

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QShortcut>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTextBrowser>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>

#include "core_bridge.h"
#include "curve_plot.h"
#include "figure_bridge.h"
#include "heatmap_view.h"
#include "qcp.h"
#include "run_table.h"

namespace gui {

void AnalysisPanel::buildUi() {
  // Controls on the left (scrolled), the figure over the training curve on the right; built in
  // the order the widgets were always created (tab order).
  auto* outer = new QHBoxLayout(this);
  outer->setContentsMargins(4, 4, 4, 4);
  auto* split = new QSplitter(Qt::Horizontal);
  outer->addWidget(split);
  split->addWidget(buildControls());
  split->addWidget(buildFigureSide());
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setSizes({390, 1200});
  populateKinds();
  connectControls();
  installShortcuts();
}

// Run, comparison run, analysis and its help; the inputs; the checkpoint; Compute; the exports.
QScrollArea* AnalysisPanel::buildControls() {
  auto* controls = new QWidget;
  auto* cv = new QVBoxLayout(controls);
  cv->setContentsMargins(2, 2, 2, 2);
  auto* form = new QFormLayout;
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  m_runA = new QComboBox;
  m_runA->setObjectName(QStringLiteral("analysisRun"));
  m_runA->setToolTip(QStringLiteral("The run to analyse; the checkpoint slider scrubs through its checkpoints"));
  m_runB = new QComboBox;
  m_runB->setToolTip(
      QStringLiteral("A second run, side by side (relevance) or overlaid (length, metric over time), "
                     "on the same text and the same evaluation data as the first run; it is viewed at "
                     "its checkpoint nearest to the first run's step (the caption says when the steps "
                     "differ)"));
  m_kind = new QComboBox;
  m_kind->setObjectName(QStringLiteral("analysisKind"));
  m_kind->setToolTip(QStringLiteral("The analysis"));
  form->addRow(QStringLiteral("&Run"), m_runA);
  form->addRow(QStringLiteral("Compare &with"), m_runB);
  form->addRow(QStringLiteral("&Analysis"), m_kind);
  cv->addLayout(form);

  m_help = new QTextBrowser;
  m_help->setObjectName(QStringLiteral("analysisHelp"));
  m_help->setOpenLinks(false);
  m_help->setMinimumHeight(90);
  m_help->setMaximumHeight(170);
  cv->addWidget(m_help);

  cv->addWidget(buildInputsBox());
  cv->addWidget(buildCheckpointBox());
  m_computeButton = new QPushButton(QStringLiteral("Compute (Ctrl+Return)"));
  m_computeButton->setDefault(true);
  cv->addWidget(m_computeButton);

  cv->addLayout(buildExportRow());

  m_status = new QLabel;
  m_status->setObjectName(QStringLiteral("analysisStatus"));
  m_status->setWordWrap(true);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
  cv->addWidget(m_status);
  cv->addStretch(1);

  auto* controlsScroll = new QScrollArea;
  controlsScroll->setWidget(controls);
  controlsScroll->setWidgetResizable(true);
  controlsScroll->setMinimumWidth(360);
  controlsScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);  // wrap to the width instead
  for (QComboBox* c : {m_runA, m_runB, m_kind, m_split, m_colorMap}) {
    c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    c->setMinimumContentsLength(12);
  }
  controlsScroll->setFrameShape(QFrame::NoFrame);
  return controlsScroll;
}

// The analysis's inputs (text, last K, position, split, edges, bins, colour map); each row is
// shown only for the kinds that use it (m_row*).
QGroupBox* AnalysisPanel::buildInputsBox() {
  auto* inputs = new QGroupBox(QStringLiteral("Inputs"));
  auto* inForm = new QFormLayout(inputs);
  inForm->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  m_text = new QPlainTextEdit;
  m_text->setPlaceholderText(
      QStringLiteral("Text to analyse (empty: the start of the first run's valid split, "
                     "the same for both runs)"));
  m_text->setMaximumHeight(80);
  m_text->setTabChangesFocus(true);
  m_corpusButton = new QPushButton(QStringLiteral("From &corpus"));
  m_corpusButton->setToolTip(QStringLiteral("Fill in text from the run's corpus (the start of its valid split)"));
  auto* textLabel = new QLabel(QStringLiteral("&Text"));
  textLabel->setBuddy(m_text);
  auto* textBox = new QWidget;
  auto* tl = new QVBoxLayout(textBox);
  tl->setContentsMargins(0, 0, 0, 0);
  tl->addWidget(m_text);
  tl->addWidget(m_corpusButton, 0, Qt::AlignLeft);
  inForm->addRow(textLabel, textBox);
  m_rowText = {textLabel, textBox};

  m_lastK = new QSpinBox;
  m_lastK->setRange(1, 2000);
  m_lastK->setValue(20);
  m_lastK->setToolTip(QStringLiteral("Relevance: rows = the last K characters of the text"));
  auto* kLabel = new QLabel(QStringLiteral("Last &K"));
  kLabel->setBuddy(m_lastK);
  inForm->addRow(kLabel, m_lastK);
  m_rowK = {kLabel, m_lastK};

  // Label, range and tooltip follow the kind (positionInputFor: a character, or a question).
  m_position = new QSpinBox;
  m_position->setRange(-1, 100000);
  m_position->setValue(-1);
  auto* pLabel = new QLabel;
  pLabel->setBuddy(m_position);
  m_positionLabel = pLabel;
  inForm->addRow(pLabel, m_position);
  m_rowPos = {pLabel, m_position};

  m_split = new QComboBox;
  m_split->addItems({QStringLiteral("test"), QStringLiteral("valid"), QStringLiteral("train")});
  auto* sLabel = new QLabel(QStringLiteral("S&plit"));
  sLabel->setBuddy(m_split);
  inForm->addRow(sLabel, m_split);
  m_rowSplit = {sLabel, m_split};

  m_edges = new QLineEdit;
  m_edges->setPlaceholderText(QStringLiteral("default (e.g. 0,10,...,90,120)"));
  m_edges->setToolTip(
      QStringLiteral("Bucket edges e0 < e1 < ...: bucket i covers lengths (e_i, e_i+1]. "
                     "Empty: the task's default (char_lm: the MZU paper's, '9' = (90,120])"));
  auto* eLabel = new QLabel(QStringLiteral("&Edges"));
  eLabel->setBuddy(m_edges);
  inForm->addRow(eLabel, m_edges);
  m_rowEdges = {eLabel, m_edges};

  m_bins = new QSpinBox;
  m_bins->setRange(2, 200);
  m_bins->setValue(20);
  auto* bLabel = new QLabel(QStringLiteral("&Bins"));
  bLabel->setBuddy(m_bins);
  inForm->addRow(bLabel, m_bins);
  m_rowBins = {bLabel, m_bins};

  m_colorMap = new QComboBox;
  m_colorMap->addItems(colorMapNames());
  m_colorMap->setToolTip(QStringLiteral("Colour map of the heatmaps"));
  auto* cLabel = new QLabel(QStringLiteral("Colour &map"));
  cLabel->setBuddy(m_colorMap);
  inForm->addRow(cLabel, m_colorMap);
  m_rowCmap = {cLabel, m_colorMap};
  return inputs;
}

// The checkpoint slider and its label.
QGroupBox* AnalysisPanel::buildCheckpointBox() {
  auto* ckBox = new QGroupBox(QStringLiteral("Checkpoint"));
  auto* ckl = new QVBoxLayout(ckBox);
  m_slider = new QSlider(Qt::Horizontal);
  m_slider->setObjectName(QStringLiteral("checkpointSlider"));
  m_slider->setRange(0, 0);
  m_slider->setPageStep(1);
  m_slider->setTickPosition(QSlider::TicksBelow);
  m_slider->setToolTip(QStringLiteral("Scrub through the run's checkpoints (Alt+Left / Alt+Right)"));
  m_checkpointLabel = new QLabel(QStringLiteral("no checkpoints"));
  ckl->addWidget(m_slider);
  ckl->addWidget(m_checkpointLabel);
  return ckBox;
}

// One button per figure format (and the CSV).
QHBoxLayout* AnalysisPanel::buildExportRow() {
  auto* exportRow = new QHBoxLayout;
  exportRow->addWidget(new QLabel(QStringLiteral("Export:")));
  const QList<QPair<QString, QString>> formats = {{QStringLiteral("PNG"), QStringLiteral("png")},
                                                  {QStringLiteral("PDF"), QStringLiteral("pdf")},
                                                  {QStringLiteral("SVG"), QStringLiteral("svg")},
                                                  {QStringLiteral("CSV"), QStringLiteral("csv")}};
  for (const auto& f : formats) {
    auto* b = new QPushButton(f.first);
    b->setObjectName(QStringLiteral("export_") + f.second);
    b->setToolTip(QStringLiteral("Export the figure as %1").arg(f.first));
    b->setMinimumWidth(40);
    b->setMaximumWidth(64);
    const QString suffix = f.second;
    connect(b, &QPushButton::clicked, this,
            [this, suffix] { exportInteractive(QStringLiteral("%1 (*.%2)").arg(suffix.toUpper(), suffix), suffix); });
    exportRow->addWidget(b);
  }
  return exportRow;
}

// The figure (scrolled) over the training curve with the viewed checkpoint marked.
QSplitter* AnalysisPanel::buildFigureSide() {
  auto* right = new QSplitter(Qt::Vertical);
  m_figureArea = new QScrollArea;
  m_figureArea->setObjectName(QStringLiteral("analysisFigureArea"));
  m_figureArea->setWidgetResizable(true);
  m_figureArea->setBackgroundRole(QPalette::Base);
  auto* placeholder = new QLabel(QStringLiteral("Pick a run and an analysis, then Compute (Ctrl+Return)."));
  placeholder->setAlignment(Qt::AlignCenter);
  m_figureArea->setWidget(placeholder);
  right->addWidget(m_figureArea);
  m_curve = new csw::CurvePlot;
  m_curve->setObjectName(QStringLiteral("analysisTrainingCurve"));
  m_curve->setToolbarVisible(false);
  m_curve->setTitle(QStringLiteral("Training curve (marker: the checkpoint viewed)"));
  m_curve->setXLabel(QStringLiteral("step"));
  m_curve->setMinimumHeight(150);
  right->addWidget(m_curve);
  right->setStretchFactor(0, 3);
  right->setStretchFactor(1, 1);
  right->setSizes({560, 200});
  return right;
}

void AnalysisPanel::connectControls() {
  connect(m_runA, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { onRunChanged(); });
  connect(m_runB, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
    if (m_autoRecompute) m_debounce->start();
  });
  connect(m_kind, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { onKindChanged(); });
  connect(m_slider, &QSlider::valueChanged, this, &AnalysisPanel::onSliderMoved);
  connect(m_computeButton, &QPushButton::clicked, this, &AnalysisPanel::compute);
  connect(m_corpusButton, &QPushButton::clicked, this, &AnalysisPanel::fillDefaultText);
  connect(m_colorMap, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
    if (!m_figure) return;
    applyFigureColorMap(m_figure, m_colorMap->currentText());
  });
}

// Ctrl+Return computes, Alt+Left / Alt+Right scrub the checkpoints, Ctrl+Shift+E / C export.
void AnalysisPanel::installShortcuts() {
  auto shortcut = [this](const QKeySequence& k, auto slot) {
    auto* s = new QShortcut(k, this);
    s->setContext(Qt::WidgetWithChildrenShortcut);
    connect(s, &QShortcut::activated, this, slot);
  };
  shortcut(QKeySequence(QStringLiteral("Ctrl+Return")), [this] { compute(); });
  shortcut(QKeySequence(QStringLiteral("Ctrl+Enter")), [this] { compute(); });
  shortcut(QKeySequence(QStringLiteral("Alt+Left")), [this] { previousCheckpoint(); });
  shortcut(QKeySequence(QStringLiteral("Alt+Right")), [this] { nextCheckpoint(); });
  shortcut(QKeySequence(QStringLiteral("Ctrl+Shift+E")),
           [this] { exportInteractive(QStringLiteral("Figures (*.png *.pdf *.svg)"), QStringLiteral("png")); });
  shortcut(QKeySequence(QStringLiteral("Ctrl+Shift+C")),
           [this] { exportInteractive(QStringLiteral("CSV (*.csv)"), QStringLiteral("csv")); });
}

}  // namespace gui
