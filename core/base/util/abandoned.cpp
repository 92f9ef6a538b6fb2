#include "util/abandoned.h"

#include <atomic>

namespace cs {

namespace {
std::atomic<int> g_abandoned{0};
}

void note_abandoned_thread() { g_abandoned.fetch_add(1); }
int abandoned_threads() { return g_abandoned.load(); }

}  // namespace cs
