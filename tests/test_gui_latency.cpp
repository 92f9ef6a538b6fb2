// LatencyProbe (app/gui/latency_probe.h), the machinery of `cellscope --measure-latency`:
// what it records and how it summarises, without asserting how fast this machine is.
#include <QElapsedTimer>
#include <QEventLoop>
#include <QThread>
#include <QTimer>

#include <cmath>

#include "harness.h"
#include "latency_probe.h"

using gui::LatencyProbe;

class TestGuiLatency : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void percentilesAreNearestRank() {
    QVector<double> v;
    for (int i = 100; i >= 1; --i) v << double(i);  // unsorted on purpose
    QCOMPARE(LatencyProbe::percentile(v, 0.50), 50.0);
    QCOMPARE(LatencyProbe::percentile(v, 0.99), 99.0);
    QCOMPARE(LatencyProbe::percentile(v, 1.0), 100.0);
    QCOMPARE(LatencyProbe::percentile(v, 0.0), 1.0);
    QVERIFY(std::isnan(LatencyProbe::percentile({}, 0.5)));
    const gui::LatencySummary s = LatencyProbe::summarize(v);
    QCOMPARE(s.samples, 100);
    QCOMPARE(s.p50_ms, 50.0);
    QCOMPARE(s.p99_ms, 99.0);
    QCOMPARE(s.max_ms, 100.0);
    QCOMPARE(s.mean_ms, 50.5);
    QCOMPARE(LatencyProbe::summarize({}).samples, 0);
  }

  void aBlockedEventLoopShowsAsLateness() {
    // The GUI thread is blocked for 150 ms once: the timeout after the block comes at least
    // 150 ms after the one before it, so the largest lateness is >= 150 - 5 ms whatever the
    // machine's load (a lower bound, not a timing assertion).
    LatencyProbe probe(5);
    QCOMPARE(probe.periodMs(), 5);
    probe.start();
    QVERIFY(probe.isRunning());
    QEventLoop loop;
    QTimer::singleShot(50, &loop, [] { QThread::msleep(150); });
    QTimer::singleShot(400, &loop, &QEventLoop::quit);
    loop.exec();
    probe.stop();
    QVERIFY(!probe.isRunning());
    const auto& lat = probe.latenciesMs();
    QVERIFY2(lat.size() >= 2, qPrintable(QString::number(lat.size())));
    for (double x : lat) QVERIFY(x >= 0.0);
    const gui::LatencySummary s = probe.summary();
    QCOMPARE(s.samples, int(lat.size()));
    QVERIFY2(s.max_ms >= 145.0, qPrintable(QString::number(s.max_ms)));
    QVERIFY(s.p50_ms <= s.p99_ms && s.p99_ms <= s.max_ms);
    // start() begins a new measurement
    probe.start();
    QVERIFY(probe.latenciesMs().isEmpty());
    probe.stop();
  }
};

CS_TEST(TestGuiLatency, "gui_latency")
#include "test_gui_latency.moc"
