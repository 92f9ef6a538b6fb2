#pragma once
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/schema.h"
#include "help.h"     // want_help(), help_for(): the help texts, LibTorch-free
#include "options.h"  // every option declared once

namespace cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The options of a command (args.cpp, on CLI11): --flag, --key VALUE, --key=VALUE, repeated keys
// kept in order; a value may start with '-' (--lr -1); "--" ends the options.
struct Args {
  std::vector<std::string> positional;
  std::multimap<std::string, std::string> opts;
  std::string command;  // the declaration it was parsed by (options.h): reading an option it does
                        // not declare is a std::logic_error, so a command cannot read an option
                        // its help, man page and completion do not know
  bool has(const std::string& k) const;
  std::string get(const std::string& k, const std::string& def = "") const;
  std::vector<std::string> all(const std::string& k) const;
  long long get_int(const std::string& k, long long def) const;
  // The same, refusing values outside [lo, hi] (UsageError naming the option and the range).
  long long get_int(const std::string& k, long long def, long long lo, long long hi) const;

 private:
  void require_declared(const std::string& k) const;
};
// The options COMMAND declares (options.h: "train", "sweep run", "bench --peer"): its flags take no
// value (--flag=x -> UsageError naming it), its valued options one (missing at the end ->
// UsageError naming it), a value outside an option's choices -> UsageError naming them; an
// undeclared --option -> UsageError naming it. Anything else, "-" and words starting with a single
// '-' included, is positional, as is everything after "--".
Args parse(const std::vector<std::string>& a, const std::string& command);

// `--script PATH` (eval, analyze, generate, decode, cloze scores, export): the run's TorchScript
// cell loaded from PATH (cells/script_cell.h set_script_override); nothing when not given.
void apply_script_option(const Args& args);

// A config from a path or a preset name, with --set overrides applied (not validated).
cs::json load_config_arg(const std::string& arg, const std::vector<std::string>& sets);

int cmd_info(const std::vector<std::string>&);
int cmd_datasets(const std::vector<std::string>&);
int cmd_datasets_show(const std::vector<std::string>&);  // datasets_show_cmd.cpp: `datasets show` (seq2seq)
int cmd_fetch(const std::vector<std::string>&);
int cmd_presets(const std::vector<std::string>&);
int cmd_validate(const std::vector<std::string>&);
int cmd_train(const std::vector<std::string>&);
int cmd_eval(const std::vector<std::string>&);
int cmd_label(const std::vector<std::string>&);  // commands.cpp: a run's short name
int cmd_status(const std::vector<std::string>&);
int cmd_import(const std::vector<std::string>&);  // import_cmd.cpp: a run from an export changed in PyTorch  //
                                                  // commands.cpp: a run's state, exit status for schedulers
int cmd_params(const std::vector<std::string>&);
int cmd_bench(const std::vector<std::string>&);
int cmd_analyze(const std::vector<std::string>&);
int cmd_bench_analysis(const std::vector<std::string>&);  // analyze_cmd.cpp: bench --analysis relevance
int cmd_bench_peer(const std::vector<std::string>&);    // bench_peer_cmd.cpp: bench --peer, --peer-check, --peer-export
int cmd_cv(const std::vector<std::string>&);            // cv_cmd.cpp: k-fold cross-validation
int cmd_sweep(const std::vector<std::string>&);         // sweep_cmd.cpp: grids x seeds, the papers' tables
int cmd_generate(const std::vector<std::string>&);      // generate_cmd.cpp: text generation
int cmd_cloze(const std::vector<std::string>&);         // cloze_cmd.cpp: cloze scores | rerank
int cmd_cloze_rerank(const std::vector<std::string>&);  // cloze_rerank_cmd.cpp: the re-ranking step
int cmd_decode(const std::vector<std::string>&);        // decode_cmd.cpp: seq2seq decodes + BLEU/ROUGE
int cmd_export(const std::vector<std::string>&);        // export_cmd.cpp: dispatch of `export ...`
int cmd_export_tensorboard(const std::vector<std::string>&);  // export_tb_cmd.cpp: `export tensorboard`
int cmd_export_torch(const std::vector<std::string>&);        // export_torch_cmd.cpp: a run for plain PyTorch
int cmd_report(const std::vector<std::string>&);  // report_cmd.cpp: the reproducibility bundle and its check

// Data-parallel training and benchmark (dist_cmd.cpp, docs/DISTRIBUTED.md).
// `train --nproc N` (N > 1): start N local workers of this executable and wait for them.
int train_launch_local(const std::vector<std::string>& a, const Args& args);
// `bench --dist` (launcher) and `bench --dist-worker` (one rank).
int cmd_bench_dist(const std::vector<std::string>& a);
std::string self_exe();  // this program as users run it: cellscope-cli beside it (the launcher), else /proc/self/exe
// --dist-timeout (default `def`): a number in [cs::kMinDistTimeoutSeconds, cs::kMaxDistTimeoutSeconds],
// else UsageError naming the flag and the value given.
double parse_dist_timeout(const Args& args, double def);

// The exit status of a run stopped by SIGTERM after writing its checkpoint (a scheduler's
// preemption or time limit): distinct from 0 (finished, or stopped by the user's Ctrl-C) so
// that Slurm and Kubernetes can requeue or retry it; `--resume` continues it. 75 is
// sysexits.h's EX_TEMPFAIL ("try again later").
constexpr int kExitStoppedBySigterm = 75;

// A worker started by a PyTorch-style launcher (torchrun, `python3 -m torch.distributed.run`,
// Kubeflow's PyTorchJob): its rank, world and rendezvous from the environment they set
// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, LOCAL_RANK, LOCAL_WORLD_SIZE and torchrun's
// TORCHELASTIC_USE_AGENT_STORE / TORCHELASTIC_RESTART_COUNT). docs/DISTRIBUTED.md.
struct LauncherEnv {
  bool present = false;  // RANK and WORLD_SIZE are both set
  int rank = 0, world = 1;
  int local_rank = -1;           // LOCAL_RANK (-1: unset)
  int local_world = 1;           // LOCAL_WORLD_SIZE (processes on this machine; default 1)
  std::string master;            // "MASTER_ADDR:MASTER_PORT" (brackets around an IPv6 address)
  bool agent_store = false;      // torchrun's agent already serves a c10d TCPStore there
  std::string store_prefix;      // the key prefix torchrun's workers use in it
  std::string describe() const;  // "RANK=1 WORLD_SIZE=2 MASTER=...": for messages
};
// Reads the variables; a set but malformed one (not an integer, out of range, a missing
// MASTER_ADDR/MASTER_PORT for a world above 1) is a UsageError naming it.
LauncherEnv launcher_env();
// `cuda` (no index) on a worker with LOCAL_RANK k becomes `cuda:k`; anything else unchanged.
std::string device_for_local_rank(const std::string& device, int local_rank);

}  // namespace cli
