// Figures of the core's result types (core/inspect/analysis/results.h), and make_figure: the
// figure of any AnalysisResult, chosen by the type its variant holds (std::visit).
#include <QFileInfo>

#include <algorithm>
#include <variant>

#include "bar_chart.h"
#include "curve_plot.h"
#include "figures.h"
#include "heatmap_view.h"
#include "util/error.h"

namespace csf {

Figure* make_composition_figure(const cs::MatrixSet& set, const FigureStyle& style) {
  std::vector<cs::LabeledMatrix> ms;
  QStringList names;
  for (const auto& p : set.panels) {
    ms.push_back(p.matrix);
    names << qs(p.title);
  }
  FigureStyle s = style;
  if (s.columns == 0 && set.iterations > 0) s.columns = set.iterations;  // cap: a row per M-function/depth
  if (s.title.isEmpty()) s.title = qs(set.title);
  Figure* fig = make_composition_figure(ms, names, s);
  if (style.show_caption) fig->setCaption(qs(set.caption));
  // "M_h (candidate), depth 0, routing iteration 2": one part per line on screen, so small
  // panels keep their whole titles (the CSV's panel column keeps the one-line name).
  for (int i = 0; i < fig->panelCount(); ++i)
    fig->panelAs<csw::HeatmapView>(i)->setTitle(names.value(i).replace(QStringLiteral(", "), QStringLiteral("\n")));
  if (set.composition == "cap")
    for (int i = 0; i < fig->panelCount(); ++i) {
      fig->panelAs<csw::HeatmapView>(i)->setXLabel(QStringLiteral("output capsule j"));
      fig->panelAs<csw::HeatmapView>(i)->setYLabel(QStringLiteral("input zone i"));
    }
  return fig;
}

Figure* make_channel_attention_figure(const cs::ChannelGrid& grid, const FigureStyle& style) {
  QVector<QVector<double>> w(int(grid.attention.rows()));
  for (int k = 0; k < w.size(); ++k)
    for (int t = 0; t < grid.attention.cols(); ++t) w[k] << grid.attention.at(k, t);
  QVector<QVector<int>> m;
  for (const auto& row : grid.in_degree) {
    QVector<int> r;
    for (int64_t v : row) r << int(v);
    m << r;
  }
  QStringList tokens = qs(grid.tokens);
  if (tokens.isEmpty()) tokens = qs(grid.attention.col_labels);
  return make_channel_attention_figure(tokens, w, m, qs(grid.caption.empty() ? grid.attention.caption : grid.caption),
                                       style);
}

Figure* make_buckets_figure(const std::vector<cs::LengthBuckets>& runs, const QStringList& names,
                            const FigureStyle& style) {
  std::vector<BucketSeries> s;
  QString metric = runs.empty() ? QStringLiteral("bpc") : qs(runs.front().metric);
  QString unit = runs.empty() ? QStringLiteral("characters") : qs(runs.front().length_unit);
  for (size_t i = 0; i < runs.size(); ++i) {
    BucketSeries b;
    b.name = names.value(int(i));
    if (b.name.isEmpty()) b.name = qs(runs[i].name);
    if (b.name.isEmpty()) b.name = QFileInfo(qs(runs[i].run)).fileName();
    for (const auto& k : runs[i].buckets) {
      b.buckets << QStringLiteral("%1\n(%2,%3]").arg(qs(k.label)).arg(k.lo).arg(k.hi);
      b.values << k.value;
      b.counts << int(k.sequences);
    }
    s.push_back(b);
  }
  // Runs whose buckets hold different numbers of sequences (other data): every run's n
  // under its bucket, in legend order, instead of the first run's alone.
  bool perRunCounts = false;
  for (const BucketSeries& b : s) perRunCounts = perRunCounts || b.counts != s.front().counts;
  if (perRunCounts)
    for (int k = 0; k < s.front().buckets.size(); ++k) {
      QStringList n;
      for (const BucketSeries& b : s) n << (k < b.counts.size() ? QString::number(b.counts[k]) : QStringLiteral("-"));
      s.front().buckets[k] += QStringLiteral("\nn=") + n.join(QLatin1Char('/'));
    }
  const QString yLabel = metric == QLatin1String("bpc")    ? QStringLiteral("BPC")
                         : metric == QLatin1String("ppl")  ? QStringLiteral("perplexity")
                         : metric == QLatin1String("bleu") ? QStringLiteral("BLEU")
                                                           : metric;
  const QString caption = QStringLiteral(
                              "%1 by sequence length (%2) on the %3 split; bucket label b covers lengths (lo, hi]; "
                              "n = number of sequences in the bucket.")
                              .arg(yLabel, unit, runs.empty() ? QString() : qs(runs.front().split));
  Figure* fig = make_buckets_figure(s, yLabel, caption, style);
  if (auto* bc = fig->panelAs<csw::BarChart>(0)) {
    bc->setXLabel(QStringLiteral("sequence length bucket (%1)").arg(unit));
    if (perRunCounts) {
      bc->setCounts({});  // the labels carry each run's n
      bc->setCountsMode(csw::BarChart::CountsMode::Hidden);
    }
  }
  return fig;
}

Figure* make_series_figure(const cs::SeriesSet& set, const FigureStyle& style) {
  if (set.style == "bars") {
    // Histogram: bins on x (labelled by their centre), one bar series per gate key.
    auto* fig = new Figure;
    fig->setTitle(style.title);
    auto* bc = new csw::BarChart;
    QStringList labels;
    if (!set.series.empty())
      for (double x : set.series.front().x) labels << QString::number(x, 'g', 3);
    bc->setBuckets(labels);
    for (const auto& sr : set.series)
      bc->setSeries(qs(sr.name), qs(sr.name), QVector<double>(sr.y.begin(), sr.y.end()),
                    QVector<double>(sr.yerr.begin(), sr.yerr.end()));
    bc->setCountsMode(csw::BarChart::CountsMode::Hidden);
    bc->setTitle(qs(set.title) == style.title ? QString() : qs(set.title));
    bc->setXLabel(qs(set.x_label));
    bc->setYLabel(qs(set.y_label));
    fig->addPanel(bc, qs(set.title));
    fig->setPanelSize(style.panel_size);
    if (style.show_caption) fig->setCaption(qs(set.caption));
    return fig;
  }
  std::vector<Series> ss;
  for (const auto& sr : set.series)
    ss.push_back({qs(sr.name), QVector<double>(sr.x.begin(), sr.x.end()), QVector<double>(sr.y.begin(), sr.y.end()),
                  QVector<double>(sr.yerr.begin(), sr.yerr.end())});
  Figure* fig = make_series_figure(ss, qs(set.title), qs(set.x_label), qs(set.y_label), qs(set.caption), style);
  if (set.marker_step >= 0)
    if (auto* cp = fig->panelAs<csw::CurvePlot>(0)) {
      cp->setMarker(double(set.marker_step));
      cp->replotIfDirty();
    }
  return fig;
}

Figure* make_buckets_figure(const cs::BucketSet& set, const FigureStyle& style) {
  return make_buckets_figure(set.runs, QStringList(), style);
}

QString compared_runs_sentence(const cs::AnalysisResult& r) {
  QStringList names;
  QString where;
  if (const auto* h = std::get_if<cs::HeatmapSet>(&r.data)) {
    if (h->matrices.size() < 2) return QString();
    for (size_t i = 0; i < h->matrices.size(); ++i)
      names << (i < h->titles.size() && !h->titles[i].empty() ? qs(h->titles[i]) : QStringLiteral("run %1").arg(i + 1));
    // make_heatmaps_figure stacks the runs of a few-row set, else puts them side by side.
    where = h->few_rows ? QStringLiteral("panels top to bottom") : QStringLiteral("panels left to right");
  } else if (const auto* b = std::get_if<cs::BucketSet>(&r.data)) {
    if (b->runs.size() < 2) return QString();
    for (const auto& run : b->runs) names << (!run.name.empty() ? qs(run.name) : QFileInfo(qs(run.run)).fileName());
    where = QStringLiteral("bars left to right in each bucket");
  } else {
    return QString();
  }
  return QStringLiteral("Runs compared (%1): %2.").arg(where, names.join(QStringLiteral("; ")));
}

Figure* make_figure(const cs::AnalysisResult& r, const FigureStyle& style) {
  Figure* fig =
      std::visit(cs::overloaded{[&](const std::monostate&) -> Figure* {
                                  throw cs::UserError("no figure for analysis '" + r.kind + "': it holds no result");
                                },
                                [&](const cs::HeatmapSet& h) { return make_heatmaps_figure(h, style); },
                                [&](const cs::MatrixSet& m) { return make_composition_figure(m, style); },
                                [&](const cs::ChannelGrid& g) { return make_channel_attention_figure(g, style); },
                                [&](const cs::BucketSet& b) { return make_buckets_figure(b, style); },
                                [&](const cs::SeriesSet& s) { return make_series_figure(s, style); },
                                [&](const cs::TextTable& t) { return make_table_figure(t, style); }},
                 r.data);
  if (style.show_caption && !r.caption.empty()) fig->setCaption(qs(r.caption));
  if (!style.show_caption) fig->setCaption(QString());
  // A comparison says which run is which (the names of the panels / legend: the runs'
  // labels, else what differs between them; core/inspect/analysis/run_names.h).
  const QString runs = compared_runs_sentence(r);
  if (style.show_caption && !runs.isEmpty())
    fig->setCaption(fig->caption().isEmpty() ? runs : fig->caption() + QLatin1Char(' ') + runs);
  return fig;
}

}  // namespace csf
