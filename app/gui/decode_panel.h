// The "Decode" tab: the outputs of a seq2seq run (headline generation,
// translation). Pick a run, one or more of its checkpoints (best, last, step_N),
// the split, the beam width (10 as in the MC-RNN paper; 1 = greedy), the length
// penalty and the number of examples; Decode runs on a worker thread with a
// progress bar, an ETA and Cancel (Esc). Each decoded checkpoint keeps its table
// of sample outputs (source, reference, hypothesis, score), chosen with the
// selector (or by clicking its row of the metrics table above, which lists
// BLEU and ROUGE-1/2/L of every decoded checkpoint and the lead baseline beside
// them), so outputs can be compared across checkpoints. The table exports to CSV
// and TSV and copies as TSV.
//
// Keyboard (while the tab has focus): Ctrl+Return decode, Esc cancel,
// Alt+Left / Alt+Right previous / next decoded checkpoint, Ctrl+C copy the
// selected rows (all rows when none is selected), Ctrl+Shift+C export CSV,
// Ctrl+Shift+T export TSV.
//
// Threading: one DecodeWorker moved to a QThread (no run() override); an atomic
// flag cancels (decode_run's progress callback returns false, it throws
// cs::Cancelled); exceptions become failed(QString); only plain structs
// (decode_bridge.h) cross threads.
#pragma once
#include <QElapsedTimer>
#include <QVector>
#include <QWidget>

#include <atomic>

#include "decode_bridge.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QHBoxLayout;
class QLabel;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QSplitter;
class QTableWidget;
class QThread;

namespace gui {

class RunTableModel;

class DecodeWorker : public QObject {
  Q_OBJECT
 public:
  // Any thread: the job running now stops at its next example.
  void cancel() { m_cancel.store(true); }
  void resetCancel() { m_cancel.store(false); }
  bool cancelRequested() const { return m_cancel.load(); }

 public Q_SLOTS:
  void decode(const gui::DecodeJob& job);

 Q_SIGNALS:
  // Examples done of the checkpoint `index` (of `count`); emitted at most every 50 ms and at the end of each.
  void progress(int index, int count, qint64 done, qint64 total);
  void tableReady(const gui::DecodeTable& table);  // one checkpoint finished
  void failed(const QString& message);             // the job ends; earlier checkpoints' tables stay
  void cancelled();                                // the job ends; earlier checkpoints' tables stay
  void finished();                                 // after every job, whatever its outcome

 private:
  std::atomic<bool> m_cancel{false};
};

class DecodePanel : public QWidget {
  Q_OBJECT
 public:
  explicit DecodePanel(RunTableModel* runs, QWidget* parent = nullptr);
  ~DecodePanel() override;

  // Runs offered: the workspace's seq2seq runs with checkpoints, as directories.
  QStringList runDirs() const;
  bool selectRun(const QString& dir);
  QString currentRun() const;
  // The checkpoints of the current run (best, last, step_N ascending) and the ticked ones.
  QStringList availableCheckpoints() const;
  QStringList checkedCheckpoints() const;
  bool setCheckedCheckpoints(const QStringList& names);  // false when one is not offered

  DecodeJob job() const;  // from the controls
  void setJob(const DecodeJob& j);

  bool isBusy() const { return m_busy; }
  QProgressBar* progressBar() const { return m_progress; }
  QString progressText() const;
  QString statusText() const;
  QPushButton* decodeButton() const { return m_decodeButton; }
  QPushButton* cancelButton() const { return m_cancelButton; }

  // The decoded tables, in the order they were decoded (a checkpoint decoded again with the same
  // split, beam and length penalty replaces its table).
  const QVector<DecodeTable>& tables() const { return m_tables; }
  int currentTable() const;  // -1 when none
  void setCurrentTable(int index);
  QComboBox* tableSelector() const { return m_tableCombo; }
  QTableWidget* samplesTable() const { return m_samples; }
  DecodeWorker* worker() const { return m_worker; }  // its signals drive the view (tests send tables through it)
  QTableWidget* metricsTable() const { return m_metrics; }
  void clearTables();

  // The current table (or every table) as CSV/TSV; the copied text of the selected rows.
  bool exportTables(const QString& path, TableFormat format, bool allTables, QString* error = nullptr) const;
  QString selectedRowsText() const;

 public Q_SLOTS:
  void decode();  // the job of the controls, on the worker thread
  void cancel();
  void copySelection();
  void refreshRuns();

 Q_SIGNALS:
  void requestDecode(const gui::DecodeJob& job);
  void tableAdded(int index);
  void finished(bool ok);  // false: failed or cancelled

 private:
  // The constructor's groups, top to bottom (decode_panel_ui.cpp; each builds one group and sets the members it owns).
  QFormLayout* buildSourceForm();
  QHBoxLayout* buildRunRow();
  QHBoxLayout* buildResultRow();
  QSplitter* buildResultTables();
  QLabel* buildStatusLabel();
  void connectWorker();
  void connectControls();
  void installShortcuts();
  void connectRunModel();

  void refreshCheckpoints();
  void takeRunDefaults();  // the run's task.beam and task.length_penalty into the controls
  void onProgress(int index, int count, qint64 done, qint64 total);
  void onTable(const DecodeTable& t);
  void onDone();
  void showTable(int index);
  void rebuildMetrics();
  void exportInteractive(TableFormat format);
  void setBusy(bool busy);

  static constexpr int kProgressMax = 1000;  // the progress bar's range (0..kProgressMax)
  RunTableModel* m_runs;
  QComboBox* m_runCombo;
  QListWidget* m_checkpoints;
  QComboBox* m_split;
  QSpinBox* m_beam;
  QDoubleSpinBox* m_lengthPenalty;
  QSpinBox* m_examples;
  QSpinBox* m_maxLength;
  QPushButton* m_decodeButton;
  QPushButton* m_cancelButton;
  QProgressBar* m_progress;
  QLabel* m_progressLabel;
  QLabel* m_status;
  QComboBox* m_tableCombo;
  QCheckBox* m_exportAll;
  QTableWidget* m_metrics;
  QTableWidget* m_samples;
  QThread* m_thread;
  DecodeWorker* m_worker;
  QVector<DecodeTable> m_tables;
  QVector<int> m_metricsRowTable;  // metrics table row -> table index (-1: a baseline row)
  QElapsedTimer m_clock;
  DecodeJob m_running;
  bool m_busy = false;
  bool m_failed = false, m_wasCancelled = false;
};

}  // namespace gui
