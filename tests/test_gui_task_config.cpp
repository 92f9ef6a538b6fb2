// The configure panel with the issue-18 tasks: the task list (from the task registry) offers
// seq2seq, its options (from the schema) are in the form, and the dataset picker offers only the
// datasets whose manifest "tasks" name the chosen task (a fixture manifest, then the real one).
#include <QComboBox>
#include <QPushButton>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest/QtTest>

#include "configure_panel.h"
#include "core_bridge.h"
#include "harness.h"
#include "option_form.h"

namespace {
QJsonObject entry(const QString& name, const QStringList& tasks, const QString& format) {
  QJsonObject e{{"name", name},
                {"format", format},
                {"obtain", "user"},
                {"path", name + ".txt"},
                {"files", QJsonArray{name + ".txt"}},
                {"description", "fixture " + name}};
  if (!tasks.isEmpty()) e.insert("tasks", QJsonArray::fromStringList(tasks));
  return e;
}

// Sets an environment variable for a scope.
struct EnvGuard {
  QByteArray name, old;
  bool had;
  EnvGuard(const char* n, const QString& v) : name(n), old(qgetenv(n)), had(qEnvironmentVariableIsSet(n)) {
    qputenv(n, v.toUtf8());
  }
  ~EnvGuard() {
    if (had) qputenv(name.constData(), old);
    else qunsetenv(name.constData());
  }
};
}  // namespace

class GuiTaskConfigTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void seq2seqTaskAndItsDatasets() {
    const QString manifest = cstest::temp_dir() + "/task-config-manifest.json";
    QFile f(manifest);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QJsonDocument(QJsonObject{{"version", 1},
                                      {"datasets", QJsonArray{entry("tiny-text", {"char_lm", "word_lm"}, "text"),
                                                              entry("tiny-headlines", {"seq2seq"}, "headlines"),
                                                              entry("tiny-parallel", {"seq2seq"}, "parallel"),
                                                              entry("tiny-cbt-cn", {"cloze"}, "cbt"),
                                                              entry("tiny-mails", {"classify"}, "jsonl")}}})
                .toJson());
    f.close();
    EnvGuard env("CELLSCOPE_MANIFEST", manifest);
    QVERIFY(gui::taskNames().contains("seq2seq"));
    gui::ConfigurePanel panel;
    QVERIFY(panel.setConfigValue("task.name", "seq2seq"));
    QCOMPARE(panel.datasetChoices(), (QStringList{"tiny-headlines", "tiny-parallel"}));
    QCOMPARE(panel.currentConfig().value("dataset").toObject().value("name").toString(), QString("tiny-headlines"));
    // The task's own options come from the schema into the form.
    QStringList taskOptions;
    for (const QString& p : panel.form()->paths())
      if (p.startsWith("task.")) taskOptions << p;
    QVERIFY2(!taskOptions.isEmpty(), qPrintable(panel.form()->paths().join(", ")));
    for (const auto& d : gui::optionDescs("gru", "seq2seq"))
      QVERIFY2(panel.form()->paths().contains(d.path()), qPrintable(d.path()));
    // Back to a language model: its datasets only.
    QVERIFY(panel.setConfigValue("task.name", "char_lm"));
    QCOMPARE(panel.datasetChoices(), QStringList{"tiny-text"});
    QVERIFY(panel.setConfigValue("task.name", "classify"));
    QCOMPARE(panel.datasetChoices(), QStringList{"tiny-mails"});
  }

  void realManifestOffersSpamHeadlinesForSeq2seq() {
    gui::ConfigurePanel panel;
    QVERIFY(panel.setConfigValue("task.name", "seq2seq"));
    const QStringList offered = panel.datasetChoices();
    QVERIFY2(offered.contains("spam-headlines"), qPrintable(offered.join(", ")));
    for (const gui::DatasetEntry& d : gui::manifestDatasets())
      if (offered.contains(d.name)) QVERIFY2(d.tasks.isEmpty() || d.tasks.contains("seq2seq"), qPrintable(d.name));
    QVERIFY(panel.setConfigValue("task.name", "char_lm"));
    QVERIFY(!panel.datasetChoices().contains("spam-headlines"));
  }

  // The issue-18 presets load into the panel as a configuration it accepts (Start enabled):
  // options whose schema has no default (the dataset format decides: dataset.source_words,
  // source_lang, lowercase, ...) stay unset ("default") and out of the config, instead of
  // 0 / "" / false, which the schema refuses or the task would take literally.
  void issue18PresetsAreValidInThePanel() {
    gui::ConfigurePanel panel;
    for (const QString preset : {"cloze-cbt-cn-cru", "cloze-cbt-cn-gru", "seq2seq-headlines-mcrnn",
                                 "seq2seq-headlines-copy", "seq2seq-headlines-lstm"}) {
      QVERIFY2(panel.applyPreset(preset), qPrintable(preset));
      panel.revalidateNow();
      QVERIFY2(panel.validationErrors().isEmpty(), qPrintable(preset + ": " + panel.validationErrors().join("; ")));
      QVERIFY2(panel.form()->rangeErrors().isEmpty(), qPrintable(panel.form()->rangeErrors().join("; ")));
      panel.setTrainingState(false, false);
      QVERIFY2(panel.startButton()->isEnabled(), qPrintable(preset));
    }
    // The last one: seq2seq-headlines-lstm on spam-headlines.
    const QJsonObject cfg = panel.currentConfig();
    QCOMPARE(cfg.value("task").toObject().value("name").toString(), QString("seq2seq"));
    QCOMPARE(cfg.value("dataset").toObject().value("name").toString(), QString("spam-headlines"));
    const QJsonObject ds = cfg.value("dataset").toObject();
    for (const char* k :
         {"source_lang", "target_lang", "source_words", "min_subject_words", "min_source_words", "lowercase"})
      QVERIFY2(!ds.contains(k), k);
    QVERIFY(panel.form()->isUnset("dataset.source_words"));
    QVERIFY(!panel.form()->value("dataset.source_words").isValid());
    // The preset's own values are there.
    QCOMPARE(ds.value("source_vocab_size").toInt(), 4000);
    QCOMPARE(cfg.value("model").toObject().value("layers").toInt(), 2);
    QCOMPARE(cfg.value("model").toObject().value("cell").toString(), QString("lstm"));
    // Set by the user: carried, and validated against its range; unset again: left out.
    QVERIFY(panel.setConfigValue("dataset.source_words", 30));
    QCOMPARE(panel.currentConfig().value("dataset").toObject().value("source_words").toInt(), 30);
    QVERIFY(panel.setConfigValue("dataset.lowercase", false));
    QCOMPARE(panel.currentConfig().value("dataset").toObject().value("lowercase"), QJsonValue(false));
    QVERIFY(panel.setConfigValue("dataset.source_words", QVariant()));
    QVERIFY(!panel.currentConfig().value("dataset").toObject().contains("source_words"));
    // A config that names a value (a run's config.json) shows it.
    QJsonObject withValue = cfg;
    QJsonObject d2 = ds;
    d2.insert("min_subject_words", 5);
    withValue.insert("dataset", d2);
    panel.applyConfig(withValue);
    QCOMPARE(panel.form()->value("dataset.min_subject_words").toInt(), 5);
    QVERIFY(panel.form()->isUnset("dataset.source_words"));
    // Back to the preset: unset again.
    QVERIFY(panel.applyPreset("seq2seq-headlines-mcrnn"));
    QVERIFY(panel.form()->isUnset("dataset.min_subject_words"));
  }

  // The same for word_lm's dropouti / dropouth (unset: model.dropout), which a form value of 0
  // would silently switch off.
  void wordLmDropoutsDefaultToModelDropout() {
    gui::ConfigurePanel panel;
    QVERIFY(panel.setConfigValue("task.name", "word_lm"));
    QVERIFY(panel.form()->paths().contains("model.dropouti"));
    QVERIFY(panel.setConfigValue("model.dropout", 0.4));
    const QJsonObject model = panel.currentConfig().value("model").toObject();
    QVERIFY2(!model.contains("dropouti") && !model.contains("dropouth"), qPrintable(QJsonDocument(model).toJson()));
    panel.revalidateNow();
    QVERIFY2(panel.validationErrors().isEmpty(), qPrintable(panel.validationErrors().join("; ")));
  }
};

CS_TEST(GuiTaskConfigTest, "gui_task_config")
#include "test_gui_task_config.moc"
