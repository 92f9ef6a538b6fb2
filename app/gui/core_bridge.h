// The GUI's window onto cellscope_core. Only the bridges and workers (the
// cellscope_bridges library, app/gui/CMakeLists.txt) include core headers;
// everything here is Qt types, so the widely included GUI headers stay free of
// torch and nlohmann.
#pragma once
#include <QJsonObject>
#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>

#include "gui_types.h"
#include "option_form.h"

namespace cs {
struct MetricsRecord;
}

namespace gui {

QStringList cellNames();
QStringList taskNames();
QString cellDescription(const QString& cell);
QString taskDescription(const QString& task);

// The form fields of every option the cell and task have (cs::options_for),
// except the ones the window edits with its own controls (task.name,
// model.cell, dataset.name, dataset.path). Tooltip = OptionSpec::help + range + default.
QList<csw::OptionDesc> optionDescs(const QString& cell, const QString& task);
// Paths edited outside the form.
bool isDedicatedPath(const QString& path);

// cs::validate_config: (path, message) pairs; empty = valid.
QList<QPair<QString, QString>> validateConfig(const QJsonObject& cfg);
// The resolved config (defaults filled in). Call on a valid config.
QJsonObject resolveConfig(const QJsonObject& cfg);

// Builds the task (loads the dataset for its vocabulary) and counts the
// parameters. Blocking and slow for big corpora: call it off the GUI thread.
// Returns -1 and sets *error on failure.
qint64 parameterCount(const QJsonObject& cfg, QString* error);

QString defaultWorkspace();
QString resourcesDir();
QString presetsDir();
QString manifestPath();
QString dataCacheDir();
QString coreVersion();  // "LibTorch x.y"

// A dataset of datasets/manifest.json.
struct DatasetEntry {
  QString name, format, description;
  QStringList tasks;
  bool present = false;  // all its files are in the data cache
  bool built = false;    // Cellscope builds it (manifest "obtain": "build") instead of downloading it
};
QList<DatasetEntry> manifestDatasets();

// Guess a dataset file's format from its name and first bytes:
// "ptb_char" (a directory or file with ptb.char.*), "text8" (one long line of
// a-z and spaces), "jsonl" (each line a JSON object), "csv", or "text"; a directory:
// "ptb_char", "ptb_word", "gigaword", "cbt", "parallel", else "directory" (unknown).
QString detectFormat(const QString& path);

// Seconds as "42s", "3m07s" or "2h05m" (cs::format_duration, as the CLI shows them).
QString formatDuration(double seconds);

// One metrics.jsonl record as Qt values.
MetricPoint toMetricPoint(const cs::MetricsRecord& r);
// Parse one metrics.jsonl file (a torn last line is skipped). A forked run (its config.json,
// beside the file, has "parent": {"run_dir", "step"}) starts with its parent's records up to
// that step (and the parent's parent's, ...), so parent and child are drawn as one curve;
// joinParent = false reads the file alone.
QVector<MetricPoint> readMetricsFile(const QString& path, bool joinParent = true);
// The records the parent chain of a forked run contributes before the run's own ones (empty
// for a run that was not forked). At most 32 generations; a cycle ends the chain.
QVector<MetricPoint> parentMetrics(const QString& runDir);
// A run's fork origin from its config ("parent": {"run_dir", "step"}): false when it has none.
bool runParent(const QJsonObject& config, QString* parentDir, qint64* step);
// The complete metrics.jsonl lines after byte *offset (advanced past the last complete line);
// a file shorter than *offset (rewritten by a resume) is read again from the start (*rewound = true).
QVector<MetricPoint> readMetricsFrom(const QString& path, qint64* offset, bool* rewound = nullptr);

// Runs shown together (comparison legends): each run's directory and, when known, its
// config.json (cs::RunIdentity; hasConfig false: no config, which is not an empty one).
struct ComparedRun {
  QString dir;
  QJsonObject config;
  bool hasConfig = false;
};
// One short name per run, in order (cs::comparison_names): the run's label (label.txt), else the
// options that differ between the runs, abbreviated; ignoreKeys: flattened keys never used in a
// name (e.g. "training.seed" for seed groups).
QStringList comparisonNames(const QList<ComparedRun>& runs, const QStringList& ignoreKeys = QStringList());

// Whether a flattened key ("training.threads") is a bookkeeping option (cs::is_bookkeeping_option,
// config/common_options.h).
bool isBookkeepingOption(const QString& flatKey);

// The run's label (label.txt, cs::RunStore::read_label; "" when none) and setting it
// ("" removes it). False with *error on an invalid label or an unwritable directory.
QString readRunLabel(const QString& runDir);
bool writeRunLabel(const QString& runDir, const QString& label, QString* error);
// A fresh run directory name under workspace for cfg (cs::new_run_dir).
QString newRunDirectory(const QString& workspace, const QJsonObject& cfg);
// The step of each checkpoints/step_<N>.pt of a run, ascending (cs::RunStore::checkpoint_steps).
QList<qint64> checkpointSteps(const QString& runDir);

// The command-line program (cellscope-cli) the window starts for data-parallel runs and
// forks: $CELLSCOPE_CLI, else beside this program (the .deb's /usr/bin), else the build
// tree's app/cli/ (from app/gui/ or tests/), else on PATH. Empty when not found.
QString cliProgram();
// Intra-op threads for each of n local training processes started by the window: the
// cores less one for the window, divided by n (at least 1), so n processes do not
// oversubscribe the machine. n = 1 is the in-process run's count.
int threadsPerProcess(int n);

// The core's cache of large CPU blocks as LibTorch's CPU allocator (cs::install_cpu_cache,
// util/cpu_cache.h): called once, first thing in main(). Whether it is installed.
bool installCpuCache();

}  // namespace gui
