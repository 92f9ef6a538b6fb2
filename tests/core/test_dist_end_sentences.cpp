// The end of a data-parallel run for the sentence tasks (classify, ABSA): two
// processes to the last step, exit 0, status "finished", on and off the evaluation
// boundary, metrics close to one process (see dist_end_check.h; the language models:
// test_dist_end.cpp, the other endings: test_dist_stop.cpp).
#include <QElapsedTimer>

#include "corpus_fixture.h"
#include "dist_end_check.h"

using namespace cs;

class TestDistEndSentences : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    if (!QFile::exists(cstest::default_corpus_path()))
      QFAIL(qPrintable("the default corpus is missing: " + cstest::default_corpus_path()));
    set_threads(1);
  }

  void twoProcessesFinishLikeOne_data() {
    QTest::addColumn<QString>("task");
    for (const char* t : {"classify", "absa"}) QTest::newRow(t) << QString(t);
  }

  // 7 steps: the last step is no evaluation step (eval_every 4); 8 steps: it is.
  void twoProcessesFinishLikeOne() {
    QFETCH(QString, task);
    cstest::two_processes_finish_like_one(task);
  }
};

CS_TEST(TestDistEndSentences, "dist_end_sentences")
#include "test_dist_end_sentences.moc"
