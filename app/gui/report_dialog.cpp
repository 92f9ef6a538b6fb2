// Sweeps > Report... (report_dialog.h).
#include "report_dialog.h"

#include <QApplication>
#include <QComboBox>
#include <QDesktopServices>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QThread>
#include <QUrl>
#include <QVBoxLayout>

#include <memory>

#include "json_file.h"
#include "report_bridge.h"
#include "worker_thread.h"

namespace gui {

ReportDialog::ReportDialog(const QString& workspace, QWidget* parent) : QDialog(parent), m_workspace(workspace) {
  setWindowTitle(QStringLiteral("Report"));
  setObjectName(QStringLiteral("reportDialog"));
  auto* form = new QFormLayout;
  m_bundled = new QComboBox;
  m_bundled->setObjectName(QStringLiteral("reportBundled"));
  m_bundled->addItem(QStringLiteral("(a spec file)"), QString());
  for (const BundledReport& r : bundledReports()) m_bundled->addItem(r.label, r.path);
  // The workspace's own sweeps: a spec with the sweep's table is written for the one chosen
  // (sweepSpec), so a sweep of the user's is reported without writing JSON by hand.
  const QFileInfoList sweeps = QDir(QDir(workspace).filePath(QStringLiteral("sweeps")))
                                   .entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name);
  for (const QFileInfo& d : sweeps)
    if (QFileInfo::exists(QDir(d.filePath()).filePath(QStringLiteral("sweep.json"))))
      m_bundled->addItem(QStringLiteral("Sweep %1 (this workspace)").arg(d.fileName()),
                         QStringLiteral("sweep:") + d.fileName());
  form->addRow(QStringLiteral("Spec"), m_bundled);
  m_spec = new QLineEdit;
  m_spec->setObjectName(QStringLiteral("reportSpec"));
  auto* browseSpec = new QPushButton(QStringLiteral("Browse..."));
  auto* specRow = new QHBoxLayout;
  specRow->addWidget(m_spec, 1);
  specRow->addWidget(browseSpec);
  form->addRow(QStringLiteral("Spec (JSON)"), specRow);
  m_out = new QLineEdit;
  m_out->setObjectName(QStringLiteral("reportOut"));
  auto* browseOut = new QPushButton(QStringLiteral("Browse..."));
  auto* outRow = new QHBoxLayout;
  outRow->addWidget(m_out, 1);
  outRow->addWidget(browseOut);
  form->addRow(QStringLiteral("Output folder"), outRow);
  form->addRow(QStringLiteral("Workspace"), new QLabel(workspace));

  m_progress = new QProgressBar;
  m_progress->setObjectName(QStringLiteral("reportProgress"));
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  m_result = new QLabel;
  m_result->setObjectName(QStringLiteral("reportResult"));
  m_result->setWordWrap(true);
  m_result->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* buttons = new QDialogButtonBox;
  m_render = buttons->addButton(QStringLiteral("&Render"), QDialogButtonBox::AcceptRole);
  m_render->setObjectName(QStringLiteral("reportRender"));
  m_open = buttons->addButton(QStringLiteral("&Open folder"), QDialogButtonBox::ActionRole);
  m_open->setObjectName(QStringLiteral("reportOpen"));
  m_open->setEnabled(false);
  QPushButton* close = buttons->addButton(QDialogButtonBox::Close);

  auto* lay = new QVBoxLayout(this);
  lay->addLayout(form);
  lay->addWidget(m_progress);
  lay->addWidget(m_result);
  lay->addStretch(1);
  lay->addWidget(buttons);
  resize(640, 300);

  connect(m_bundled, &QComboBox::currentIndexChanged, this, [this](int i) {
    const QString data = m_bundled->itemData(i).toString();
    if (data.startsWith(QLatin1String("sweep:"))) {
      QString err;
      const QString path = sweepSpec(data.mid(6), &err);
      if (path.isEmpty()) m_result->setText(QStringLiteral("No spec for this sweep: ") + err);
      else m_spec->setText(path);
    } else if (!data.isEmpty()) {
      m_spec->setText(data);
    }
  });
  connect(browseSpec, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, QStringLiteral("Report spec"), m_spec->text(),
                                                   QStringLiteral("JSON (*.json)"));
    if (!f.isEmpty()) m_spec->setText(f);
  });
  connect(browseOut, &QPushButton::clicked, this, [this] {
    const QString d = QFileDialog::getExistingDirectory(this, QStringLiteral("Output folder"), m_out->text());
    if (!d.isEmpty()) m_out->setText(QDir(d).filePath(QStringLiteral("report")));
  });
  connect(m_render, &QPushButton::clicked, this, &ReportDialog::startRender);
  connect(m_open, &QPushButton::clicked, this, [this] { QDesktopServices::openUrl(QUrl::fromLocalFile(m_lastOut)); });
  connect(close, &QPushButton::clicked, this, &QDialog::reject);

  if (m_bundled->count() > 1) m_bundled->setCurrentIndex(1);  // the first bundled spec (sweep-notes)
  m_out->setText(QDir::home().filePath(QStringLiteral("cellscope-report")));

  m_worker = startWorkerThread<ReportWorker>(this, &m_thread, QStringLiteral("cellscope-report"));
  connect(this, &ReportDialog::renderRequested, m_worker, &ReportWorker::render);
  connect(m_worker, &ReportWorker::progress, this, &ReportDialog::onProgress);
  connect(m_worker, &ReportWorker::finished, this, &ReportDialog::onFinished);
  connect(m_worker, &ReportWorker::failed, this, &ReportDialog::onFailed);
}

