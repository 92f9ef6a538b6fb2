// The "Generate" tab: text from a char-LM or word-LM run of the workspace,
// with every token shaded by the model's probability of it (white = sure, red =
// surprised; the value as a tooltip). Generation runs on a worker object moved to a
// QThread; only plain structs (generate_bridge.h) cross threads.
#pragma once
#include <QWidget>

#include "generate_bridge.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTextEdit;
class QThread;

namespace gui {

class RunTableModel;

class GenerateWorker : public QObject {
  Q_OBJECT
 public Q_SLOTS:
  void generate(const gui::GenRequest& r);
 Q_SIGNALS:
  void done(const gui::GenResult& result);
};

class GeneratePanel : public QWidget {
  Q_OBJECT
 public:
  explicit GeneratePanel(RunTableModel* runs, QWidget* parent = nullptr);
  ~GeneratePanel() override;

  // Runs offered (char_lm and word_lm runs of the workspace), as directories.
  QStringList runDirs() const;
  bool selectRun(const QString& dir);
  GenRequest request() const;  // from the controls
  void setRequest(const GenRequest& r);
  bool isBusy() const { return m_busy; }
  const GenResult& lastResult() const { return m_last; }
  QString plainText() const;  // the shown text
  QTextEdit* textView() const { return m_text; }
  QString statusText() const;
  // The shaded text as a standalone HTML page.
  QString toHtml() const;
  bool saveHtml(const QString& path, QString* error = nullptr) const;
  // Shading of a probability: its surprisal -log2 p from white (0 bits) to red (10 bits or more).
  static QColor shade(double prob);

 public Q_SLOTS:
  void generate();
  void refreshRuns();

 Q_SIGNALS:
  void requestGeneration(const gui::GenRequest& r);
  void finished(bool ok);

 private:
  void refreshCheckpoints();
  void show(const GenResult& r);

  RunTableModel* m_runs;
  QComboBox* m_runCombo;
  QComboBox* m_checkpoint;
  QLineEdit* m_seedText;
  QSpinBox* m_length;
  QDoubleSpinBox* m_temperature;
  QSpinBox* m_seed;
  QSpinBox* m_topK;
  QPushButton* m_go;
  QPushButton* m_save;
  QTextEdit* m_text;
  QLabel* m_status;
  QThread* m_thread;
  GenerateWorker* m_worker;
  GenResult m_last;
  bool m_busy = false;
};

}  // namespace gui
