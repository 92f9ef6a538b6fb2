#include "compare_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QEvent>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QSet>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QTableWidget>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

#include "core_bridge.h"
#include "curve_plot.h"
#include "export.h"
#include "figure_export.h"
#include "run_table.h"

namespace gui {

ComparePanel::ComparePanel(FigureExporter* exporter, QWidget* parent) : QWidget(parent), m_exporter(exporter) {
  // The run table above, the plot and the config diff side by side below, built in the order the
  // widgets were always created (tab order).
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(buildRunTable());
  auto* bottom = new QSplitter(Qt::Horizontal);
  bottom->addWidget(buildPlotBox());
  bottom->addWidget(buildDiffBox());
  bottom->setStretchFactor(0, 3);
  bottom->setStretchFactor(1, 1);
  bottom->setSizes({700, 300});
  split->addWidget(bottom);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  v->addWidget(split, 1);
  updateControlRows();
  watchWorkspace();
}

// The filter, the CSV export and the table of runs (sorted, filtered, columns fitted to their text).
QWidget* ComparePanel::buildRunTable() {
  auto* tableBox = new QWidget;
  auto* tv = new QVBoxLayout(tableBox);
  tv->setContentsMargins(0, 0, 0, 0);
  auto* frow = new QHBoxLayout;
  m_filterEdit = new QLineEdit;
  m_filterEdit->setPlaceholderText(QStringLiteral("Filter runs (name, cell, status, config...)"));
  m_filterEdit->setClearButtonEnabled(true);
  frow->addWidget(m_filterEdit, 1);
  auto* exportTable = new QToolButton;
  exportTable->setText(QStringLiteral("Export CSV..."));
  connect(exportTable, &QToolButton::clicked, this, &ComparePanel::exportTableInteractive);
  frow->addWidget(exportTable);
  tv->addLayout(frow);
  m_runModel = new RunTableModel(this);
  m_runProxy = new QSortFilterProxyModel(this);
  m_runProxy->setSourceModel(m_runModel);
  m_runProxy->setSortRole(RunTableModel::SortRole);
  m_runProxy->setFilterKeyColumn(-1);
  m_runProxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
  connect(m_filterEdit, &QLineEdit::textChanged, m_runProxy, &QSortFilterProxyModel::setFilterFixedString);
  m_runView = new QTableView;
  m_runView->setModel(m_runProxy);
  m_runView->setSortingEnabled(true);
  m_runView->sortByColumn(RunTableModel::Name, Qt::DescendingOrder);
  m_runView->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_runView->setSelectionMode(QAbstractItemView::ExtendedSelection);
  m_runView->setAlternatingRowColors(true);
  m_runView->verticalHeader()->hide();
  m_runView->verticalHeader()->setDefaultSectionSize(22);
  m_runView->horizontalHeader()->setStretchLastSection(true);
  // Long run names elide in the middle (the date and the cell stay); the full name is the tooltip.
  m_runView->setTextElideMode(Qt::ElideMiddle);
  m_runView->setWordWrap(false);
  // What tells runs apart first, the rest after it (only the view's order: the CSV keeps the model's).
  {
    QHeaderView* h = m_runView->horizontalHeader();
    const int order[] = {RunTableModel::Name,       RunTableModel::Status,    RunTableModel::Task,
                         RunTableModel::Cell,       RunTableModel::BestValid, RunTableModel::Test,
                         RunTableModel::Step,       RunTableModel::BestStep,  RunTableModel::Params,
                         RunTableModel::Throughput, RunTableModel::Processes, RunTableModel::Differs};
    for (int visual = 0; visual < int(std::size(order)); ++visual)
      h->moveSection(h->visualIndex(order[visual]), visual);
    connect(h, &QHeaderView::sectionResized, this, [this](int logical, int, int) {
      if (!m_fittingColumns) m_userSizedColumns.insert(logical);  // the user's width stays
    });
  }
  m_fitColumnsTimer = new QTimer(this);
  m_fitColumnsTimer->setSingleShot(true);
  m_fitColumnsTimer->setInterval(0);
  connect(m_fitColumnsTimer, &QTimer::timeout, this, &ComparePanel::fitColumns);
  connect(m_runProxy, &QAbstractItemModel::modelReset, m_fitColumnsTimer, qOverload<>(&QTimer::start));
  connect(m_runProxy, &QAbstractItemModel::layoutChanged, m_fitColumnsTimer, qOverload<>(&QTimer::start));
  connect(m_runProxy, &QAbstractItemModel::rowsInserted, m_fitColumnsTimer, qOverload<>(&QTimer::start));
  connect(m_runProxy, &QAbstractItemModel::dataChanged, m_fitColumnsTimer, qOverload<>(&QTimer::start));
  m_runView->setToolTip(
      QStringLiteral("Tick runs to overlay their curves; select two to see their config diff; "
                     "double-click to show a run in the Training tab"));
  tv->addWidget(m_runView, 1);
  connect(m_runModel, &RunTableModel::checkedChanged, this, [this] {
    updateCompareMetrics();
    redraw();
  });
  connect(m_runView->selectionModel(), &QItemSelectionModel::selectionChanged, this, &ComparePanel::updateDiff);
  connect(m_runView, &QTableView::doubleClicked, this, [this](const QModelIndex& idx) {
    const RunInfo* r = m_runModel->run(m_runProxy->mapToSource(idx).row());
    if (r) Q_EMIT showRunRequested(r->dir);
  });
  return tableBox;
}

// The overlay plot and its controls (metric, x axis, seed aggregation) on as many rows as it needs.
QWidget* ComparePanel::buildPlotBox() {
  auto* plotBox = new QWidget;
  auto* pv = new QVBoxLayout(plotBox);
  pv->setContentsMargins(0, 0, 0, 0);
  m_compareMetric = new QComboBox;
  m_compareMetric->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_seedBox = new QCheckBox(QStringLiteral("Aggregate seeds"));
  m_seedBox->setToolTip(QStringLiteral("Runs that differ only in training.seed are drawn as their mean with a band"));
  m_bandCombo = new QComboBox;
  m_bandCombo->addItems({QStringLiteral("min-max band"), QStringLiteral("mean \u00b1 std band")});
  m_xAxisCombo = new QComboBox;
  m_xAxisCombo->addItems({QStringLiteral("Step"), QStringLiteral("Epoch"), QStringLiteral("Wall-clock time"),
                          QStringLiteral("Training FLOPs")});
  m_xAxisCombo->setToolTip(QStringLiteral(
      "x axis of the compared curves: step-matched (Step), or compute-matched: wall-clock training time or "
      "training FLOPs (3 x the cells' analytic forward FLOPs), so cells that differ in cost per step are "
      "compared at equal compute"));
  m_xNote = new QLabel;
  m_xNote->setWordWrap(true);
  m_xNote->hide();
  // The controls in three groups (metric, x axis, seed aggregation) that flow onto as many rows
  // as the plot's width needs (updateControlRows), so the Compare tab fits a 1024x700 window
  // whatever the metric names. A long metric name elides in the combo (the list shows it whole).
  m_compareMetric->setMaximumWidth(240);
  auto group = [](std::initializer_list<QWidget*> widgets) {
    auto* g = new QWidget;
    auto* l = new QHBoxLayout(g);
    l->setContentsMargins(0, 0, 12, 0);
    for (QWidget* w : widgets) l->addWidget(w);
    return g;
  };
  m_controlGroups = {group({new QLabel(QStringLiteral("Metric:")), m_compareMetric}),
                     group({new QLabel(QStringLiteral("X:")), m_xAxisCombo}), group({m_seedBox, m_bandCombo})};
  m_controls = new QWidget;
  auto* cv = new QVBoxLayout(m_controls);
  cv->setContentsMargins(0, 0, 0, 0);
  for (int i = 0; i < 3; ++i) {
    auto* row = new QHBoxLayout;
    row->addStretch(1);
    cv->addLayout(row);
    m_controlRows << row;
  }
  pv->addWidget(m_controls);
  pv->addWidget(m_xNote);
  m_comparePlot = m_exporter->newPlot(QStringLiteral("Comparison"), QStringLiteral("value"), xAxisLabel(m_xAxis));
  pv->addWidget(m_comparePlot, 1);
  connect(m_compareMetric, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { redraw(); });
  connect(m_xAxisCombo, qOverload<int>(&QComboBox::currentIndexChanged), this,
          [this](int i) { setXAxis(static_cast<XAxis>(i)); });
  connect(m_seedBox, &QCheckBox::toggled, this, [this] { redraw(); });
  connect(m_bandCombo, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { redraw(); });
  m_plotBox = plotBox;
  plotBox->installEventFilter(this);
  return plotBox;
}

// The config diff of the two selected runs: a heading and an option / A / B table.
QWidget* ComparePanel::buildDiffBox() {
  auto* diffBox = new QWidget;
  auto* dv = new QVBoxLayout(diffBox);
  dv->setContentsMargins(0, 0, 0, 0);
  m_diffLabel = new QLabel(QStringLiteral("Select two runs to see how their configs differ."));
  m_diffLabel->setWordWrap(true);
  // Never wider than the diff's column: run names elide in the middle (updateDiffLabel), the
  // full names are in the tooltip.
  m_diffLabel->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  m_diffLabel->setMinimumWidth(1);
  m_diffLabel->installEventFilter(this);
  m_diffTable = new QTableWidget(0, 3);
  m_diffTable->setHorizontalHeaderLabels({QStringLiteral("Option"), QStringLiteral("A"), QStringLiteral("B")});
  // Both value columns always in view, however narrow the panel (1024x700): they share the width
  // left by the option names and elide; the full text is in each cell's tooltip.
  m_diffTable->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Interactive);
  m_diffTable->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
  m_diffTable->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Stretch);
  m_diffTable->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  m_diffTable->setTextElideMode(Qt::ElideMiddle);
  m_diffTable->verticalHeader()->hide();
  m_diffTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
  dv->addWidget(m_diffLabel);
  dv->addWidget(m_diffTable, 1);
  diffBox->setMinimumWidth(240);
  return diffBox;
}

