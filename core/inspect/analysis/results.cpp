#include "analysis/results.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "analysis/csv_text.h"
#include "util/error.h"

namespace cs {

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

using analysis_text::csv_field;
using analysis_text::num;

json jnum(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

}  // namespace

// ------------------------------------------------------------------ matrices
json LabeledMatrix::to_json() const {
  json rowsj = json::array();
  for (int64_t r = 0; r < rows(); ++r) {
    json row = json::array();
    for (int64_t c = 0; c < cols(); ++c) row.push_back(std::isfinite(at(r, c)) ? json(at(r, c)) : json(nullptr));
    rowsj.push_back(row);
  }
  return {{"rows", row_labels}, {"columns", col_labels}, {"values", rowsj}, {"caption", caption}};
}

std::string LabeledMatrix::to_csv() const {
  std::string o = "row";
  for (auto& c : col_labels) o += "," + csv_field(c);
  o += "\n";
  for (int64_t r = 0; r < rows(); ++r) {
    o += csv_field(row_labels[static_cast<size_t>(r)]);
    for (int64_t c = 0; c < cols(); ++c) o += "," + num(at(r, c));
    o += "\n";
  }
  return o;
}

std::string display_symbol(const std::string& s) {
  if (s == " ") return "_";
  if (s == "\n") return "\u23CE";
  if (s == "\t") return "\u21E5";
  return s;
}

json HeatmapSet::to_json() const {
  json a = json::array();
  for (size_t i = 0; i < matrices.size(); ++i) {
    json m = matrices[i].to_json();
    m["title"] = i < titles.size() ? titles[i] : "";
    a.push_back(m);
  }
  return {{"matrices", a}, {"scale", {shared_min, shared_max}}};
}

std::string HeatmapSet::to_csv() const {
  if (matrices.size() == 1) return matrices[0].to_csv();
  // several runs: a "run" column before each block's rows
  std::string o;
  for (size_t i = 0; i < matrices.size(); ++i) {
    std::istringstream ss(matrices[i].to_csv());
    std::string line;
    bool head = true;
    while (std::getline(ss, line)) {
      if (head && i > 0) {
        head = false;
        continue;
      }
      o += (head ? std::string("run") : csv_field(i < titles.size() ? titles[i] : std::to_string(i))) + "," + line +
           "\n";
      head = false;
    }
  }
  return o;
}

json MatrixSet::to_json() const {
  json ps = json::array();
  for (auto& p : panels) {
    json j = p.matrix.to_json();
    j["title"] = p.title;
    j["m_function"] = p.m_function;
    j["depth"] = p.depth;
    if (p.iteration >= 0) j["iteration"] = p.iteration;
    ps.push_back(j);
  }
  return {{"title", title},
          {"caption", caption},
          {"composition", composition},
          {"character", character},
          {"position", position},
          {"iterations", iterations},
          {"panels", ps}};
}

std::string MatrixSet::to_csv() const {
  std::string o = "panel,m_function,depth,iteration,row,column,value\n";
  for (auto& p : panels)
    for (int64_t r = 0; r < p.matrix.rows(); ++r)
      for (int64_t c = 0; c < p.matrix.cols(); ++c)
        o += csv_field(p.title) + "," + p.m_function + "," + std::to_string(p.depth) + "," +
             (p.iteration >= 0 ? std::to_string(p.iteration) : std::string()) + "," +
             csv_field(p.matrix.row_labels[static_cast<size_t>(r)]) + "," +
             csv_field(p.matrix.col_labels[static_cast<size_t>(c)]) + "," + num(p.matrix.at(r, c)) + "\n";
  return o;
}

json ChannelGrid::to_json() const {
  json bl = json::array();
  for (auto& ch : blocks) {
    json a = json::array();
    for (auto& [b, e] : ch) a.push_back({b, e});
    bl.push_back(a);
  }
  return {{"tokens", tokens}, {"attention", attention.to_json()}, {"in_degree", in_degree},
          {"blocks", bl},     {"block_size", block_size},         {"caption", caption}};
}

std::string ChannelGrid::to_csv() const {
  std::string o = "channel,token_index,token,attention,in_degree,block\n";
  for (int64_t k = 0; k < attention.rows(); ++k) {
    const auto& bl = blocks[static_cast<size_t>(k)];
    for (int64_t t = 0; t < attention.cols(); ++t) {
      int64_t blk = -1;
      for (size_t b = 0; b < bl.size(); ++b)
        if (t >= bl[b].first && t < bl[b].second) blk = static_cast<int64_t>(b);
      o += std::to_string(k + 1) + "," + std::to_string(t) + "," + csv_field(tokens[static_cast<size_t>(t)]) + "," +
           num(attention.at(k, t)) + "," + std::to_string(in_degree[static_cast<size_t>(k)][static_cast<size_t>(t)]) +
           "," + std::to_string(blk) + "\n";
    }
  }
  return o;
}

// ------------------------------------------------------------------ length buckets
json LengthBuckets::to_json() const {
  json a = json::array();
  for (auto& k : buckets)
    a.push_back({{"label", k.label},
                 {"lo", k.lo},
                 {"hi", k.hi},
                 {"sequences", k.sequences},
                 {"units", k.units},
                 {metric, jnum(k.value)}});
  json j = {{"run", run}, {"metric", metric}, {"length_unit", length_unit}, {"split", split}, {"buckets", a}};
  if (!name.empty()) j["name"] = name;
  return j;
}

std::string LengthBuckets::to_csv() const {
  std::string o = "run,bucket,lo,hi,sequences,units," + metric + "\n";
  for (auto& k : buckets)
    o += csv_field(run) + "," + csv_field(k.label) + "," + std::to_string(k.lo) + "," + std::to_string(k.hi) + "," +
         std::to_string(k.sequences) + "," + std::to_string(k.units) + "," + num(k.value) + "\n";
  return o;
}

LengthBuckets make_length_buckets(const std::vector<int64_t>& edges) {
  if (edges.size() < 2) throw UserError("length buckets need at least two edges");
  LengthBuckets out;
  for (size_t i = 0; i + 1 < edges.size(); ++i) {
    if (edges[i + 1] <= edges[i]) throw UserError("length bucket edges must increase");
    MetricBucket k;
    k.lo = edges[i];
    k.hi = edges[i + 1];
    k.label = edges[i] % 10 == 0 ? std::to_string(edges[i] / 10)
                                 : "(" + std::to_string(edges[i]) + "," + std::to_string(edges[i + 1]) + "]";
    out.buckets.push_back(k);
  }
  return out;
}

void add_sequence(LengthBuckets& b, int64_t length, int64_t units, double sum) {
  for (auto& k : b.buckets)
    if (length > k.lo && length <= k.hi) {
      k.sequences += 1;
      k.units += units;
      k.sum += sum;
      return;
    }
}

void finish_buckets(LengthBuckets& b) {
  for (auto& k : b.buckets) {
    if (b.metric == "accuracy") k.value = k.sequences > 0 ? k.sum / static_cast<double>(k.sequences) : kNaN;
    else if (k.units <= 0) k.value = kNaN;
    else if (b.metric == "ppl") k.value = std::exp(k.sum / static_cast<double>(k.units));
    else k.value = k.sum / static_cast<double>(k.units) / std::log(2.0);
  }
}

std::vector<int64_t> default_edges_for(const std::string& task) {
  if (task == "char_lm") return {0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 120};
  if (task == "cloze") return {0, 100, 200, 300, 400, 500, 600, 800, 1000, 2000};  // document words (CBT: ~450)
  return {0, 10, 20, 30, 40, 50, 60, 80};
}

json BucketSet::to_json() const {
  json a = json::array();
  for (auto& b : runs) a.push_back(b.to_json());
  return a;
}

std::string BucketSet::to_csv() const {
  std::string o;
  for (size_t i = 0; i < runs.size(); ++i) {
    auto c = runs[i].to_csv();
    o += i == 0 ? c : c.substr(c.find('\n') + 1);
  }
  return o;
}

// ------------------------------------------------------------------ series, tables
json SeriesSet::to_json() const {
  json s = json::array();
  for (auto& e : series) {
    json xs = json::array(), ys = json::array(), es = json::array();
    for (double v : e.x) xs.push_back(jnum(v));
    for (double v : e.y) ys.push_back(jnum(v));
    for (double v : e.yerr) es.push_back(jnum(v));
    json o = {{"name", e.name}, {"x", xs}, {"y", ys}};
    if (!e.yerr.empty()) o["yerr"] = es;
    s.push_back(o);
  }
  json j = {{"title", title},     {"x_label", x_label}, {"y_label", y_label},
            {"caption", caption}, {"style", style},     {"series", s}};
  if (bin_width > 0) j["bin_width"] = bin_width;
  if (marker_step >= 0) j["marker_step"] = marker_step;
  return j;
}

std::string SeriesSet::to_csv() const {
  bool err = false;
  for (auto& s : series) err = err || !s.yerr.empty();
  std::string o = "series," + csv_field(x_label.empty() ? "x" : x_label) + "," +
                  csv_field(y_label.empty() ? "y" : y_label) + (err ? ",yerr" : "") + "\n";
  for (auto& s : series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      o += csv_field(s.name) + "," + num(s.x[i]) + "," + num(s.y[i]);
      if (err) o += "," + (i < s.yerr.size() ? num(s.yerr[i]) : std::string());
      o += "\n";
    }
  return o;
}

json TextTable::to_json() const {
  return {{"title", title}, {"caption", caption}, {"columns", columns}, {"rows", rows}};
}

std::string TextTable::to_csv() const {
  std::string o;
  for (size_t i = 0; i < columns.size(); ++i) o += (i ? "," : "") + csv_field(columns[i]);
  o += "\n";
  for (auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) o += (i ? "," : "") + csv_field(r[i]);
    o += "\n";
  }
  return o;
}

