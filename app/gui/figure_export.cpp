#include "figure_export.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFontComboBox>
#include <QFormLayout>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QSpinBox>

#include <QDir>
#include <QFileInfo>
#include <QVariant>

#include "curve_plot.h"
#include "figure_bridge.h"
#include "qcp.h"

namespace gui {

QString slug(const QString& s) {
  QString out;
  for (QChar c : s.toLower()) out += c.isLetterOrNumber() ? c : QLatin1Char('_');
  while (out.contains(QLatin1String("__"))) out.replace(QLatin1String("__"), QLatin1String("_"));
  return out;
}

FigureExporter::FigureExporter(QWidget* dialogParent) : QObject(dialogParent), m_parent(dialogParent) {
  m_options.scale = 2.0;
  m_options.fontPointSize = 10;
  m_options.size = QSize(800, 520);
  publish();
}

void FigureExporter::setOptions(const csw::ExportOptions& o) {
  m_options = o;
  publish();
}

void FigureExporter::publish() {
  // The PNG's DPI says how large its pixels are: size x scale pixels at 96 x scale
  // dpi print at the figure's size with the font at its point size (a fixed 300 dpi
  // made a screen-sized PNG 7 cm wide with 3 pt text).
  m_options.dpi = qRound(96.0 * (m_options.scale > 0 ? m_options.scale : 1.0));
  // The Analyses figures (csf::export_figure without options) follow the same options.
  setFigureExportDefaults(m_options);
}

QString FigureExporter::defaultExportPath(csw::CurvePlot* plot, const QString& suffix) const {
  // The run's folder (else the workspace, else home); "<run>-<figure>.<suffix>".
  QString dir = plot->property("csRunDir").toString();
  if (dir.isEmpty() || !QFileInfo(dir).isDir()) dir = m_workspace;
  if (dir.isEmpty() || !QFileInfo(dir).isDir()) dir = QDir::homePath();
  const QString subject = plot->subject();
  QString name = slug(plot->title().isEmpty() ? QStringLiteral("figure") : plot->title());
  if (!subject.isEmpty()) name = subject + QLatin1Char('-') + name;
  name.replace(QLatin1Char('/'), QLatin1Char('_'));
  return QDir(dir).filePath(name + QLatin1Char('.') + suffix);
}

void FigureExporter::load(const QSettings& s) {
  m_options.scale = s.value(QStringLiteral("export/scale"), m_options.scale).toDouble();
  m_options.fontPointSize = s.value(QStringLiteral("export/font_size"), m_options.fontPointSize).toDouble();
  m_options.fontFamily = s.value(QStringLiteral("export/font_family"), m_options.fontFamily).toString();
  m_options.size = s.value(QStringLiteral("export/size"), m_options.size).toSize();
  publish();
}

void FigureExporter::save(QSettings& s) const {
  s.setValue(QStringLiteral("export/scale"), m_options.scale);
  s.setValue(QStringLiteral("export/font_size"), m_options.fontPointSize);
  s.setValue(QStringLiteral("export/font_family"), m_options.fontFamily);
  s.setValue(QStringLiteral("export/size"), m_options.size);
}

bool FigureExporter::exportPlot(csw::CurvePlot* plot, const QString& path, QString* error) {
  plot->replotIfDirty();  // smoothing and view up to date
  return plot->exportTo(path, m_options, error);
}

csw::CurvePlot* FigureExporter::newPlot(const QString& title, const QString& yLabel, const QString& xLabel) {
  auto* p = new csw::CurvePlot;
  p->setTitle(title);
  p->setYLabel(yLabel);
  p->setXLabel(xLabel);
  p->setLegendVisible(true);
  p->setMinimumSize(260, 200);
  p->plot()->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(p->plot(), &QWidget::customContextMenuRequested, this, [this, p](const QPoint& pos) { contextMenu(p, pos); });
  return p;
}

void FigureExporter::contextMenu(csw::CurvePlot* plot, const QPoint& pos) {
  QMenu menu(m_parent);
  menu.addAction(QStringLiteral("Export figure (PNG, PDF, SVG)..."), this,
                 [this, plot] { exportPlotInteractive(plot); });
  menu.addAction(QStringLiteral("Export data as CSV..."), this, [this, plot] {
    const QString path =
        QFileDialog::getSaveFileName(m_parent, QStringLiteral("Export data"),
                                     defaultExportPath(plot, QStringLiteral("csv")), QStringLiteral("CSV (*.csv)"));
    QString err;
    if (!path.isEmpty() && !exportPlot(plot, path, &err))
      QMessageBox::warning(m_parent, QStringLiteral("Export failed"), err);
  });
  menu.addSeparator();
  menu.addAction(QStringLiteral("Reset view"), plot, &csw::CurvePlot::resetView);
  menu.addAction(QStringLiteral("Export options..."), this, &FigureExporter::optionsDialog);
  menu.exec(plot->plot()->mapToGlobal(pos));
}

void FigureExporter::exportPlotInteractive(csw::CurvePlot* plot) {
  QString selected;
  const QString path = QFileDialog::getSaveFileName(
      m_parent, QStringLiteral("Export figure"), defaultExportPath(plot, QStringLiteral("png")),
      QStringLiteral("PNG image (*.png);;PDF, vector (*.pdf);;SVG, vector (*.svg);;CSV data (*.csv)"), &selected);
  if (path.isEmpty()) return;
  QString err;
  if (!exportPlot(plot, path, &err)) QMessageBox::warning(m_parent, QStringLiteral("Export failed"), err);
  else Q_EMIT message(QStringLiteral("Wrote ") + path, 5000);
}

void FigureExporter::optionsDialog() {
  QDialog dlg(m_parent);
  dlg.setWindowTitle(QStringLiteral("Export options"));
  auto* f = new QFormLayout(&dlg);
  auto* w = new QSpinBox;
  w->setRange(200, 4000);
  w->setValue(m_options.size.isValid() ? m_options.size.width() : 800);
  auto* h = new QSpinBox;
  h->setRange(150, 4000);
  h->setValue(m_options.size.isValid() ? m_options.size.height() : 520);
  auto* scale = new QDoubleSpinBox;
  scale->setRange(0.5, 8);
  scale->setSingleStep(0.5);
  scale->setValue(m_options.scale);
  scale->setToolTip(QStringLiteral("PNG only: pixels = size x scale"));
  auto* font = new QFontComboBox;
  if (!m_options.fontFamily.isEmpty()) font->setCurrentFont(QFont(m_options.fontFamily));
  auto* size = new QDoubleSpinBox;
  size->setRange(5, 36);
  size->setValue(m_options.fontPointSize > 0 ? m_options.fontPointSize : 10);
  f->addRow(QStringLiteral("Width (pt)"), w);
  f->addRow(QStringLiteral("Height (pt)"), h);
  f->addRow(QStringLiteral("PNG scale"), scale);
  f->addRow(QStringLiteral("Font"), font);
  f->addRow(QStringLiteral("Font size (pt)"), size);
  auto* bb = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  connect(bb, &QDialogButtonBox::accepted, &dlg, &QDialog::accept);
  connect(bb, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
  f->addRow(bb);
  if (dlg.exec() != QDialog::Accepted) return;
  m_options.size = QSize(w->value(), h->value());
  m_options.scale = scale->value();
  m_options.fontFamily = font->currentFont().family();
  m_options.fontPointSize = size->value();
  publish();
}

}  // namespace gui
