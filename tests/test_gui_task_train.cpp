// The issue-18 tasks trained from the window as a user does it: the configure panel set to
// the task (cloze, seq2seq), a folder of the user's as the dataset (a small CBT set; parallel
// text), a tiny model, Start (the window's TrainingController, in this process), until the
// run finishes. Checked: the config the panel built (no made-up value for an option the task
// leaves to the data format), the run's metrics.jsonl (cloze: accuracy with the frequency
// baseline; seq2seq: BLEU / ROUGE with the lead baseline), and the Training tab's plots, which
// draw each baseline as a labelled reference line beside the validation curve; then the
// run's analyses (the AoA input is a question, the answer and candidates labelled without overlap; a
// seq2seq kind's text is a source) and the finished run reopened in another window.
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QStatusBar>
#include <QSettings>
#include <QStandardItemModel>
#include <QtTest/QtTest>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "analysis_panel.h"
#include "configure_panel.h"
#include "figures.h"
#include "heatmap_view.h"
#include "curve_plot.h"
#include "harness.h"
#include "main_window.h"
#include "option_form.h"
#include "run_table.h"
#include "training_controller.h"
#include "training_panel.h"

namespace {

bool writeFile(const QString& path, const QByteArray& data) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return false;
  return f.write(data) == data.size();
}

// n CBT examples (20 numbered context lines, the 21st the query with XXXXX, a tab, the
// answer, two tabs, ten candidates joined by |), learnable and with a poor frequency
// baseline: the document says "the key is A ." and "the gift is B ." once each, the query asks
// for the key (or the gift), and another candidate occurs four times (the most frequent one
// is never the answer). The same construction as tests/core/cloze_fixture.h.
QByteArray cbtText(int n, unsigned seed) {
  static const QStringList nouns = {"apple", "boat", "cat",  "dog", "egg", "fish", "goat",  "hat", "ink", "jar",
                                    "kite",  "lamp", "moon", "nut", "owl", "pig",  "queen", "rat", "sun", "tree"};
  static const QStringList fill = {"a", "and", "then", "so", "very", "big", "old", "it", "ran", "saw", "he", "we"};
  std::mt19937 rng(seed);
  auto pick = [&](int k) { return int(rng() % unsigned(k)); };
  QByteArray out;
  for (int e = 0; e < n; ++e) {
    QStringList pool = nouns;
    std::shuffle(pool.begin(), pool.end(), rng);
    QStringList cands = pool.mid(0, 10);
    const bool key = pick(2) == 0;
    QVector<QStringList> lines(20);
    for (auto& l : lines)
      for (int k = 0; k < 3; ++k) l << fill[pick(fill.size())];
    const int la = pick(20);
    int lb = pick(20);
    if (lb == la) lb = (la + 7) % 20;
    lines[la] = QStringList{"the", key ? "key" : "gift", "is", cands[0], "."};
    lines[lb] = QStringList{"the", key ? "gift" : "key", "is", cands[1], "."};
    auto sprinkle = [&](const QString& w, int times) {
      for (int t = 0; t < times; ++t) {
        int l = pick(20);
        while (l == la || l == lb) l = pick(20);
        lines[l].insert(pick(lines[l].size() + 1), w);
      }
    };
    sprinkle(cands[2], 4);
    for (int c = 3; c < 10; ++c) sprinkle(cands[c], pick(3));
    for (int l = 0; l < 20; ++l) out += QString("%1 %2\n").arg(l + 1).arg(lines[l].join(' ')).toUtf8();
    const QString answer = cands[0];
    std::shuffle(cands.begin(), cands.end(), rng);
    out += QString("21 she said the %1 is XXXXX .\t%2\t\t%3\n\n")
               .arg(key ? "key" : "gift", answer, cands.join('|'))
               .toUtf8();
  }
  return out;
}

// Parallel text: the target is the source reversed (train.de / train.en, ...).
bool writeParallel(const QString& dir, const QString& split, int n, std::mt19937_64& rng) {
  QByteArray src, tgt;
  for (int i = 0; i < n; ++i) {
    const int len = 3 + int(rng() % 4);
    QStringList w;
    for (int j = 0; j < len; ++j) w << QString(QChar('a' + int(rng() % 8)));
    QStringList r = w;
    std::reverse(r.begin(), r.end());
    src += (w.join(' ') + "\n").toUtf8();
    tgt += (r.join(' ') + "\n").toUtf8();
  }
  return writeFile(dir + "/" + split + ".de", src) && writeFile(dir + "/" + split + ".en", tgt);
}

