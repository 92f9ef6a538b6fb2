// csf::TableView and the table figure (CRU paper Table 5): a table of strings painted so
// that it exports as PNG/PDF/SVG like the plots.
#include <QPainter>

#include <algorithm>

#include "figures.h"

namespace csf {

TableView::TableView(QWidget* parent) : QWidget(parent) { setAttribute(Qt::WA_OpaquePaintEvent); }

void TableView::setTable(const QStringList& columns, const QVector<QStringList>& rows) {
  m_columns = columns;
  m_rows = rows;
  updateGeometry();
  update();
}
void TableView::setTitle(const QString& title) {
  m_title = title;
  update();
}

namespace {
QVector<double> columnWidths(const QStringList& cols, const QVector<QStringList>& rows, const QFontMetricsF& fm,
                             const QFontMetricsF& bfm) {
  QVector<double> w(cols.size(), 0.0);
  for (int c = 0; c < cols.size(); ++c) w[c] = bfm.horizontalAdvance(cols[c]) + 16;
  for (const auto& r : rows)
    for (int c = 0; c < cols.size() && c < r.size(); ++c) w[c] = std::max(w[c], fm.horizontalAdvance(r[c]) + 16);
  return w;
}
}  // namespace

QSize TableView::sizeHint() const {
  QFont bf = font();
  bf.setBold(true);
  const QFontMetricsF fm(font()), bfm(bf);
  double w = 0;
  for (double c : columnWidths(m_columns, m_rows, fm, bfm)) w += c;
  const double rh = fm.height() + 8;
  const double h = (m_title.isEmpty() ? 0 : rh * 1.3) + rh * (m_rows.size() + 1) + 12;
  return QSize(int(std::clamp(w + 12, 240.0, 2400.0)), int(std::clamp(h, 80.0, 4000.0)));
}

void TableView::renderFigure(QPainter* p, const QRect& target) const {
  p->save();
  p->fillRect(target, Qt::white);
  QFont f = font(), bf = font();
  bf.setBold(true);
  const QFontMetricsF fm(f, p->device()), bfm(bf, p->device());
  QVector<double> w = columnWidths(m_columns, m_rows, fm, bfm);
  double total = 0;
  for (double c : w) total += c;
  const double avail = target.width() - 12;
  if (total > 0 && total < avail)  // spread the spare width
    for (double& c : w) c *= avail / total;
  const double rh = fm.height() + 8;
  double y = target.top() + 6;
  p->setPen(Qt::black);
  if (!m_title.isEmpty()) {
    QFont tf = bf;
    tf.setPointSizeF(f.pointSizeF() * 1.15);
    p->setFont(tf);
    p->drawText(QRectF(target.left(), y, target.width(), rh * 1.3), Qt::AlignCenter, m_title);
    y += rh * 1.3;
  }
  const double x0 = target.left() + 6;
  auto drawRow = [&](const QStringList& cells, bool header, int index) {
    if (!header && index % 2 == 1)
      p->fillRect(QRectF(x0, y, std::min(avail, std::max(total, avail)), rh), QColor(242, 245, 250));
    p->setFont(header ? bf : f);
    double x = x0;
    for (int c = 0; c < w.size(); ++c) {
      p->drawText(QRectF(x + 8, y, w[c] - 16, rh), Qt::AlignVCenter | Qt::AlignLeft, cells.value(c));
      x += w[c];
    }
    y += rh;
  };
  const double yTop = y;
  drawRow(m_columns, true, 0);
  p->setPen(QPen(Qt::black, 1));
  p->drawLine(QPointF(x0, y), QPointF(x0 + std::max(total, avail), y));
  for (int r = 0; r < m_rows.size(); ++r) {
    p->setPen(Qt::black);
    drawRow(m_rows[r], false, r);
  }
  p->setPen(QPen(Qt::black, 1));
  p->drawLine(QPointF(x0, yTop), QPointF(x0 + std::max(total, avail), yTop));
  p->drawLine(QPointF(x0, y), QPointF(x0 + std::max(total, avail), y));
  p->restore();
}

void TableView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  renderFigure(&p, rect());
}

QString TableView::toCsv() const {
  QString out;
  for (int c = 0; c < m_columns.size(); ++c) out += (c ? QStringLiteral(",") : QString()) + csw::csvField(m_columns[c]);
  out += QLatin1Char('\n');
  for (const auto& r : m_rows) {
    for (int c = 0; c < m_columns.size(); ++c) out += (c ? QStringLiteral(",") : QString()) + csw::csvField(r.value(c));
    out += QLatin1Char('\n');
  }
  return out;
}

Figure* make_table_figure(const cs::TextTable& table, const FigureStyle& style) {
  auto* fig = new Figure;
  fig->setTitle(style.title);
  auto* tv = new TableView;
  QVector<QStringList> rows;
  for (const auto& r : table.rows) rows << qs(r);
  tv->setTable(qs(table.columns), rows);
  tv->setTitle(qs(table.title));
  fig->addPanel(tv, qs(table.title));
  fig->setPanelSize(tv->sizeHint().expandedTo(QSize(360, 120)));
  if (style.show_caption) fig->setCaption(qs(table.caption));
  return fig;
}

}  // namespace csf
