// The end of a data-parallel run: every task trains with two processes to its last
// step and exits 0 with status "finished" on and off the evaluation boundary, with
// metrics close to one process on the same global batch (the other endings:
// test_dist_stop.cpp).
#include <QElapsedTimer>

#include "corpus_fixture.h"
#include "dist_end_check.h"

using namespace cs;

class TestDistEnd : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    if (!QFile::exists(cstest::default_corpus_path()))
      QFAIL(qPrintable("the default corpus is missing: " + cstest::default_corpus_path()));
    set_threads(1);
  }

  void twoProcessesFinishLikeOne_data() {
    QTest::addColumn<QString>("task");
    for (const char* t : {"char_lm", "word_lm"}) QTest::newRow(t) << QString(t);
  }

  // 7 steps: the last step is no evaluation step (eval_every 4); 8 steps: it is.
  void twoProcessesFinishLikeOne() {
    QFETCH(QString, task);
    cstest::two_processes_finish_like_one(task);
  }
};

CS_TEST(TestDistEnd, "dist_end")
#include "test_dist_end.moc"