QList<QJsonObject> evalRecords(const QString& runDir, const QString& split) {
  QList<QJsonObject> out;
  QFile f(runDir + "/metrics.jsonl");
  if (!f.open(QIODevice::ReadOnly)) return out;
  for (const QByteArray& line : f.readAll().split('\n')) {
    const QJsonObject o = QJsonDocument::fromJson(line).object();
    if (o.value("eval").toBool() && o.value("split").toString() == split) out << o;
  }
  return out;
}

// Waits for the panel's next computed() and returns its ok flag (the newest outcome counts).
bool waitComputed(gui::AnalysisPanel& p, QSignalSpy& spy, int timeoutMs = 120000) {
  if (spy.isEmpty() && !spy.wait(timeoutMs)) return false;
  while (p.isBusy()) spy.wait(timeoutMs);
  return spy.last().value(0).toBool();
}

QJsonObject readJson(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return QJsonObject();
  return QJsonDocument::fromJson(f.readAll()).object();
}

}  // namespace

class GuiTaskTrainTest : public QObject {
  Q_OBJECT
  QString m_root, m_cbt, m_pairs;

  gui::WindowOptions opts(const QString& ws) const {
    gui::WindowOptions o;
    o.workspace = ws;
    o.settingsFile = m_root + "/settings.ini";
    o.restoreLastConfig = false;
    return o;
  }

  // Sets every "path" = value through the panel, as the form (or --set) would.
  static void setAll(gui::ConfigurePanel* p, const QList<QPair<QString, QVariant>>& values) {
    for (const auto& v : values) QVERIFY2(p->setConfigValue(v.first, v.second), qPrintable(v.first));
  }

  // Start through the window, wait for the end; the run directory ("" on failure).
  static QString trainToTheEnd(gui::MainWindow& w) {
    gui::ConfigurePanel* p = w.configurePanel();
    p->revalidateNow();
    if (!p->isValid()) {
      qWarning() << "the panel refuses the configuration:" << p->validationErrors();
      return QString();
    }
    QSignalSpy finished(w.controller(), &gui::TrainingController::finishedWithReason);
    QSignalSpy failed(w.controller(), &gui::TrainingController::runFailed);
    if (!w.startTraining()) {
      qWarning() << "Start refused:" << w.controller()->lastError();
      return QString();
    }
    if (!QTest::qWaitFor([&] { return finished.size() + failed.size() > 0; }, 600000)) return QString();
    if (!failed.isEmpty()) {
      qWarning() << "the run failed:" << failed[0][0].toString();
      return QString();
    }
    if (finished[0][1].toString() != QLatin1String("finished")) {
      qWarning() << "the run ended" << finished[0][1].toString() << finished[0][2].toString();
      return QString();
    }
    return finished[0][0].toString();
  }