// ------------------------------------------------------------------ any result
json AnalysisResult::to_json() const {
  json j = {{"kind", kind}, {"caption", caption}};
  if (!warnings.empty()) j["warnings"] = warnings;
  std::visit(overloaded{[](const std::monostate&) {},
                        [&](const HeatmapSet& h) {
                          if (h.matrices.empty()) return;
                          json hj = h.to_json();
                          j["matrices"] = std::move(hj["matrices"]);
                          j["scale"] = std::move(hj["scale"]);
                        },
                        [&](const MatrixSet& m) {
                          if (!m.panels.empty()) j["composition"] = m.to_json();
                        },
                        [&](const ChannelGrid& g) {
                          if (g.attention.rows() > 0) j["grid"] = g.to_json();
                        },
                        [&](const BucketSet& b) {
                          if (!b.runs.empty()) j["buckets"] = b.to_json();
                        },
                        [&](const SeriesSet& s) {
                          if (!s.series.empty()) j["series"] = s.to_json();
                        },
                        [&](const TextTable& t) {
                          if (!t.columns.empty()) j["table"] = t.to_json();
                        }},
             data);
  return j;
}

std::string AnalysisResult::to_csv() const {
  return std::visit(overloaded{[](const std::monostate&) { return std::string(); },
                               [](const HeatmapSet& h) { return h.matrices.empty() ? std::string() : h.to_csv(); },
                               [](const MatrixSet& m) { return m.panels.empty() ? std::string() : m.to_csv(); },
                               [](const ChannelGrid& g) { return g.attention.rows() > 0 ? g.to_csv() : std::string(); },
                               [](const BucketSet& b) { return b.to_csv(); },
                               [](const SeriesSet& s) { return s.series.empty() ? std::string() : s.to_csv(); },
                               [](const TextTable& t) { return t.columns.empty() ? std::string() : t.to_csv(); }},
                    data);
}

void append_runs(AnalysisResult& all, const AnalysisResult& part) {
  all.warnings.insert(all.warnings.end(), part.warnings.begin(), part.warnings.end());
  if (auto* h = std::get_if<HeatmapSet>(&all.data)) {
    if (auto* p = std::get_if<HeatmapSet>(&part.data)) {
      h->matrices.insert(h->matrices.end(), p->matrices.begin(), p->matrices.end());
      h->titles.insert(h->titles.end(), p->titles.begin(), p->titles.end());
      h->shared_min = std::min(h->shared_min, p->shared_min);
      h->shared_max = std::max(h->shared_max, p->shared_max);
    }
  } else if (auto* b = std::get_if<BucketSet>(&all.data)) {
    if (auto* p = std::get_if<BucketSet>(&part.data)) b->runs.insert(b->runs.end(), p->runs.begin(), p->runs.end());
  } else if (auto* s = std::get_if<SeriesSet>(&all.data)) {
    if (auto* p = std::get_if<SeriesSet>(&part.data))
      s->series.insert(s->series.end(), p->series.begin(), p->series.end());
  }
}

}  // namespace cs
