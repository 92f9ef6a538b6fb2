// Decoding seq2seq runs for the window, torch-free: plain structs in and out,
// so the Decode tab's worker thread and the GUI thread exchange no tensors. The
// implementation (decode_bridge.cpp) is the only file of the tab that reaches the
// core (cs::decode_run, tasks/seq2seq_decode.h).
#pragma once
#include <QMetaType>
#include <QPair>
#include <QString>
#include <QStringList>
#include <QVector>

#include <functional>

namespace gui {

// What the user asked for: one run, one or more of its checkpoints, decoded one after another.
struct DecodeJob {
  QString runDir;
  QStringList checkpoints{QStringLiteral("best")};  // "best" | "last" | "step_N"
  QString split = QStringLiteral("valid");          // "train" | "valid" | "test"
  int maxExamples = 20;                             // the first N examples of the split (0 = all)
  int beam = 10;                                    // 1 = greedy
  double lengthPenalty = 1.0;                       // alpha of the length normalisation
  int maxLength = 0;                                // 0 = the task's default
};

struct DecodeRow {
  int index = 0;  // 1-based position of the example in the split
  QString source, reference, hypothesis;
  double score = 0;  // the hypothesis' (length-normalised) log-probability under the model
};

// The outputs of one checkpoint.
struct DecodeTable {
  QString runDir, checkpoint, split;
  qint64 step = 0;
  int beam = 10;
  double lengthPenalty = 1.0;
  int maxExamples = 0;
  QVector<DecodeRow> rows;
  QVector<QPair<QString, double>> metrics;  // as cs::DecodeReport::metrics: bleu, rouge1, ..., lead_bleu, ...
  double seconds = 0;
  double metric(const QString& key, double fallback) const {
    for (const auto& kv : metrics)
      if (kv.first == key) return kv.second;
    return fallback;
  }
  bool hasMetric(const QString& key) const {
    for (const auto& kv : metrics)
      if (kv.first == key) return true;
    return false;
  }
  // "best (step 400), valid, beam 10"
  QString title() const;
};

// One checkpoint's decode; never throws. progress(done, total) after each example (any
// thread; returning false cancels). On failure *error is set; on a cancel *cancelled.
DecodeTable runDecode(const DecodeJob& job, const QString& checkpoint,
                      const std::function<bool(qint64, qint64)>& progress, QString* error, bool* cancelled);

// The tables as text, one row per sample with its checkpoint and step in front:
// checkpoint, step, split, index, source, reference, hypothesis, score.
// CSV: RFC 4180 (fields with a comma, quote or line break are quoted, quotes doubled);
// TSV: fields with tabs and line breaks turned into spaces (TSV has no quoting).
enum class TableFormat { Csv, Tsv };
QString decodeTablesText(const QVector<DecodeTable>& tables, TableFormat format, bool header = true);
// Written with QSaveFile (all or nothing). False with *error naming the file.
bool writeDecodeTables(const QString& path, const QVector<DecodeTable>& tables, TableFormat format, QString* error);

// What the scores are, as the outside tools print it, for the default options: sacreBLEU's
// signature (cs::bleu_signature, one reference) and rouge-score's settings (cs::rouge_signature;
// core/base/data/text_metrics.h).
QString bleuSignature();
QString rougeSignature();

}  // namespace gui

Q_DECLARE_METATYPE(gui::DecodeJob)
Q_DECLARE_METATYPE(gui::DecodeTable)