  // clozeTrainsFromTheConfigurePanel's finished cloze run in the Analyses tab: the AoA figure of a
  // question, accuracy by document length, and a character kind's own meaning again.
  static void checkClozeAnalyses(gui::MainWindow& w, const QString& run) {
    // Its analyses. Attention over attention: the input is a question of the split (not a
    // character, as for a char-LM's zone relevance), from 0, no "last".
    gui::AnalysisPanel* a = w.analysisPanel();
    w.showPanel(a);
    QVERIFY(a->selectRun(run));
    // A char-LM kind does not stay selected for a cloze run: one of the cloze kinds does.
    QVERIFY2(QStringList({"aoa", "length"}).contains(a->kind()), qPrintable(a->kind()));
    QVERIFY(a->setKind("zone_relevance"));
    QCOMPARE(a->positionLabel(), QString("Character"));
    QCOMPARE(a->position(), -1);  // 'last'
    QVERIFY(a->setKind("aoa"));
    QCOMPARE(a->positionLabel(), QString("Question"));
    QCOMPARE(a->position(), 0);
    a->setPosition(-1);
    QCOMPARE(a->position(), 0);  // no 'last' question
    a->setSplit("valid");
    a->setPosition(3);
    QSignalSpy computed(a, &gui::AnalysisPanel::computed);
    a->compute();
    QVERIFY2(waitComputed(*a, computed), qPrintable(a->lastError()));
    QVERIFY(a->figure());
    QVERIFY2(a->figure()->caption().startsWith("Question 3 of the valid split"), qPrintable(a->figure()->caption()));
    // The answer ("[w]") and the other candidates ("*w") are key columns: labelled however
    // the labels are thinned.
    auto* hv = a->figure()->panelAs<csw::HeatmapView>(0);
    QVERIFY(hv);
    QVector<int> marked;
    for (int c = 0; c < hv->columns(); ++c)
      if (hv->columnLabel(c).startsWith('[') || hv->columnLabel(c).startsWith('*')) marked << c;
    QVERIFY(!marked.isEmpty());
    QCOMPARE(hv->keyColumns(), marked);
    // Two marked words closer than a label's width would overlap: one of them (the answer
    // first) keeps its label, the other makes way.
    const QVector<int> shown = hv->labelledColumns();
    const int step = hv->columnLabelStep();
    for (int i = 1; i < shown.size(); ++i) QVERIFY(shown[i] - shown[i - 1] >= step);
    for (int c : marked) {
      bool near = false;
      for (int s : shown) near = near || (std::abs(s - c) < step && marked.contains(s));
      QVERIFY2(shown.contains(c) || near, qPrintable(QString::number(c)));
    }
    // Accuracy by document length on the same run.
    QVERIFY(a->setKind("length"));
    computed.clear();
    a->compute();
    QVERIFY2(waitComputed(*a, computed), qPrintable(a->lastError()));
    QVERIFY(a->figure());
    // Back to a character kind: its own meaning and default again.
    QVERIFY(a->setKind("composition"));
    QCOMPARE(a->positionLabel(), QString("Character"));
    QCOMPARE(a->position(), -1);
  }