// Workspace watching: new run directories (CLI or GUI) and summary updates.
void ComparePanel::watchWorkspace() {
  m_watcher = new QFileSystemWatcher(this);
  m_rescanTimer = new QTimer(this);
  m_rescanTimer->setSingleShot(true);
  m_rescanTimer->setInterval(300);
  connect(m_rescanTimer, &QTimer::timeout, this, &ComparePanel::rescanWorkspace);
  connect(m_watcher, &QFileSystemWatcher::directoryChanged, m_rescanTimer, qOverload<>(&QTimer::start));
  m_refreshTimer = new QTimer(this);
  m_refreshTimer->setInterval(2000);
  connect(m_refreshTimer, &QTimer::timeout, this, &ComparePanel::periodicRefresh);
  m_refreshTimer->start();
}

void ComparePanel::setWorkspace(const QString& abs) {
  if (!m_watcher->directories().isEmpty()) m_watcher->removePaths(m_watcher->directories());
  m_workspace = abs;
  m_watcher->addPath(abs);
  m_metricsCache.clear();
  m_runModel->setRuns(scanWorkspace(abs));
  m_userSizedColumns.clear();
  fitColumns();
  updateCompareMetrics();
  redraw();
}

void ComparePanel::refreshRun(const QString& dir) {
  m_runModel->refreshRun(dir);
  m_metricsCache.remove(QFileInfo(dir).absoluteFilePath());
}

