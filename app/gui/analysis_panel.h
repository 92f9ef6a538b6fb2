// The "Analyses" tab: pick a run (and a second one to compare side by
// side / overlay), an analysis kind and its inputs, scrub through the run's
// checkpoints with a slider (the view is recomputed on a worker thread and the
// training curve marks the step being viewed), read the analysis' definition,
// and export the figure (PNG/PDF/SVG/CSV through app/figures).
//
// Keyboard: Ctrl+Return compute, Alt+Left / Alt+Right previous / next
// checkpoint, Ctrl+Shift+E export figure, Ctrl+Shift+C export CSV.
//
// Threading: one AnalysisWorker on a QThread (moveToThread, no run() override).
// At most one job runs at a time; while one runs, only the newest request is
// kept and sent when it finishes (scrubbing never piles up work).
#pragma once
#include <QList>
#include <QPointer>
#include <QString>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include <memory>
#include <optional>

#include "analysis_bridge.h"

class QComboBox;
class QGroupBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QScrollArea;
class QSlider;
class QSpinBox;
class QSplitter;
class QTextBrowser;
class QThread;
class QTimer;

namespace csw {
class CurvePlot;
}
namespace csf {
class Figure;
}

namespace gui {

class AnalysisPanel : public QWidget {
  Q_OBJECT
 public:
  explicit AnalysisPanel(QWidget* parent = nullptr);
  ~AnalysisPanel() override;

  // ---- runs
  void setWorkspace(const QString& dir);  // lists the runs under dir
  QString workspace() const { return m_workspace; }
  void refreshRuns();
  QStringList runDirs() const;
  bool selectRun(const QString& dir);        // run A (the one scrubbed)
  bool selectSecondRun(const QString& dir);  // run B; empty = none
  QString currentRun() const;
  QString secondRun() const;
  QStringList secondRunChoices() const;  // what "Compare with" offers (never the run itself)

  // ---- analysis and inputs
  QStringList kindNames() const;
  bool setKind(const QString& name);
  QString kind() const;
  QString helpText() const;  // the current kind's help + definition (caption)
  void setText(const QString& text);
  QString text() const;
  void setLastK(int k);
  void setPosition(int index);  // -1 = last character (aoa: the question index, from 0)
  int position() const;
  QString positionLabel() const;    // the position input's label as shown ("Character", "Question")
  QString textPlaceholder() const;  // what the text input asks for (a seq2seq source, ...)
  void setSplit(const QString& split);
  void setEdges(const QVector<qint64>& edges);
  QVector<qint64> edges() const;  // parsed from the edges field; empty = default
  void setColorMap(const QString& name);

  // ---- checkpoints
  QList<CheckpointEntry> checkpoints() const { return m_checkpoints; }
  QSlider* checkpointSlider() const { return m_slider; }
  QString currentCheckpointId() const;
  qint64 currentCheckpointStep() const;

  // ---- view
  csf::Figure* figure() const { return m_figure; }
  csw::CurvePlot* trainingCurve() const { return m_curve; }
  bool isBusy() const { return m_busy; }
  QString lastError() const { return m_lastError; }
  QStringList lastWarnings() const {
    return m_warnings;
  }  // of the figure shown (different steps, data, unknown symbols)
  QString statusText() const;
  double lastComputeSeconds() const { return m_lastSeconds; }
  int computedCount() const { return m_computed; }

  // ---- export (.png .pdf .svg .csv)
  bool exportTo(const QString& path, QString* error = nullptr);
  // Where File > Export of the figure proposes to write: the analysed run's folder (else the
  // workspace, else home), named "<run>_<kind>_<checkpoint>.<suffix>".
  QString defaultExportPath(const QString& suffix) const;

 public Q_SLOTS:
  void compute();  // for the current settings (queued when busy)
  void previousCheckpoint();
  void nextCheckpoint();
  void fillDefaultText();  // text from the run's corpus (start of the valid split)

 Q_SIGNALS:
  void computed(bool ok);  // after each outcome has been shown
  void requestJob(const gui::AnalysisJob& job);

 protected:
  void showEvent(QShowEvent* ev) override;  // re-lists the runs (new ones may have finished)

 private:
  void buildUi();  // and its parts, left to right
  QScrollArea* buildControls();
  QGroupBox* buildInputsBox();
  QGroupBox* buildCheckpointBox();
  QHBoxLayout* buildExportRow();
  QSplitter* buildFigureSide();
  void connectControls();
  void installShortcuts();
  void populateKinds();
  void onRunChanged();
  void fillSecondRuns(const QString& keep);
  void onKindChanged();
  void onSliderMoved(int index);
  void onOutcome(const gui::AnalysisOutcome& o);
  void submit(const AnalysisJob& job);
  AnalysisJob currentJob() const;
  void showFigure(csf::Figure* fig);
  void showMessage(const QString& text, bool error);
  void loadTrainingCurve();
  void updateMarker();
  void updateInputsVisibility();
  const AnalysisKindInfo* kindInfo() const;
  void exportInteractive(const QString& filter, const QString& suffix);

  QString m_workspace;
  QString m_runTask;  // the task of the run analysed ("" when unknown)
  QList<AnalysisKindInfo> m_kinds;
  QList<CheckpointEntry> m_checkpoints;

  QComboBox* m_runA = nullptr;
  QComboBox* m_runB = nullptr;
  QComboBox* m_kind = nullptr;
  QTextBrowser* m_help = nullptr;
  QPlainTextEdit* m_text = nullptr;
  QPushButton* m_corpusButton = nullptr;
  QSpinBox* m_lastK = nullptr;
  QSpinBox* m_position = nullptr;
  QLabel* m_positionLabel = nullptr;
  QComboBox* m_split = nullptr;
  QLineEdit* m_edges = nullptr;
  QSpinBox* m_bins = nullptr;
  QComboBox* m_colorMap = nullptr;
  QSlider* m_slider = nullptr;
  QLabel* m_checkpointLabel = nullptr;
  QPushButton* m_computeButton = nullptr;
  QLabel* m_status = nullptr;
  QScrollArea* m_figureArea = nullptr;
  csf::Figure* m_figure = nullptr;
  csw::CurvePlot* m_curve = nullptr;
  QList<QWidget*> m_rowK, m_rowPos, m_rowSplit, m_rowEdges, m_rowBins, m_rowText, m_rowCmap;

  QThread* m_thread = nullptr;
  AnalysisWorker* m_worker = nullptr;
  QTimer* m_debounce = nullptr;
  bool m_busy = false;
  bool m_autoRecompute = false;  // after the first computation, moving the slider recomputes
  std::optional<AnalysisJob> m_pending;
  quint64 m_nextId = 1;
  QString m_lastError;
  QStringList m_warnings;
  double m_lastSeconds = 0;
  int m_computed = 0;
};

}  // namespace gui
