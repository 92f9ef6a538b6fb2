#include "attention_grid.h"

#include <QHelpEvent>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace csw {

AttentionGrid::AttentionGrid(QWidget* parent) : PlotView(Kind::Painted, parent) {
  setXLabel(QStringLiteral("token"));
  setYLabel(QStringLiteral("channel"));
  setAttribute(Qt::WA_OpaquePaintEvent);
  setMouseTracking(true);
}

void AttentionGrid::setTokens(const QStringList& tokens) {
  m_tokens = tokens;
  updateGeometry();
  requestReplot();
}

void AttentionGrid::setChannelLabels(const QStringList& labels) {
  m_channelLabels = labels;
  requestReplot();
}

QString AttentionGrid::channelLabel(int channel) const {
  return channel >= 0 && channel < m_channelLabels.size() ? m_channelLabels[channel]
                                                          : QStringLiteral("ch %1").arg(channel);
}

void AttentionGrid::setWeights(const QVector<QVector<double>>& weights) {
  m_weights = weights;
  updateGeometry();
  requestReplot();
}

void AttentionGrid::setInDegrees(const QVector<QVector<int>>& inDegree) {
  m_inDegree = inDegree;
  requestReplot();
}

int AttentionGrid::tokenCount() const {
  int n = m_tokens.size();
  for (const auto& row : m_weights) n = std::max(n, int(row.size()));
  return n;
}

double AttentionGrid::weight(int channel, int token) const {
  if (channel < 0 || channel >= m_weights.size() || token < 0 || token >= m_weights[channel].size())
    return std::nan("");
  return m_weights[channel][token];
}

int AttentionGrid::inDegree(int channel, int token) const {
  if (channel < 0 || channel >= m_inDegree.size() || token < 0 || token >= m_inDegree[channel].size()) return -1;
  return m_inDegree[channel][token];
}

void AttentionGrid::setBaseColor(const QColor& c) {
  m_base = c;
  requestReplot();
}
void AttentionGrid::setShowValues(bool show) {
  m_showValues = show;
  requestReplot();
}

QVector<int> AttentionGrid::blockBoundaries(const QVector<int>& inDegree) {
  QVector<int> out;
  for (int t = 1; t < inDegree.size(); ++t)
    if (inDegree[t] == 1) out << t;
  return out;
}

QVector<int> AttentionGrid::channelBoundaries(int channel) const {
  if (channel < 0 || channel >= m_inDegree.size()) return {};
  return blockBoundaries(m_inDegree[channel]);
}

QSize AttentionGrid::sizeHint() const {
  const int t = std::max(1, tokenCount()), c = std::max(1, channelCount());
  return QSize(std::clamp(80 + 34 * t, 240, 1600), std::clamp(70 + 26 * c, 120, 900));
}

QSize AttentionGrid::figureSize() const { return width() >= 50 && height() >= 50 && isVisible() ? size() : sizeHint(); }

AttentionGrid::Geometry AttentionGrid::geometryFor(const QRect& target, const QFontMetricsF& fm) const {
  Geometry g;
  double labelW = fm.horizontalAdvance(yLabel().isEmpty() ? QString() : QStringLiteral("M")) * 1.6;
  for (int c = 0; c < channelCount(); ++c) labelW = std::max(labelW, fm.horizontalAdvance(channelLabel(c)));
  const double lh = fm.height();
  const double left = target.left() + 6 + (yLabel().isEmpty() ? 0 : lh + 4) + labelW + 6;
  const double top = target.top() + 6 + (title().isEmpty() ? 0 : lh * 1.4 + 4);
  // Token labels wider than their cell are staggered on two lines (reserve the second).
  const int ntok = std::max(1, tokenCount());
  const double roughCellW = (target.right() + 1 - 8 - left) / ntok;
  double widest = 0;
  for (const QString& tok : m_tokens) widest = std::max(widest, fm.horizontalAdvance(tok));
  g.staggered = widest + 4 > roughCellW;
  const double bottom = target.bottom() + 1 - 6 - lh - 4 - (g.staggered ? lh : 0) - (xLabel().isEmpty() ? 0 : lh + 2);
  const double right = target.right() + 1 - 8;
  g.grid = QRectF(QPointF(left, top), QPointF(std::max(left + 1, right), std::max(top + 1, bottom)));
  const int nt = std::max(1, tokenCount()), nc = std::max(1, channelCount());
  g.cellW = g.grid.width() / nt;
  g.cellH = g.grid.height() / nc;
  return g;
}