void ComparePanel::fitColumns() {
  // Each column as wide as its header and cells, within limits: the run name between 120 and
  // 260 px (longer ones elide in the middle), any other column at most 200 px; the last
  // (differing config) takes the rest. A column the user resized keeps its width.
  QHeaderView* h = m_runView->horizontalHeader();
  m_fittingColumns = true;
  for (int c = 0; c < RunTableModel::ColumnCount; ++c) {
    if (c == RunTableModel::Differs || m_userSizedColumns.contains(c)) continue;
    int w = std::max(h->sectionSizeHint(c), static_cast<QAbstractItemView*>(m_runView)->sizeHintForColumn(c));
    if (c == RunTableModel::Name) w = std::clamp(w, 120, 260);
    else w = std::min(w, 200);
    if (h->sectionSize(c) != w) h->resizeSection(c, w);
  }
  m_fittingColumns = false;
}

bool ComparePanel::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_plotBox && event->type() == QEvent::Resize) updateControlRows();
  if (watched == m_diffLabel && event->type() == QEvent::Resize && !m_diffNames.isEmpty()) updateDiffLabel();
  return QWidget::eventFilter(watched, event);
}

void ComparePanel::updateControlRows() {
  // Greedy: each group on the current row while the row's size hints fit the plot's width, else
  // on the next row. The controls' minimum width is the widest group's (set explicitly: the
  // layout of the moment would ask for a whole row), so the plot can be narrow enough to wrap.
  int widest = 0;
  for (QWidget* g : m_controlGroups) widest = std::max(widest, g->sizeHint().width());
  if (m_controls->minimumWidth() != widest) m_controls->setMinimumWidth(widest);
  QVector<int> rowOf;
  int row = 0, used = 0;
  for (QWidget* g : m_controlGroups) {
    const int w = g->sizeHint().width();
    if (used > 0 && used + w > m_plotBox->width() && row + 1 < m_controlRows.size()) {
      ++row;
      used = 0;
    }
    rowOf << row;
    used += w;
  }
  if (rowOf == m_controlRowOf) return;
  m_controlRowOf = rowOf;
  for (QWidget* g : m_controlGroups)
    for (QHBoxLayout* r : m_controlRows) r->removeWidget(g);
  for (int i = 0; i < m_controlGroups.size(); ++i) {
    QHBoxLayout* r = m_controlRows[rowOf[i]];
    r->insertWidget(r->count() - 1, m_controlGroups[i]);  // before the row's stretch
  }
}

