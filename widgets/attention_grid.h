// AttentionGrid: MC-RNN channel attention (paper Fig. 3), custom painted.
//
// Tokens run along x, channels along y (channel 0 at the top). Each cell is
// shaded by its weight in [0, 1] (white = 0 to the base colour = 1) with the
// value printed when the cell is wide enough. For each channel the caller can
// pass the in-degree m_t^k of every token; a block starts wherever m resets to
// 1, and the widget draws a thick vertical segment in that channel's row at
// each block boundary (blockBoundaries()).
// Hovering shows token, channel, weight and in-degree. Export through
// csw::exportFigure (renderFigure paints the same picture into any QPainter).
//
// CSV (toCsv): header "token_index,token,channel,weight,in_degree", one row
// per (channel, token) cell, channel-major; in_degree empty when not given.
#pragma once

#include <QColor>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include "plot_view.h"

namespace csw {

class AttentionGrid : public PlotView {
  Q_OBJECT
 public:
  explicit AttentionGrid(QWidget* parent = nullptr);

  void setTokens(const QStringList& tokens);
  QStringList tokens() const { return m_tokens; }
  // Channel names (default "ch 0", "ch 1", ...).
  void setChannelLabels(const QStringList& labels);
  QString channelLabel(int channel) const;
  // weights[channel][token], values clamped to [0, 1] for shading.
  void setWeights(const QVector<QVector<double>>& weights);
  // inDegree[channel][token] = m_t^k; empty = no block overlay.
  void setInDegrees(const QVector<QVector<int>>& inDegree);
  int channelCount() const { return m_weights.size(); }
  int tokenCount() const;
  double weight(int channel, int token) const;
  int inDegree(int channel, int token) const;  // -1 when unknown

  void setBaseColor(const QColor& c);
  void setShowValues(bool show);

  // Token indices t (t >= 1) where a new block starts, i.e. inDegree[t] == 1;
  // the boundary is drawn between token t-1 and token t.
  static QVector<int> blockBoundaries(const QVector<int>& inDegree);
  // Boundaries of one channel of this grid.
  QVector<int> channelBoundaries(int channel) const;

  // Cell under a widget position; false outside the grid.
  bool cellAt(const QPoint& pos, int* channel, int* token) const;
  QString tooltipTextAt(const QPoint& pos) const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override { return QSize(160, 80); }

  // ExportableView
  QString toCsv() const override;
  void renderFigure(QPainter* painter, const QRect& target) const override;
  QSize figureSize() const override;

 protected:
  void paintEvent(QPaintEvent* ev) override;
  bool event(QEvent* ev) override;

 private:
  struct Geometry {
    QRectF grid;
    double cellW = 0, cellH = 0;
    bool staggered = false;  // token labels on two alternating lines (they would overlap)
  };
  Geometry geometryFor(const QRect& target, const QFontMetricsF& fm) const;

  QStringList m_tokens, m_channelLabels;
  QVector<QVector<double>> m_weights;
  QVector<QVector<int>> m_inDegree;
  QColor m_base = QColor(0x1f, 0x4e, 0x9a);
  bool m_showValues = true;
};

}  // namespace csw
