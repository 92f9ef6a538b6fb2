#include "plot_view.h"

#include <QTextLayout>
#include <QToolTip>

#include <algorithm>

#include "qcp.h"

namespace csw {

namespace {
const QColor kPalette[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c),
                           QColor(0xd6, 0x27, 0x28), QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                           QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f), QColor(0xbc, 0xbd, 0x22),
                           QColor(0x17, 0xbe, 0xcf)};
}  // namespace

PlotView::PlotView(Kind kind, QWidget* parent) : QWidget(parent) {
  if (kind != Kind::CustomPlot) return;
  m_plot = new QCustomPlot(this);
  m_titleElement = new QCPTextElement(m_plot, QString(), QFont(font().family(), font().pointSize() + 2, QFont::Bold));
  m_plot->plotLayout()->insertRow(0);
  m_plot->plotLayout()->addElement(0, 0, m_titleElement);
  m_plot->plotLayout()->setRowStretchFactor(0, 0.01);
  m_titleElement->setVisible(false);
  m_titleElement->setMaximumSize(QWIDGETSIZE_MAX, 0);  // an invisible element still takes its row
  connect(m_plot, &QCustomPlot::beforeReplot, this, [this] { wrapTitleTo(m_plot->width()); });
}

void PlotView::wrapTitleTo(int width) {
  if (!m_titleElement || m_title.isEmpty()) return;
  QString t = m_title;
  t.replace(QLatin1Char('\n'), QChar::LineSeparator);
  QTextLayout layout(t, m_titleElement->font());
  QTextOption opt;
  opt.setWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
  layout.setTextOption(opt);
  QStringList lines;
  layout.beginLayout();
  for (QTextLine line = layout.createLine(); line.isValid(); line = layout.createLine()) {
    line.setLineWidth(std::max(40, width - 12));
    lines << t.mid(line.textStart(), line.textLength()).trimmed();
  }
  layout.endLayout();
  const QString text = lines.join(QLatin1Char('\n'));
  if (text != m_titleElement->text()) m_titleElement->setText(text);
}

QString PlotView::drawnTitle() const { return m_titleElement ? m_titleElement->text() : QString(); }

QColor PlotView::paletteColor(int index) {
  const int n = int(sizeof(kPalette) / sizeof(kPalette[0]));
  return kPalette[((index % n) + n) % n];
}

void PlotView::setTitle(const QString& title) {
  m_title = title;
  if (m_titleElement) {
    m_titleElement->setText(title);
    m_titleElement->setVisible(!title.isEmpty());
    m_titleElement->setMaximumSize(QWIDGETSIZE_MAX, title.isEmpty() ? 0 : QWIDGETSIZE_MAX);
  }
  decorationChanged();
}

void PlotView::setXLabel(const QString& label) {
  m_xLabel = label;
  if (m_plot) m_plot->xAxis->setLabel(label);
  decorationChanged();
}

void PlotView::setYLabel(const QString& label) {
  m_yLabel = label;
  if (m_plot) m_plot->yAxis->setLabel(label);
  decorationChanged();
}

bool PlotView::exportTo(const QString& path, const ExportOptions& options, QString* error) {
  return exportFigure(this, path, options, error);
}

void PlotView::showHoverText(const QString& text, const QPoint& globalPos) {
  if (text.isEmpty()) QToolTip::hideText();
  else QToolTip::showText(globalPos, text, m_plot ? static_cast<QWidget*>(m_plot) : this);
}

void PlotView::requestReplot() {
  if (m_plot) m_plot->replot(QCustomPlot::rpQueuedReplot);
  else update();
}

}  // namespace csw
