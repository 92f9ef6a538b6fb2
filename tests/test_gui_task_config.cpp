// The configure panel with the issue-18 tasks: the task list (from the task registry) offers
// seq2seq, its options (from the schema) are in the form, and the dataset picker offers only the
// datasets whose manifest "tasks" name the chosen task (a fixture manifest, then the real one).
#include <QComboBox>
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
  QJsonObject e{{"name", name}, {"format", format}, {"obtain", "user"}, {"path", name + ".txt"},
                {"files", QJsonArray{name + ".txt"}}, {"description", "fixture " + name}};
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
};

CS_TEST(GuiTaskConfigTest, "gui_task_config")
#include "test_gui_task_config.moc"
