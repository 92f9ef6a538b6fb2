// `cellscope --benchmark [--json]`: responsiveness figures of the workbench.
#pragma once
#include <QJsonObject>

namespace gui {
// Runs the three measurements (event-loop latency while a GRU trains,
// replot of a 1,000,000-point curve, opening a 200-run workspace) and returns
// them. trainSeconds: how long the latency is sampled.
QJsonObject runBenchmark(double trainSeconds = 10.0);
// Prints the figures (text or JSON); returns the process exit code.
int benchmarkMain(bool json);
}  // namespace gui