void AttentionGrid::renderFigure(QPainter* p, const QRect& target) const {
  p->save();
  p->setRenderHint(QPainter::Antialiasing, false);
  p->fillRect(target, Qt::white);
  QFont font = this->font();
  p->setFont(font);
  const QFontMetricsF fm(font, p->device());
  const Geometry g = geometryFor(target, fm);
  const int nt = tokenCount(), nc = channelCount();

  // Title.
  if (!title().isEmpty()) {
    QFont tf = font;
    tf.setBold(true);
    tf.setPointSizeF(font.pointSizeF() * 1.2);
    p->setFont(tf);
    p->setPen(Qt::black);
    p->drawText(QRectF(target.left(), target.top() + 4, target.width(), fm.height() * 1.4), Qt::AlignCenter, title());
    p->setFont(font);
  }

  // Cells.
  QFont vf = font;
  vf.setPointSizeF(std::max(5.0, font.pointSizeF() * 0.8));
  const QFontMetricsF vfm(vf, p->device());
  const bool values =
      m_showValues && vfm.horizontalAdvance(QStringLiteral("0.00")) + 2 <= g.cellW && vfm.height() <= g.cellH;
  for (int c = 0; c < nc; ++c) {
    for (int t = 0; t < nt; ++t) {
      const QRectF cell(g.grid.left() + t * g.cellW, g.grid.top() + c * g.cellH, g.cellW, g.cellH);
      const double w = weight(c, t);
      if (!std::isfinite(w)) continue;
      const double a = std::clamp(w, 0.0, 1.0);
      const QColor col(qRound(255 + (m_base.red() - 255) * a), qRound(255 + (m_base.green() - 255) * a),
                       qRound(255 + (m_base.blue() - 255) * a));
      p->fillRect(cell, col);
      if (values) {
        p->setFont(vf);
        p->setPen(qGray(col.rgb()) < 128 ? Qt::white : Qt::black);
        p->drawText(cell, Qt::AlignCenter, QString::number(w, 'f', 2));
        p->setFont(font);
      }
    }
  }

  // Thin grid.
  p->setPen(QPen(QColor(200, 200, 200), 0));
  for (int t = 0; t <= nt; ++t) {
    const double x = g.grid.left() + t * g.cellW;
    p->drawLine(QPointF(x, g.grid.top()), QPointF(x, g.grid.bottom()));
  }
  for (int c = 0; c <= nc; ++c) {
    const double y = g.grid.top() + c * g.cellH;
    p->drawLine(QPointF(g.grid.left(), y), QPointF(g.grid.right(), y));
  }

  // Block boundaries: thick vertical segments within each channel's row.
  p->setRenderHint(QPainter::Antialiasing, true);
  QPen bpen(QColor(0xc6, 0x28, 0x28), std::max(2.5, g.cellW * 0.08));
  bpen.setCapStyle(Qt::FlatCap);
  p->setPen(bpen);
  for (int c = 0; c < nc; ++c) {
    const double y0 = g.grid.top() + c * g.cellH + 1, y1 = y0 + g.cellH - 2;
    for (int t : channelBoundaries(c)) {
      if (t > nt) continue;
      const double x = g.grid.left() + t * g.cellW;
      p->drawLine(QPointF(x, y0), QPointF(x, y1));
    }
  }
  p->setRenderHint(QPainter::Antialiasing, false);

  // Frame, labels.
  p->setPen(QPen(Qt::black, 0));
  p->setBrush(Qt::NoBrush);
  p->drawRect(g.grid);
  for (int c = 0; c < nc; ++c) {
    const QRectF r(target.left(), g.grid.top() + c * g.cellH, g.grid.left() - target.left() - 6, g.cellH);
    p->drawText(r, Qt::AlignRight | Qt::AlignVCenter, channelLabel(c));
  }
  for (int t = 0; t < nt; ++t) {
    const QString tok = t < m_tokens.size() ? m_tokens[t] : QString::number(t);
    const double dy = g.staggered && t % 2 == 1 ? fm.height() : 0.0;
    const QRectF r(g.grid.left() + t * g.cellW - 20, g.grid.bottom() + 2 + dy, g.cellW + 40, fm.height() + 2);
    p->drawText(r, Qt::AlignHCenter | Qt::AlignTop, tok);
  }
  if (!xLabel().isEmpty())
    p->drawText(QRectF(g.grid.left(), g.grid.bottom() + fm.height() * (g.staggered ? 2 : 1) + 4, g.grid.width(),
                       fm.height() + 2),
                Qt::AlignHCenter | Qt::AlignTop, xLabel());
  if (!yLabel().isEmpty()) {
    p->save();
    p->translate(target.left() + 6 + fm.height() / 2, g.grid.center().y());
    p->rotate(-90);
    p->drawText(QRectF(-g.grid.height() / 2, -fm.height() / 2, g.grid.height(), fm.height()), Qt::AlignCenter,
                yLabel());
    p->restore();
  }
  p->restore();
}

