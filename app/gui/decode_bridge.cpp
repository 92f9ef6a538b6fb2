#include "decode_bridge.h"

#include <QElapsedTimer>
#include <QSaveFile>

#include <exception>

#include "data/text_metrics.h"
#include "export.h"
#include "tasks/seq2seq_decode.h"

namespace gui {

namespace {
QString qstr(const std::string& s) { return QString::fromStdString(s); }

QString tsvField(const QString& s) {
  QString e = s;
  e.replace(QStringLiteral("\r\n"), QStringLiteral(" "));
  for (QChar c : {QLatin1Char('\t'), QLatin1Char('\n'), QLatin1Char('\r')}) e.replace(c, QLatin1Char(' '));
  return e;
}
}  // namespace

QString DecodeTable::title() const {
  QString s = checkpoint;
  if (checkpoint == QLatin1String("best") || checkpoint == QLatin1String("last"))
    s += QStringLiteral(" (step %1)").arg(step);
  s += QStringLiteral(", %1, ").arg(split);
  s += beam <= 1 ? QStringLiteral("greedy") : QStringLiteral("beam %1").arg(beam);
  if (beam > 1 && lengthPenalty != 1.0) s += QStringLiteral(", alpha %1").arg(lengthPenalty);
  return s;
}

DecodeTable runDecode(const DecodeJob& job, const QString& checkpoint,
                      const std::function<bool(qint64, qint64)>& progress, QString* error, bool* cancelled) {
  DecodeTable t;
  t.runDir = job.runDir;
  t.checkpoint = checkpoint;
  t.split = job.split;
  t.beam = job.beam;
  t.lengthPenalty = job.lengthPenalty;
  t.maxExamples = job.maxExamples;
  if (error) error->clear();
  if (cancelled) *cancelled = false;
  QElapsedTimer timer;
  timer.start();
  try {
    cs::DecodeOptions o;
    o.split = job.split.toStdString();
    o.checkpoint = checkpoint.toStdString();
    o.max_examples = job.maxExamples;
    o.beam = job.beam;
    o.length_penalty = job.lengthPenalty;
    o.max_length = job.maxLength;
    std::function<bool(int64_t, int64_t)> cb;
    if (progress) cb = [&progress](int64_t done, int64_t total) { return progress(qint64(done), qint64(total)); };
    const cs::DecodeReport r = cs::decode_run(job.runDir.toStdString(), o, cb);
    t.step = r.step;
    t.rows.reserve(static_cast<int>(r.samples.size()));
    int index = 0;
    for (const cs::DecodeSample& s : r.samples)
      t.rows.push_back({++index, qstr(s.source), qstr(s.reference), qstr(s.hypothesis), s.score});
    for (const auto& kv : r.metrics) t.metrics.push_back({qstr(kv.first), kv.second});
  } catch (const cs::Cancelled&) {
    if (cancelled) *cancelled = true;
    t.rows.clear();
    t.metrics.clear();
  } catch (const std::exception& e) {
    const std::string w = e.what();
    if (error) *error = qstr(w.substr(0, w.find("\nException raised from")));
    if (error && error->isEmpty()) *error = QStringLiteral("decoding failed");
    t.rows.clear();
    t.metrics.clear();
  }
  t.seconds = static_cast<double>(timer.nsecsElapsed()) * 1e-9;
  return t;
}

QString decodeTablesText(const QVector<DecodeTable>& tables, TableFormat format, bool header) {
  const bool csv = format == TableFormat::Csv;
  const QChar sep = csv ? QLatin1Char(',') : QLatin1Char('\t');
  auto field = [csv](const QString& s) { return csv ? csw::csvField(s) : tsvField(s); };
  QString out;
  if (header)
    out += QStringList{QStringLiteral("checkpoint"), QStringLiteral("step"),   QStringLiteral("split"),
                       QStringLiteral("index"),      QStringLiteral("source"), QStringLiteral("reference"),
                       QStringLiteral("hypothesis"), QStringLiteral("score")}
               .join(sep) +
           QLatin1Char('\n');
  for (const DecodeTable& t : tables)
    for (const DecodeRow& r : t.rows) {
      out += QStringList{field(t.checkpoint), QString::number(t.step),
                         field(t.split),      QString::number(r.index),
                         field(r.source),     field(r.reference),
                         field(r.hypothesis), QString::number(r.score, 'g', 8)}
                 .join(sep) +
             QLatin1Char('\n');
    }
  return out;
}

bool writeDecodeTables(const QString& path, const QVector<DecodeTable>& tables, TableFormat format, QString* error) {
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly) || f.write(decodeTablesText(tables, format).toUtf8()) < 0 || !f.commit()) {
    if (error) *error = QStringLiteral("Could not write %1: %2").arg(path, f.errorString());
    return false;
  }
  return true;
}

QString bleuSignature() { return qstr(cs::bleu_signature(cs::BleuOptions{})); }
QString rougeSignature() { return qstr(cs::rouge_signature(cs::RougeOptions{})); }

}  // namespace gui