 private Q_SLOTS:
  void initTestCase() {
    m_root = cstest::temp_dir() + "/task-train";
    QVERIFY(QDir().mkpath(m_root));
    qunsetenv("CELLSCOPE_WORKSPACE");
    QCoreApplication::setOrganizationName("CellscopeTests");
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_root + "/qsettings");
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_root + "/qsettings");
    m_cbt = m_root + "/my-cbt";
    QVERIFY(QDir().mkpath(m_cbt));
    QVERIFY(writeFile(m_cbt + "/cbtest_CN_train.txt", cbtText(240, 11)));
    QVERIFY(writeFile(m_cbt + "/cbtest_CN_valid_2000ex.txt", cbtText(40, 22)));
    QVERIFY(writeFile(m_cbt + "/cbtest_CN_test_2500ex.txt", cbtText(40, 33)));
    m_pairs = m_root + "/my-pairs";
    QVERIFY(QDir().mkpath(m_pairs));
    std::mt19937_64 rng(5);
    QVERIFY(writeParallel(m_pairs, "train", 300, rng));
    QVERIFY(writeParallel(m_pairs, "valid", 30, rng));
    QVERIFY(writeParallel(m_pairs, "test", 20, rng));
  }

  // `cellscope --preset cloze-cbt-cn-cru`: the preset's message is posted before the window
  // shows; the status bar shows it alone (not drawn over its "Ready" label).
  void presetMessageAtStartupHidesTheStatusLabel() {
    gui::MainWindow w(opts(m_root + "/ws-status"));
    QVERIFY(w.configurePanel()->applyPreset("cloze-cbt-cn-cru"));
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QCOMPARE(w.statusBar()->currentMessage(), QString("Preset cloze-cbt-cn-cru loaded"));
    QLabel* ready = nullptr;
    for (QLabel* l : w.statusBar()->findChildren<QLabel*>())
      if (l->text() == QLatin1String("Ready")) ready = l;
    QVERIFY(ready);
    QVERIFY(!ready->isVisible());
    // When the message ends, the label is back.
    w.statusBar()->clearMessage();
    QVERIFY(ready->isVisible());
  }

  void clozeTrainsFromTheConfigurePanel() {
    gui::MainWindow w(opts(m_root + "/ws-cloze"));
    w.show();
    gui::ConfigurePanel* p = w.configurePanel();
    QVERIFY(p->setConfigValue("task.name", "cloze"));
    // The real default is offered for the task.
    QVERIFY2(p->datasetChoices().contains("moby-dick-cbt-cn"), qPrintable(p->datasetChoices().join(", ")));
    // A CBT folder of the user's: recognised, not "unknown format".
    QVERIFY(p->setConfigValue("dataset.path", m_cbt));
    QCOMPARE(p->datasetFormat(), QString("cbt"));
    p->revalidateNow();
    QVERIFY2(p->datasetError().isEmpty(), qPrintable(p->datasetError()));
    setAll(p, {{"model.cell", "gru"},
               {"model.reader", "m_aoa"},
               {"model.embed", 16},
               {"model.hidden", 16},
               {"model.dropout", 0.0},
               {"training.steps", 40},
               {"training.batch", 16},
               {"training.lr", 0.01},
               {"training.eval_every", 20},
               {"training.log_every", 5},
               {"training.threads", 1},
               {"training.seed", 1},
               {"training.eval_test", false},
               {"training.patience", 0}});
    const QString run = trainToTheEnd(w);
    QVERIFY(!run.isEmpty());

    // The run read back from its folder, also given as "DIR/" (`cellscope --show-run DIR/`).
    gui::RunInfo info;
    QVERIFY(gui::readRun(run + "/", &info));
    QCOMPARE(info.name, QFileInfo(run).fileName());
    QCOMPARE(info.dir, QFileInfo(run).absoluteFilePath());
    const QJsonObject cfg = readJson(run + "/config.json");
    QCOMPARE(cfg.value("task").toObject().value("name").toString(), QString("cloze"));
    QCOMPARE(QFileInfo(cfg.value("dataset").toObject().value("path").toString()).canonicalFilePath(),
             QFileInfo(m_cbt).canonicalFilePath());
    QCOMPARE(readJson(run + "/summary.json").value("primary_metric").toString(), QString("accuracy"));
    // The metrics: accuracy and the frequency baseline on every validation record.
    const QList<QJsonObject> valid = evalRecords(run, "valid");
    QCOMPARE(valid.size(), 2);
    for (const QJsonObject& r : valid) {
      QVERIFY2(r.value("accuracy").isDouble(), qPrintable(QJsonDocument(r).toJson()));
      QVERIFY2(r.value("freq_baseline_accuracy").isDouble(), qPrintable(QJsonDocument(r).toJson()));
    }
    const double base = valid.last().value("freq_baseline_accuracy").toDouble();
    QCOMPARE(base, 0.0);  // by construction the most frequent candidate is never the answer

    // The Training tab: accuracy on the main plot, the baseline a labelled reference line.
    csw::CurvePlot* metric = w.trainingPanel()->plot("metric");
    QTRY_COMPARE_WITH_TIMEOUT(metric->pointCount("valid"), 2, 10000);
    QCOMPARE(metric->seriesY("valid").last(), valid.last().value("accuracy").toDouble());
    QVERIFY2(metric->referenceLineIds().contains("valid|freq_baseline_accuracy"),
             qPrintable(metric->referenceLineIds().join(", ")));
    QCOMPARE(metric->referenceLineValue("valid|freq_baseline_accuracy"), base);
    QCOMPARE(metric->referenceLineLabel("valid|freq_baseline_accuracy"), QString("valid frequency baseline"));
    QCOMPARE(metric->yLabel(), QString("accuracy"));

    // The finished run opened in another window's Training tab: the same curves, the same
    // baseline, the task's unit on the throughput plot.
    {
      gui::MainWindow other(opts(m_root + "/ws-cloze"));
      other.showRunInTrainingView(run);
      csw::CurvePlot* m2 = other.trainingPanel()->plot("metric");
      QCOMPARE(m2->pointCount("valid"), 2);
      QCOMPARE(m2->referenceLineValue("valid|freq_baseline_accuracy"), base);
      QCOMPARE(other.trainingPanel()->plot("throughput")->yLabel(), QString("questions / s"));
    }

    checkClozeAnalyses(w, run);
  }

  void seq2seqTrainsFromTheConfigurePanel() {
    gui::MainWindow w(opts(m_root + "/ws-s2s"));
    w.show();
    gui::ConfigurePanel* p = w.configurePanel();
    QVERIFY(p->setConfigValue("task.name", "seq2seq"));
    QVERIFY2(p->datasetChoices().contains("spam-headlines"), qPrintable(p->datasetChoices().join(", ")));
    QVERIFY(p->setConfigValue("dataset.path", m_pairs));
    QCOMPARE(p->datasetFormat(), QString("parallel"));
    setAll(p, {{"model.cell", "gru"},
               {"model.embed", 16},
               {"model.hidden", 32},
               {"dataset.subword", "bpe"},
               {"dataset.source_vocab_size", 20},
               {"dataset.target_vocab_size", 20},
               {"dataset.max_source_len", 16},
               {"dataset.max_target_len", 16},
               {"training.steps", 40},
               {"training.batch", 16},
               {"training.lr", 0.01},
               {"training.eval_every", 20},
               {"training.eval_decode", 10},
               {"training.log_every", 5},
               {"training.threads", 1},
               {"training.seed", 3},
               {"training.eval_test", false},
               {"training.patience", 0}});
    // Options the task leaves to the format (the source/target language suffixes, the
    // headline options, lower-casing) are not in the config unless set.
    const QJsonObject ds = p->currentConfig().value("dataset").toObject();
    for (const char* k :
         {"source_lang", "target_lang", "source_words", "min_subject_words", "min_source_words", "lowercase"})
      QVERIFY2(!ds.contains(k), k);
    const QString run = trainToTheEnd(w);
    QVERIFY(!run.isEmpty());

    const QList<QJsonObject> valid = evalRecords(run, "valid");
    QCOMPARE(valid.size(), 2);
    for (const QJsonObject& r : valid)
      for (const char* k : {"bleu", "rouge1", "rouge2", "rougeL"}) QVERIFY2(r.value(k).isDouble(), k);
    // The lead baseline is logged with the first evaluation.
    const double lead = valid.first().value("lead_bleu").toDouble(-1);
    QVERIFY2(lead >= 0, qPrintable(QJsonDocument(valid.first()).toJson()));
    QVERIFY(valid.first().value("lead_rougeL").isDouble());

    // The Training tab: BLEU picked first on the validation-metrics plot, with the lead baseline.
    gui::TrainingPanel* t = w.trainingPanel();
    QTRY_VERIFY_WITH_TIMEOUT(t->evalMetrics().contains("bleu"), 10000);
    QCOMPARE(t->evalMetric(), QString("bleu"));
    csw::CurvePlot* eval = t->plot("eval");
    QVERIFY(eval->isVisibleTo(t));
    QCOMPARE(eval->pointCount("valid"), 2);
    QCOMPARE(eval->seriesY("valid").last(), valid.last().value("bleu").toDouble());
    QCOMPARE(eval->referenceLineValue("valid|lead_bleu"), lead);
    QCOMPARE(eval->referenceLineLabel("valid|lead_bleu"), QString("valid lead baseline"));
    QVERIFY(t->setEvalMetric("rougeL"));
    QCOMPARE(eval->referenceLineValue("valid|lead_rougeL"), valid.first().value("lead_rougeL").toDouble());

    // The Analyses tab on the run: a seq2seq kind, whose text is a source sentence.
    gui::AnalysisPanel* a = w.analysisPanel();
    w.showPanel(a);
    QVERIFY(a->selectRun(run));
    // A GRU seq2seq run: the seq2seq analyses (MC-RNN channel attention) are greyed out, saying why.
    auto* combo = a->findChild<QComboBox*>("analysisKind");
    QVERIFY(combo);
    auto* items = qobject_cast<QStandardItemModel*>(combo->model());
    QVERIFY(items);
    for (const char* k : {"channel_attention", "channel_attention_decoder"}) {
      QStandardItem* it = items->item(combo->findData(QString(k)));
      QVERIFY(it && !it->isEnabled());
      QVERIFY2(it->toolTip().contains("needs a cell among: mcrnn"), qPrintable(it->toolTip()));
    }
    QVERIFY(a->setKind("channel_attention"));
    QVERIFY2(a->textPlaceholder().startsWith("A source sentence"), qPrintable(a->textPlaceholder()));
    QVERIFY(a->setKind("channel_attention_decoder"));
    QVERIFY2(a->textPlaceholder().startsWith("SOURCE ||| TARGET"), qPrintable(a->textPlaceholder()));
  }
};

CS_TEST(GuiTaskTrainTest, "gui_task_train")
#include "test_gui_task_train.moc"