void AttentionGrid::paintEvent(QPaintEvent*) {
  QPainter p(this);
  renderFigure(&p, rect());
}

bool AttentionGrid::cellAt(const QPoint& pos, int* channel, int* token) const {
  const Geometry g = geometryFor(rect(), QFontMetricsF(font()));
  if (!g.grid.contains(pos) || tokenCount() == 0 || channelCount() == 0) return false;
  const int t = std::min(tokenCount() - 1, int((pos.x() - g.grid.left()) / g.cellW));
  const int c = std::min(channelCount() - 1, int((pos.y() - g.grid.top()) / g.cellH));
  if (channel) *channel = c;
  if (token) *token = t;
  return true;
}

QString AttentionGrid::tooltipTextAt(const QPoint& pos) const {
  int c = 0, t = 0;
  if (!cellAt(pos, &c, &t)) return QString();
  QString text = QStringLiteral("token %1 '%2'\n%3\nweight = %4")
                     .arg(t)
                     .arg(t < m_tokens.size() ? m_tokens[t] : QString())
                     .arg(channelLabel(c))
                     .arg(QString::number(weight(c, t), 'g', 4));
  if (inDegree(c, t) >= 0) text += QStringLiteral("\nin-degree m = %1").arg(inDegree(c, t));
  return text;
}

bool AttentionGrid::event(QEvent* ev) {
  if (ev->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(ev);
    showHoverText(tooltipTextAt(he->pos()), he->globalPos());
    return true;
  }
  return QWidget::event(ev);
}

QString AttentionGrid::toCsv() const {
  QString out = QStringLiteral("token_index,token,channel,weight,in_degree\n");
  for (int c = 0; c < channelCount(); ++c) {
    for (int t = 0; t < m_weights[c].size(); ++t) {
      const int m = inDegree(c, t);
      out += QString::number(t) + QLatin1Char(',') + csvField(t < m_tokens.size() ? m_tokens[t] : QString()) +
             QLatin1Char(',') + csvField(channelLabel(c)) + QLatin1Char(',') + csvNumber(m_weights[c][t]) +
             QLatin1Char(',') + (m >= 0 ? QString::number(m) : QString()) + QLatin1Char('\n');
    }
  }
  return out;
}

}  // namespace csw