void ComparePanel::setXAxis(XAxis axis) {
  if (axis == m_xAxis && m_xAxisCombo->currentIndex() == int(axis)) return;
  m_xAxis = axis;
  if (m_xAxisCombo->currentIndex() != int(axis)) {
    m_xAxisCombo->blockSignals(true);
    m_xAxisCombo->setCurrentIndex(int(axis));
    m_xAxisCombo->blockSignals(false);
  }
  m_comparePlot->setXLabel(xAxisLabel(m_xAxis));
  redraw();
}

QString ComparePanel::xAxisNote() const { return m_xNote->isHidden() ? QString() : m_xNote->text(); }

QString ComparePanel::compareMetric() const { return m_compareMetric->currentData().toString(); }

bool ComparePanel::setCompareMetric(const QString& key) {
  const int i = m_compareMetric->findData(key);
  if (i < 0) return false;
  m_compareMetric->setCurrentIndex(i);
  return true;
}

void ComparePanel::selectRows(const QList<int>& rows) {
  auto* sel = m_runView->selectionModel();
  for (int r : rows) sel->select(m_runProxy->index(r, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
}

bool ComparePanel::exportRunTable(const QString& path, QString* error) {
  return csw::writeCsvFile(m_runModel->toCsv(), path, error);
}

void ComparePanel::rescanWorkspace() {
  // New run directories (from the CLI or this window) and removed ones.
  QDir d(m_workspace);
  const QStringList names = d.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name);
  bool removed = false;
  QSet<QString> present;
  for (const QString& n : names) present.insert(d.absoluteFilePath(n));
  for (const RunInfo& r : m_runModel->runs())
    if (!present.contains(r.dir)) removed = true;
  if (removed) {
    const QStringList checked = m_runModel->checkedDirs();
    m_runModel->setRuns(scanWorkspace(m_workspace));
    for (const QString& c : checked) m_runModel->setChecked(c, true);
    return;
  }
  for (const QString& n : names) {
    const QString abs = d.absoluteFilePath(n);
    if (m_runModel->rowOf(abs) < 0) m_runModel->refreshRun(abs);
  }
}

void ComparePanel::periodicRefresh() {
  // summary.json of running runs (a CLI run in the same workspace, or ours).
  bool overlayChanged = false;
  const QStringList checked = m_runModel->checkedDirs();
  for (int i = 0; i < m_runModel->rowCount(); ++i) {
    const RunInfo* r = m_runModel->run(i);
    if (!r || r->status() != QLatin1String("running")) continue;
    const QFileInfo fi(QDir(r->dir).filePath(QStringLiteral("summary.json")));
    if (fi.lastModified() == r->summaryTime) continue;
    const QString dir = r->dir;
    m_runModel->refreshRun(dir);
    if (checked.contains(dir)) overlayChanged = true;
  }
  if (overlayChanged) redraw();
}

const QVector<MetricPoint>& ComparePanel::metricsOf(const QString& dir) {
  const QString path = QDir(dir).filePath(QStringLiteral("metrics.jsonl"));
  const qint64 size = QFileInfo(path).size();
  CachedMetrics& c = m_metricsCache[dir];
  if (c.size != size) {
    c.points = readMetricsFile(path);
    c.size = size;
  }
  return c.points;
}

void ComparePanel::updateCompareMetrics() {
  // Offer every series the ticked runs have: "valid <metric>" and "train <key>".
  const QString previous = m_compareMetric->currentData().toString();
  QStringList keys;
  QString preferred;
  for (const QString& dir : m_runModel->checkedDirs()) {
    const RunInfo* r = m_runModel->run(m_runModel->rowOf(dir));
    if (r && preferred.isEmpty() && !r->summary.value(QStringLiteral("primary_metric")).toString().isEmpty())
      preferred = QStringLiteral("valid|") + r->summary.value(QStringLiteral("primary_metric")).toString();
    for (const MetricPoint& p : metricsOf(dir)) {
      const QString prefix = p.eval ? (p.split.isEmpty() ? QStringLiteral("valid") : p.split) : QStringLiteral("train");
      for (const auto& kv : p.values) {
        const QString k = prefix + QLatin1Char('|') + kv.first;
        if (!keys.contains(k)) keys << k;
      }
    }
  }
  std::sort(keys.begin(), keys.end(), [](const QString& a, const QString& b) {
    const bool va = a.startsWith(QLatin1String("valid")), vb = b.startsWith(QLatin1String("valid"));
    return va != vb ? va : a < b;
  });
  m_compareMetric->blockSignals(true);
  m_compareMetric->clear();
  for (const QString& k : keys) m_compareMetric->addItem(QString(k).replace(QLatin1Char('|'), QLatin1Char(' ')), k);
  int idx = m_compareMetric->findData(previous);
  if (idx < 0) idx = m_compareMetric->findData(preferred);
  m_compareMetric->setCurrentIndex(idx >= 0 ? idx : 0);
  m_compareMetric->blockSignals(false);
}

void ComparePanel::setSeedAggregation(bool on, bool stdBand) {
  m_bandCombo->setCurrentIndex(stdBand ? 1 : 0);
  m_seedBox->setChecked(on);
  redraw();
}

void ComparePanel::redraw() {
  csw::CurvePlot* plot = m_comparePlot;
  plot->clear();
  Overlay o;
  o.sel = m_compareMetric->currentData().toString();
  o.split = o.sel.section(QLatin1Char('|'), 0, 0);
  o.key = o.sel.section(QLatin1Char('|'), 1);
  plot->setYLabel(o.sel.isEmpty() ? QStringLiteral("value")
                                  : QString(o.sel).replace(QLatin1Char('|'), QLatin1Char(' ')));
  plot->setXLabel(xAxisLabel(m_xAxis));
  m_xNote->hide();
  m_xNote->clear();
  const QStringList dirs = m_runModel->checkedDirs();
  plot->setSubject(QString());
  if (o.sel.isEmpty() || dirs.isEmpty()) {
    plot->setTitle(QStringLiteral("Comparison: tick runs in the table"));
    plot->resetView();
    plot->replotIfDirty();
    return;
  }
  plot->setTitle(QStringLiteral("Comparison: ") + QString(o.sel).replace(QLatin1Char('|'), QLatin1Char(' ')));
  const QList<QStringList> groups = seedGroups(dirs);
  QStringList firsts;
  for (const QStringList& g : groups) firsts << g.first();
  const QStringList names = legendNames(firsts, m_seedBox->isChecked());
  setCaption(groups, names);
  for (int gi = 0; gi < groups.size(); ++gi) {
    if (groups[gi].size() == 1) drawRun(o, groups[gi].first(), names.value(gi));
    else drawSeedMean(o, groups[gi], names.value(gi));
  }
  showNotes(o);
  plot->resetView();
  plot->replotIfDirty();
}

// The points of one run's series on the x axis. Points without a value on the x axis (training
// FLOPs in a metrics file written before they were recorded) are not drawn, never put at 0: the
// run is named under the plot.
void ComparePanel::collectSeries(Overlay& o, const QString& dir, QVector<double>* xs, QVector<double>* ys,
                                 QVector<qint64>* steps) {
  bool missing = false;
  for (const MetricPoint& p : metricsOf(dir)) {
    const QString ps = p.eval ? (p.split.isEmpty() ? QStringLiteral("valid") : p.split) : QStringLiteral("train");
    if (ps != o.split || !p.has(o.key)) continue;
    const double x = xOf(p, m_xAxis);
    if (!std::isfinite(x)) {
      missing = true;
      continue;
    }
    xs->append(x);
    ys->append(p.value(o.key, 0));
    if (steps) steps->append(p.step);
  }
  if (missing && !o.withoutX.contains(dir)) o.withoutX << dir;
}

// Legends: each run's label, else the options that differ between the ticked runs,
// abbreviated (cs::comparison_names, the same names as the analyses and the CLI).
QStringList ComparePanel::legendNames(const QStringList& runDirs, bool skipSeed) const {
  QList<ComparedRun> runs;
  for (const QString& dir : runDirs) {
    const RunInfo* r = m_runModel->run(m_runModel->rowOf(dir));
    ComparedRun run;
    run.dir = dir;
    run.hasConfig = r != nullptr;
    if (r) run.config = r->config;
    runs << run;
  }
  return comparisonNames(runs, skipSeed ? QStringList{QStringLiteral("training.seed")} : QStringList());
}

// The curves to draw: runs that differ only in their seed grouped when seeds are aggregated,
// else one group per run.
QList<QStringList> ComparePanel::seedGroups(const QStringList& dirs) const {
  QList<QStringList> groups;
  if (m_seedBox->isChecked()) {
    QMap<QString, int> byKey;
    for (const QString& dir : dirs) {
      const RunInfo* r = m_runModel->run(m_runModel->rowOf(dir));
      const QString k = seedGroupKey(*r);
      if (!byKey.contains(k)) {
        byKey.insert(k, groups.size());
        groups.append(QStringList());
      }
      groups[byKey.value(k)] << dir;
    }
  } else {
    for (const QString& dir : dirs) groups.append(QStringList{dir});
  }
  return groups;
}

// The exported figure's caption names the runs behind each curve by their folders (the legend
// names only what tells them apart).
void ComparePanel::setCaption(const QList<QStringList>& groups, const QStringList& names) {
  QStringList subject;
  for (int gi = 0; gi < groups.size(); ++gi) {
    QStringList folders;
    for (const QString& d : groups[gi]) folders << QFileInfo(d).fileName();
    QString name = names.value(gi);  // a group is not its first run (as its legend entry in drawSeedMean)
    const QString dirSuffix = QStringLiteral(" (%1)").arg(folders.first());
    if (groups[gi].size() > 1 && name.endsWith(dirSuffix) && name.size() > dirSuffix.size())
      name.chop(dirSuffix.size());
    subject << (groups[gi].size() > 1 ? QStringLiteral("%1 (mean of %2 seeds): %3")
                                            .arg(name)
                                            .arg(groups[gi].size())
                                            .arg(folders.join(QStringLiteral(", ")))
                                      : QStringLiteral("%1 = %2").arg(names.value(gi), folders.first()));
  }
  m_comparePlot->setSubject(subject.join(QStringLiteral("; ")));
}

// A run on its own: its series as it is.
void ComparePanel::drawRun(Overlay& o, const QString& dir, const QString& name) {
  csw::CurvePlot* plot = m_comparePlot;
  const RunInfo* first = m_runModel->run(m_runModel->rowOf(dir));
  QVector<double> xs, ys;
  collectSeries(o, dir, &xs, &ys);
  plot->addSeries(first->dir, name);
  plot->setSeriesSparse(first->dir, o.split != QLatin1String("train"));  // evaluations: markers, never smoothed
  plot->setSeries(first->dir, xs, ys);
}

// Mean over the seeds at the steps every run of the group has, drawn at the mean x of the
// seeds there (wall-clock time differs between seeds; steps and FLOPs do not); band = min-max
// or mean +- std.
void ComparePanel::drawSeedMean(Overlay& o, const QStringList& g, const QString& name) {
  csw::CurvePlot* plot = m_comparePlot;
  const RunInfo* first = m_runModel->run(m_runModel->rowOf(g.first()));
  const bool stdBand = m_bandCombo->currentIndex() == 1;
  std::map<qint64, QVector<double>> at, atX;
  QStringList without;  // seeds with no point of this metric yet (one that has not evaluated yet)
  for (const QString& dir : g) {
    QVector<double> xs, ys;
    QVector<qint64> steps;
    collectSeries(o, dir, &xs, &ys, &steps);
    if (xs.isEmpty()) without << QFileInfo(dir).fileName();
    for (int i = 0; i < xs.size(); ++i) {
      at[steps[i]].append(ys[i]);
      atX[steps[i]].append(xs[i]);
    }
  }
  QVector<double> xs, mean, lo, hi;
  for (const auto& [step, vals] : at) {
    if (vals.size() != g.size()) continue;
    double x = 0;
    for (double v : atX[step]) x += v;
    x /= atX[step].size();
    double s = 0, mn = vals[0], mx = vals[0];
    for (double v : vals) {
      s += v;
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
    const double m = s / vals.size();
    double var = 0;
    for (double v : vals) var += (v - m) * (v - m);
    const double sd = std::sqrt(var / std::max(1, int(vals.size()) - 1));
    xs << x;
    mean << m;
    lo << (stdBand ? m - sd : mn);
    hi << (stdBand ? m + sd : mx);
  }
  const QString id = QStringLiteral("seeds:") + first->dir;
  // A group is not its first run: no "(<first run's directory>)" in its name (the name of a
  // lone group, or of groups alike but for it).
  QString groupName = name;
  const QString dirSuffix = QStringLiteral(" (%1)").arg(QFileInfo(first->dir).fileName());
  if (groupName.endsWith(dirSuffix) && groupName.size() > dirSuffix.size()) groupName.chop(dirSuffix.size());
  if (xs.isEmpty()) {
    // Nothing to draw, and an empty plot would say nothing: the mean needs every seed's value at
    // a step (a mean of the seeds that have one would move when the others arrive).
    o.notes << (without.isEmpty()
                    ? QStringLiteral("%1 (%2 seeds): no mean drawn: no step has a value of %3 in every seed")
                          .arg(groupName)
                          .arg(g.size())
                          .arg(QString(o.sel).replace(QLatin1Char('|'), QLatin1Char(' ')))
                    : QStringLiteral("%1 (%2 seeds): no mean drawn yet: %3 %4 no %5 point yet (the mean is taken at "
                                     "the steps every seed has reached; untick Aggregate seeds to see each run)")
                          .arg(groupName)
                          .arg(g.size())
                          .arg(without.join(QStringLiteral(", ")),
                               without.size() == 1 ? QStringLiteral("has") : QStringLiteral("have"),
                               QString(o.sel).replace(QLatin1Char('|'), QLatin1Char(' '))));
  }
  plot->addSeries(id, groupName + QStringLiteral(" (mean of %1 seeds)").arg(g.size()));
  plot->setSeriesSparse(id, o.split != QLatin1String("train"));
  plot->setSeries(id, xs, mean);
  plot->setBand(id, xs, lo, hi);
}

// The note under the plot: the groups with no mean drawn, then the runs left out on this axis.
void ComparePanel::showNotes(Overlay& o) {
  if (!o.withoutX.isEmpty()) {
    QStringList names;
    for (const QString& d : o.withoutX) names << QFileInfo(d).fileName();
    o.notes << QStringLiteral(
                   "%1 run(s) not drawn on this axis: their metrics.jsonl records no %2 "
                   "(written before Cellscope recorded training FLOPs): %3")
                   .arg(o.withoutX.size())
                   .arg(xAxisLabel(m_xAxis), names.join(QStringLiteral(", ")));
  }
  if (!o.notes.isEmpty()) {
    m_xNote->setText(o.notes.join(QLatin1Char('\n')));
    m_xNote->show();
  }
}

void ComparePanel::updateDiff() {
  const QModelIndexList rows = m_runView->selectionModel()->selectedRows();
  m_diffTable->setRowCount(0);
  if (rows.size() != 2) {
    m_diffNames.clear();
    m_diffLabel->setToolTip(QString());
    m_diffLabel->setText(QStringLiteral("Select two runs to see how their configs differ."));
    return;
  }
  const RunInfo* a = m_runModel->run(m_runProxy->mapToSource(rows[0]).row());
  const RunInfo* b = m_runModel->run(m_runProxy->mapToSource(rows[1]).row());
  if (!a || !b) return;
  // Options that change what is learned first; bookkeeping ones (threads, log_every...,
  // config/common_options.h) after them, greyed, under their own heading.
  QVector<std::tuple<QString, QString, QString>> diff, kept;
  for (const auto& d : configDiff(a->flat, b->flat)) (isBookkeeping(std::get<0>(d)) ? kept : diff).append(d);
  m_diffNames = {a->displayName(), b->displayName()};
  m_diffCounts =
      QStringLiteral("%1 differing option(s)%2")
          .arg(diff.size())
          .arg(kept.isEmpty() ? QString() : QStringLiteral(", %1 bookkeeping (same learning)").arg(kept.size()));
  m_diffLabel->setToolTip(QStringLiteral("A: %1\nB: %2").arg(a->dir, b->dir));
  updateDiffLabel();
  m_diffTable->setRowCount(diff.size() + (kept.isEmpty() ? 0 : kept.size() + 1));
  int row = 0;
  auto put = [&](const std::tuple<QString, QString, QString>& d, bool grey) {
    const QString cells[3] = {std::get<0>(d), std::get<1>(d), std::get<2>(d)};
    for (int c = 0; c < 3; ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      item->setToolTip(grey ? cells[c] + QStringLiteral("\n(bookkeeping: does not change what the run learns)")
                            : cells[c]);
      if (grey) item->setForeground(palette().color(QPalette::Disabled, QPalette::Text));
      m_diffTable->setItem(row, c, item);
    }
    ++row;
  };
  for (const auto& d : diff) put(d, false);
  if (!kept.isEmpty()) {
    auto* head = new QTableWidgetItem(QStringLiteral("bookkeeping (same learning):"));
    QFont f = head->font();
    f.setItalic(true);
    head->setFont(f);
    head->setToolTip(
        QStringLiteral("Options that change neither what a run learns nor the numbers it reports; "
                       "runs that differ only in these form one seed group"));
    m_diffTable->setItem(row, 0, head);
    m_diffTable->setItem(row, 1, new QTableWidgetItem(QString()));
    m_diffTable->setItem(row, 2, new QTableWidgetItem(QString()));
    ++row;
    for (const auto& d : kept) put(d, true);
  }
  // The option names take what they need, but at most 45% of the width: the values stay readable.
  int optionWidth = m_diffTable->horizontalHeader()->sectionSizeHint(0);
  for (int i = 0; i < m_diffTable->rowCount(); ++i)
    optionWidth =
        std::max(optionWidth, m_diffTable->fontMetrics().horizontalAdvance(m_diffTable->item(i, 0)->text()) + 16);
  m_diffTable->setColumnWidth(0, std::min(optionWidth, std::max(80, m_diffTable->viewport()->width() * 45 / 100)));
}

void ComparePanel::updateDiffLabel() {
  // "A <name>", "B <name>", each on one line, elided in the middle to the label's width.
  const QFontMetrics fm(m_diffLabel->font());
  QFont bold = m_diffLabel->font();
  bold.setBold(true);
  const int room = std::max(40, m_diffLabel->width() - QFontMetrics(bold).horizontalAdvance(QStringLiteral("B ")) - 4);
  auto name = [&](int i) { return fm.elidedText(m_diffNames.value(i), Qt::ElideMiddle, room).toHtmlEscaped(); };
  m_diffLabel->setText(QStringLiteral("<b>A</b> %1<br><b>B</b> %2<br>%3").arg(name(0), name(1), m_diffCounts));
}

QString ComparePanel::configDiffText() const {
  QStringList lines;
  for (int i = 0; i < m_diffTable->rowCount(); ++i)
    if (m_diffTable->item(i, 1)->text().isEmpty() && m_diffTable->item(i, 2)->text().isEmpty())
      lines << m_diffTable->item(i, 0)->text();
    else
      lines << QStringLiteral("%1: %2 -> %3")
                   .arg(m_diffTable->item(i, 0)->text(), m_diffTable->item(i, 1)->text(),
                        m_diffTable->item(i, 2)->text());
  return lines.join(QLatin1Char('\n'));
}

void ComparePanel::exportTableInteractive() {
  const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export run table"),
                                                    QStringLiteral("runs.csv"), QStringLiteral("CSV (*.csv)"));
  QString err;
  if (!path.isEmpty() && !exportRunTable(path, &err)) QMessageBox::warning(this, QStringLiteral("Export failed"), err);
}

}  // namespace gui
