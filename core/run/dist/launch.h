// Local data-parallel launcher: start N worker processes of cellscope-cli on this
// machine (fork/exec), rendezvous through a c10d::FileStore in a private temp
// directory, wait for them, and stop the survivors when one dies. Used by
// `cellscope-cli train --nproc N` and by the GUI (which passes the path of cellscope-cli).
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace cs {

struct LocalWorkers {
  std::vector<pid_t> pids;  // index = rank; -1 once reaped
  std::vector<int> status;  // exit status per rank (valid once reaped): 0..255, or 128+signal
  std::string store_dir;    // temp directory holding the FileStore (removed by wait_local_workers)
  int nproc = 0;
  double timeout_s = 60;
};

// Intra-op threads per worker so that N workers do not oversubscribe the cores: max(1, cores / N).
int threads_per_process(int nproc);

// Start `nproc` processes `exe train_args... --rank R --world-size N --store-file F
// --dist-timeout T --threads K` (K = threads_per_process(nproc) unless `threads` > 0).
// `train_args` are the arguments of `cellscope-cli` after the program name, starting
// with "train" (e.g. {"train", "cfg.json", "--run-dir", "D"}); every rank gets the same
// run directory (only rank 0 writes it). Throws cs::UserError if a process cannot start.
LocalWorkers launch_local_workers(const std::string& exe, const std::vector<std::string>& train_args, int nproc,
                                  double timeout_s, int threads = 0);

// Wait until every worker has exited. When one fails (non-zero status or a signal),
// the others are expected to notice within the collective timeout and exit; any
// still running after timeout_s + 15 s are sent SIGTERM, then SIGKILL. Returns 0 when
// all succeeded, else the exit status of the first worker that failed; `message`
// (if given) names that rank and how it ended. Removes the store directory.
int wait_local_workers(LocalWorkers& w, std::string* message = nullptr);

// Non-blocking: true while at least one worker is still running (reaps finished ones).
bool local_workers_running(LocalWorkers& w);

// Ask every live worker to stop cleanly (SIGINT: the ranks agree on the step, rank 0 checkpoints).
void stop_local_workers(LocalWorkers& w);

}  // namespace cs
