#include "sweep_worker.h"

#include <QFile>
#include <QJsonDocument>

#include <chrono>
#include <cmath>

#include "json_qt.h"
#include "sweep/significance.h"
#include "sweep/sweep.h"
#include "sweep/table.h"
#include "util/error.h"
#include "util/paths.h"

namespace gui {

QString sweepsRoot(const QString& workspace) { return workspace + QStringLiteral("/sweeps"); }

QJsonObject buildSweepSpec(const QString& name, const QJsonObject& base, const QList<SweepAxisEdit>& axes,
                           const QList<qint64>& seeds, int* points, QString* error) {
  try {
    cs::json spec = {{"name", name.toStdString()}, {"base", toCoreJson(base)}};
    cs::json grid = cs::json::array();
    for (auto& a : axes) {
      cs::json vals = cs::json::array();
      for (auto& v : a.values)
        if (!v.trimmed().isEmpty()) vals.push_back(parseValue(v));
      grid.push_back({{"option", a.option.trimmed().toStdString()}, {"values", vals}});
    }
    spec["grid"] = grid;
    cs::json s = cs::json::array();
    for (auto x : seeds) s.push_back(x);
    spec["seeds"] = s;
    cs::json table = {{"metric", "test"}};
    if (!axes.isEmpty()) table["rows"] = axes[0].option.trimmed().toStdString();
    if (axes.size() > 1) table["cols"] = axes[1].option.trimmed().toStdString();
    spec["table"] = table;
    auto pts = cs::expand_sweep(cs::SweepSpec::from_json(spec));
    if (points) *points = static_cast<int>(pts.size());
    return toQtJson(spec);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return {};
  }
}

bool sweepTable(const QString& dir, const QString& pairedRef, SweepTableView* out, QString* error) {
  try {
    auto r = cs::read_sweep_results(dir.toStdString());
    auto t = cs::sweep_table(r, pairedRef.toStdString());
    SweepTableView v;
    v.title = QString::fromStdString(t.title);
    v.metric = QString::fromStdString(t.metric);
    v.rowHeader = QString::fromStdString(t.row_header);
    v.colHeader = QString::fromStdString(t.col_header);
    v.higherIsBetter = t.higher_is_better;
    v.missing = t.missing;
    for (auto& s : t.row_labels) v.rows << QString::fromStdString(s);
    for (auto& s : t.col_labels) v.cols << QString::fromStdString(s);
    for (auto& row : t.cells) {
      QVector<SweepCellView> vr;
      for (auto& c : row) {
        SweepCellView cv;
        cv.text =
            c.reference
                ? QStringLiteral("(ref.)")
                : QString::fromStdString(cs::format_cell(c)).replace(QStringLiteral(" +- "), QStringLiteral(" ± "));
        cv.best = c.best;
        cv.n = c.n;
        cv.mean = c.mean;
        cv.std = c.std;
        if (c.has_sig) {
          cv.verdict = QString::fromStdString(c.sig.text());
          cv.tests = QString::fromStdString(c.sig.test());
          if (!std::isnan(c.sig.p_examples))
            cv.tests += QStringLiteral("; seeds: %1, test examples: %2")
                            .arg(QString::fromStdString(cs::p_text(c.sig.t.p)),
                                 QString::fromStdString(cs::p_text(c.sig.p_examples)));
        }
        vr << cv;
      }
      v.cells << vr;
    }
    QStringList seeds;
    for (auto s : t.seeds) seeds << QString::number(s);
    v.caption =
        (t.paired ? QStringLiteral("paired difference to '%1' of ").arg(QString::fromStdString(t.paired_reference))
                  : QString()) +
        v.metric +
        QStringLiteral(" (%1 is better), mean ± std over seeds {%2}")
            .arg(v.higherIsBetter ? "higher" : "lower", seeds.join(','));
    if (!v.colHeader.isEmpty()) v.caption += QStringLiteral("; rows: %1, columns: %2").arg(v.rowHeader, v.colHeader);
    if (v.missing) v.caption += QStringLiteral("; %1 run(s) without a value yet").arg(v.missing);
    // the data the runs used, the paper's they stand in for, and the departures (every export says them too)
    if (!t.labels.empty()) v.caption += QStringLiteral("; ") + QString::fromStdString(t.labels.data_line());
    if (!t.labels.paper.departures.empty())
      v.caption += QStringLiteral("; departs from the paper in: ") + QString::fromStdString(t.labels.departure_names());
    for (auto& x : t.labels.excluded) v.caption += QStringLiteral("; left out: ") + QString::fromStdString(x);
    // the paired view: what its p-values cover (the seeds' spread; the test set's error where stored)
    if (!t.sampling_note.empty()) v.caption += QStringLiteral(". Note: ") + QString::fromStdString(t.sampling_note);
    *out = v;
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
}

bool exportSweepTable(const QString& dir, const QString& pairedRef, const QString& path, QString* error) {
  try {
    auto t = cs::sweep_table(cs::read_sweep_results(dir.toStdString()), pairedRef.toStdString());
    std::string data;
    if (path.endsWith(".csv")) data = cs::table_to_csv(t);
    else if (path.endsWith(".tex")) data = cs::table_to_latex(t);
    else if (path.endsWith(".json")) data = cs::table_to_json(t).dump(2) + "\n";
    else data = cs::table_to_text(t);
    cs::atomic_write(path.toStdString(), data);
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
}

bool sweepSeries(const QString& dir, QList<SweepSeriesView>* out, QString* xName, QString* error) {
  try {
    auto r = cs::read_sweep_results(dir.toStdString());
    if (r.spec.axes.empty()) throw cs::UserError("the sweep has no axis");
    const auto& ax = r.spec.axes[0];
    for (auto& l : ax.labels) {
      char* end = nullptr;
      std::strtod(l.c_str(), &end);
      if (end == l.c_str() || *end) throw cs::UserError("the first axis (" + ax.name + ") is not numeric");
    }
    auto s = cs::sweep_series(r, ax.name);
    QStringList others;  // the legend names the other axes: "training.lr = 0.02"
    for (auto& a : r.spec.axes)
      if (a.name != ax.name) others << QString::fromStdString(a.name);
    out->clear();
    for (auto& p : s) {
      const QString label = others.isEmpty() ? QString::fromStdString(p.series)
                                             : others.join(QStringLiteral(" / ")) + QStringLiteral(" = ") +
                                                   QString::fromStdString(p.series);
      if (out->isEmpty() || out->back().label != label) out->append(SweepSeriesView{label, {}, {}, {}});
      out->back().x << std::strtod(p.x.c_str(), nullptr);
      out->back().mean << p.mean;
      out->back().std << p.std;
    }
    if (xName) *xName = QString::fromStdString(ax.name);
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
}

SweepWorker::SweepWorker(QObject* parent) : QObject(parent) {}

void SweepWorker::start(const QByteArray& specJson, const QString& workspace, int threads) {
  m_running = true;
  m_stop = false;
  try {
    cs::SweepSpec spec = cs::SweepSpec::from_json(cs::parse_json(specJson.toStdString(), "sweep spec"));
    cs::TrainerControl control;
    cs::SweepRunOptions o;
    o.workspace = workspace.toStdString();
    o.default_threads = threads;
    o.control = &control;
    auto last = std::chrono::steady_clock::now();
    o.on_point_start = [&](const cs::SweepPoint& p, int n, bool resumed, const std::string& dir) {
      Q_EMIT pointStarted(p.index, n, QString::fromStdString(p.id), resumed, QString::fromStdString(dir));
    };
    o.on_point_done = [&](const cs::SweepPoint& p, int n, const cs::RunSummary& s) {
      Q_EMIT pointFinished(p.index, n, QString::fromStdString(p.id), QString::fromStdString(s.status));
    };
    o.on_progress = [&](const cs::SweepPoint&, const cs::Progress& pr) {
      if (m_stop.load()) control.stop = true;
      auto now = std::chrono::steady_clock::now();
      if (now - last > std::chrono::milliseconds(200) || pr.step == pr.total_steps) {
        last = now;
        Q_EMIT progress(static_cast<int>(pr.step), static_cast<int>(pr.total_steps));
      }
    };
    if (m_stop.load()) control.stop = true;
    auto r = cs::run_sweep(spec, o);
    m_running = false;
    Q_EMIT finished(r.stopped, r.done, r.total, QString::fromStdString(r.dir));
  } catch (const std::exception& e) {
    m_running = false;
    std::string w = e.what();
    Q_EMIT failed(QString::fromStdString(w.substr(0, w.find("\nException raised from"))));
  }
}

}  // namespace gui
