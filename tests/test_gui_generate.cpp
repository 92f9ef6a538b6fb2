// The window's Generate tab, offscreen: a tiny char-LM run of the workspace is
// offered, generation runs on the panel's worker thread, the text starts with the seed,
// every token is shaded by its probability, the same seed gives the same text, a missing
// checkpoint gives one clear message, and the HTML export is written.
#include <QComboBox>
#include <QFileInfo>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QTextBlock>
#include <QTextEdit>
#include <QtTest/QtTest>

#include <cmath>

#include "compare_panel.h"
#include "corpus_fixture.h"
#include "generate_panel.h"
#include "gui_fit.h"
#include "harness.h"
#include "main_window.h"

class GuiGenerateTest : public QObject {
  Q_OBJECT
  QString m_ws, m_run;

 private Q_SLOTS:
  void initTestCase() {
    m_ws = cstest::temp_dir() + "/gen-ws";
    m_run = m_ws + "/tiny-char";
    const QString text = cstest::write_text_fixture("gen-gui.txt", 20000);
    const QString cfg = cstest::temp_dir() + "/gen-gui.json";
    const QJsonObject c{{"task", QJsonObject{{"name", "char_lm"}}},
                        {"dataset", QJsonObject{{"path", text}}},
                        {"model", QJsonObject{{"cell", "gru"}, {"embed", 16}, {"hidden", 32}}},
                        {"training", QJsonObject{{"steps", 60},
                                                 {"batch", 8},
                                                 {"bptt", 32},
                                                 {"eval_every", 30},
                                                 {"eval_test", false},
                                                 {"threads", 1},
                                                 {"lr", 0.01}}}};
    QFile cf(cfg);
    QVERIFY(cf.open(QIODevice::WriteOnly));
    cf.write(QJsonDocument(c).toJson());
    cf.close();
    QString out, err;
    QCOMPARE(cstest::run_cli({"train", cfg, "--run-dir", m_run, "--quiet"}, &out, &err), 0);
  }

  // At 1024x700 the tab needs no horizontal scroll bar, and the shading legend is whole inside it.
  void fitsA1024x700Window() {
    gui::WindowOptions o;
    o.workspace = m_ws;
    o.settingsFile = cstest::temp_dir() + "/gen-settings-small.ini";
    o.restoreLastConfig = false;
    gui::MainWindow w(o);
    auto* legend = w.generatePanel()->findChild<QLabel*>("surprisalLegend");
    QVERIFY(legend);
    const QString why = cstest::tabFitsWindow(w, "generate", "Generate", {legend});
    QVERIFY2(why.isEmpty(), qPrintable(why));
    QVERIFY(legend->text().contains("hover for p"));
  }

  void generatesShadedText() {
    gui::WindowOptions o;
    o.workspace = m_ws;
    o.settingsFile = cstest::temp_dir() + "/gen-settings.ini";
    o.restoreLastConfig = false;
    gui::MainWindow w(o);
    gui::GeneratePanel* p = w.generatePanel();
    QVERIFY(p);
    QTRY_VERIFY(p->runDirs().size() == 1);
    QVERIFY(p->selectRun(m_run));
    // The Run list names the run by its label and folder (as the Compare and Analyses tabs do).
    {
      QString out, err;
      QCOMPARE(cstest::run_cli({"label", m_run, "lr 1e-2"}, &out, &err), 0);
      w.comparePanel()->refreshRun(m_run);
      p->refreshRuns();
      QComboBox* runs = nullptr;
      for (QComboBox* c : p->findChildren<QComboBox*>())
        if (c->findData(m_run) >= 0 || c->findData(QFileInfo(m_run).absoluteFilePath()) >= 0) runs = c;
      QVERIFY(runs);
      QVERIFY2(runs->currentText().startsWith("lr 1e-2  (tiny-char)  [char_lm, gru]"), qPrintable(runs->currentText()));
      QCOMPARE(cstest::run_cli({"label", m_run, "--clear"}, &out, &err), 0);
      w.comparePanel()->refreshRun(m_run);
      p->refreshRuns();
    }
    gui::GenRequest r = p->request();
    r.seedText = "The whale";
    r.length = 80;
    r.temperature = 0.9;
    r.seed = 11;
    r.checkpoint = "last";
    p->setRequest(r);
    QCOMPARE(p->request().checkpoint, QString("last"));
    QSignalSpy done(p, &gui::GeneratePanel::finished);
    p->generate();
    QVERIFY(p->isBusy());
    QTRY_COMPARE_WITH_TIMEOUT(done.size(), 1, 60000);
    QCOMPARE(done.at(0).at(0).toBool(), true);
    const QString text = p->plainText();
    QVERIFY2(text.startsWith("The whale"), qPrintable(text));
    QCOMPARE(p->lastResult().tokens.size(), 9 + 80);
    // each character's background is the shade of its probability
    QTextCursor c(p->textView()->document());
    int checked = 0, nonWhite = 0;
    for (int i = 0; i < p->lastResult().tokens.size(); ++i) {
      c.setPosition(i);
      c.setPosition(i + 1, QTextCursor::KeepAnchor);
      const QColor bg = c.charFormat().background().color();
      const auto& t = p->lastResult().tokens[i];
      QCOMPARE(bg, gui::GeneratePanel::shade(t.prob));
      QCOMPARE(c.charFormat().fontUnderline(), t.seed);
      if (bg != QColor(Qt::white)) ++nonWhite;
      ++checked;
    }
    QCOMPARE(checked, 89);
    QVERIFY(nonWhite > 10);
    QVERIFY(p->statusText().contains("bits per character"));
    // the same seed gives the same text
    p->generate();
    QTRY_COMPARE_WITH_TIMEOUT(done.size(), 2, 60000);
    QCOMPARE(p->plainText(), text);
    // HTML export
    const QString html = cstest::temp_dir() + "/gen.html";
    QString err;
    QVERIFY2(p->saveHtml(html, &err), qPrintable(err));
    QFile f(html);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll().count("<span"), 89);
    // a checkpoint that is not there: one clear message, no crash
    r.checkpoint = "999999";
    gui::GenRequest bad = p->request();
    bad.checkpoint = "999999";
    Q_EMIT p->requestGeneration(bad);
    QTRY_COMPARE_WITH_TIMEOUT(done.size(), 3, 60000);
    QCOMPARE(done.at(2).at(0).toBool(), false);
    QVERIFY2(p->statusText().contains("no checkpoint"), qPrintable(p->statusText()));
  }
};

CS_TEST(GuiGenerateTest, "gui_generate")
#include "test_gui_generate.moc"