ReportDialog::~ReportDialog() {
  // A render in progress may be waiting for the GUI thread to draw a figure: keep serving it
  // until the job ends (the thread's loop quits after it), rather than waiting and deadlocking.
  m_thread->quit();
  while (!m_thread->wait(20)) QCoreApplication::processEvents(QEventLoop::ExcludeUserInputEvents);
}

void ReportDialog::reject() {
  if (m_rendering) {
    m_result->setText(QStringLiteral("Rendering: the dialog closes when the report is written."));
    return;
  }
  QDialog::reject();
}

// A spec reporting one sweep of the workspace: its table (the sweep's own rows, columns and
// metric: sweep table's rules), captioned with its grid's axes. Written into a folder of the
// dialog's own (removed with it): the report's manifest keeps the spec, and the path is shown in
// the Spec field, to be copied and edited for a larger report.
QString ReportDialog::sweepSpec(const QString& sweep, QString* error) {
  if (!m_specDir)
    m_specDir = std::make_unique<QTemporaryDir>(QDir::temp().filePath(QStringLiteral("cellscope-report-XXXXXX")));
  if (!m_specDir->isValid()) {
    if (error) *error = m_specDir->errorString();
    return QString();
  }
  const QJsonObject def =
      readJsonObjectFile(QDir(m_workspace).filePath(QStringLiteral("sweeps/%1/sweep.json").arg(sweep)));
  QStringList axes;  // the grid: a list of axes ({"name"|"option", "values"}) or {"option": [values]}
  const QJsonValue grid = def.value(QStringLiteral("grid"));
  if (grid.isObject()) axes = grid.toObject().keys();
  for (const QJsonValue& a : grid.toArray()) {
    const QJsonObject ax = a.toObject();
    axes << (ax.contains(QStringLiteral("name")) ? ax.value(QStringLiteral("name")).toString()
                                                 : ax.value(QStringLiteral("option")).toString());
  }
  const int seeds = def.value(QStringLiteral("seeds")).toArray().size();
  QString caption = QStringLiteral("Sweep %1").arg(sweep);
  if (!axes.isEmpty()) caption += QStringLiteral(" over %1").arg(axes.join(QStringLiteral(" x ")));
  if (seeds > 1) caption += QStringLiteral(" (mean ± std over %1 seeds)").arg(seeds);
  const QJsonObject spec{{QStringLiteral("title"), QStringLiteral("Sweep %1").arg(sweep)},
                         {QStringLiteral("notes"), def.value(QStringLiteral("notes")).toString()},
                         {QStringLiteral("items"), QJsonArray{QJsonObject{{QStringLiteral("sweep"), sweep},
                                                                          {QStringLiteral("id"), sweep},
                                                                          {QStringLiteral("caption"), caption}}}}};
  const QString path = m_specDir->filePath(QStringLiteral("sweep-%1.json").arg(sweep));
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(QJsonDocument(spec).toJson()) < 0) {
    if (error) *error = f.errorString();
    return QString();
  }
  return path;
}

QString ReportDialog::specPath() const { return m_spec->text(); }
void ReportDialog::setSpecPath(const QString& path) { m_spec->setText(path); }
QString ReportDialog::outputDir() const { return m_out->text(); }
void ReportDialog::setOutputDir(const QString& dir) { m_out->setText(dir); }

void ReportDialog::startRender() {
  if (m_rendering) return;
  if (m_spec->text().trimmed().isEmpty() || m_out->text().trimmed().isEmpty()) {
    m_result->setText(QStringLiteral("Give a spec file and an output folder."));
    return;
  }
  setBusy(true);
  m_open->setEnabled(false);
  m_result->setText(QStringLiteral("Rendering..."));
  Q_EMIT renderRequested(m_spec->text().trimmed(), m_out->text().trimmed(), m_workspace);
}

void ReportDialog::onProgress(int done, int total, const QString& item) {
  m_progress->setRange(0, qMax(1, total));
  m_progress->setValue(done);
  if (!item.isEmpty())
    m_result->setText(QStringLiteral("Rendering %1 (%2 of %3)...").arg(item).arg(done + 1).arg(total));
}

void ReportDialog::onFinished(const QString& out, int items, int runs, bool images) {
  setBusy(false);
  m_lastOut = out;
  m_open->setEnabled(true);
  m_result->setText(QStringLiteral("Wrote %1: %2 items from %3 runs%4 (report.md, manifest.json).")
                        .arg(out)
                        .arg(items)
                        .arg(runs)
                        .arg(images ? QString() : QStringLiteral(", figures as CSV only")));
  Q_EMIT rendered(out);
}

void ReportDialog::onFailed(const QString& message) {
  setBusy(false);
  m_progress->setValue(0);
  m_result->setText(QStringLiteral("Not written: ") + message);
}

void ReportDialog::setBusy(bool busy) {
  m_rendering = busy;
  m_render->setEnabled(!busy);
  m_spec->setEnabled(!busy);
  m_out->setEnabled(!busy);
  m_bundled->setEnabled(!busy);
}

}  // namespace gui
