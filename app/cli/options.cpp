// Every option of cellscope-cli, declared once (options.h). A new option is one line here; the
// command reads it with args.get("name") after parse(a, "command").
#include "options.h"

#include <stdexcept>

namespace cli {

namespace {

// Options several commands share, worded once.
OptionSpec json_flag(const std::string& what) { return {"json", "", what, {}, false}; }
OptionSpec threads_opt() {
  return {"threads", "N", "intra-op threads of this process (default: the machine's cores)", {}, false};
}
OptionSpec script_opt() {
  return {"script",
          "PATH",
          "a TorchScript-cell run whose script and its copy script_cell.pt are both gone: load the cell from "
          "PATH (its SHA-256 must be the one the run recorded)",
          {},
          false};
}
OptionSpec set_opt(const std::string& what = "a configuration value; repeatable, applied in order") {
  return {"set", "SECTION.KEY=VALUE", what, {}, false};
}
OptionSpec workspace_opt(const std::string& what) { return {"workspace", "DIR", what, {}, false}; }
const char* const kDefaultWorkspace =
    "where runs and sweeps are (default: $CELLSCOPE_WORKSPACE or ~/.local/share/cellscope/runs)";
OptionSpec checkpoint_opt() {
  return {"checkpoint", "best|last|STEP", "the checkpoint: best, last or a step_N.pt step (default best)", {}, false};
}
// The data-parallel options train and bench --dist share (docs/DISTRIBUTED.md).
std::vector<OptionSpec> rendezvous_opts() {
  return {
      {"rank",
       "R",
       "this worker's rank, of a multi-machine run a cluster launcher starts (with --world-size and --master)",
       {},
       false},
      {"world-size", "W", "the number of workers of that run", {}, false},
      {"master",
       "HOST:PORT",
       "rank 0's rendezvous address (an IPv6 address in brackets: [::1]:29500); rank 0 serves it on PORT",
       {},
       false},
      {"listen",
       "ADDR",
       "the address rank 0's rendezvous store listens on (default: the --master host; 0.0.0.0 or :: for every interface)",
       {},
       false},
      {"store-file", "PATH", "rendezvous through a file on a shared file system instead of --master", {}, false},
      {"dist-timeout",
       "SECONDS",
       "stop when another worker dies or hangs this long (default 60, from 1 to 604800)",
       {},
       false},
  };
}

// info, datasets, fetch, presets, validate, train, eval, label, status, params
void add_setup_specs(std::vector<CommandSpec>& s) {
  s.push_back({"info", {json_flag("print one JSON object"), threads_opt()}});
  s.push_back({"datasets",
               {json_flag("print the list as JSON"),
                {"force", "", "datasets build: build the dataset again even when it is there", {}, false}}});
  s.push_back(
      {"datasets show",
       {{"format",
         "",
         "the format of a path of your own (default: the manifest's, else from its files)",
         {"parallel", "gigaword", "headlines"},
         false},
        {"set",
         "KEY=VALUE",
         "sets dataset.KEY (e.g. source_lang=fr); VALUE read as JSON when it parses, else as a string; repeatable",
         {},
         false},
        {"pairs", "K", "example pairs to print (default 5)", {}, false},
        {"split", "", "the split of the examples (default valid)", {"train", "valid", "test"}, false},
        {"lead-words", "N", "the lead baseline's words (default: the training split's mean target length)", {}, false},
        {"subword", "N", "train a SentencePiece vocabulary of N pieces and print the pieces per sentence", {}, false},
        {"subword-type", "", "the SentencePiece model (default unigram)", {"unigram", "bpe"}, false},
        json_flag("print one JSON object")}});
  s.push_back({"fetch",
               {{"dest", "DIR", "the data cache to fill (default: the data cache above)", {}, false},
                {"dry-run", "", "print the script and the destination only", {}, false}}});
  s.push_back({"presets",
               {json_flag("print the presets as JSON"),
                {"names", "", "the names only, one per line (what completion offers for CONFIG)", {}, false}}});
  s.push_back({"validate",
               {set_opt(),
                json_flag("print the problems as JSON"),
                {"keys", "", "list every SECTION.KEY that --set accepts, with its type and choices", {}, false}}});
  {
    std::vector<OptionSpec> o = {
        {"run-dir", "DIR", "the run directory (default: a new one under the workspace)", {}, false},
        workspace_opt(
            "the workspace the new run directory goes in (default: $CELLSCOPE_WORKSPACE or ~/.local/share/cellscope/runs)"),
        set_opt(),
        {"steps", "N", "training.steps: the step to stop at", {}, false},
        {"resume", "RUN_DIR", "continue a stopped run from its last checkpoint", {}, false},
        {"fork", "RUN_DIR[@STEP]", "a new run from checkpoint STEP of RUN_DIR (default last)", {}, false},
        json_flag("JSON Lines on stdout: a metrics record per logged interval and evaluation, then the summary"),
        {"quiet", "", "no progress lines", {}, false},
        {"nproc",
         "N",
         "data-parallel: start N local worker processes (Gloo over 127.0.0.1), max(1, cores/N) threads each",
         {},
         false},
    };
    for (auto& r : rendezvous_opts()) o.push_back(r);
    o.push_back({"dist-backend",
                 "",
                 "the collective backend (auto: NCCL for CUDA devices when built with it)",
                 {"gloo", "nccl", "auto"},
                 false});
    o.push_back({"threads",
                 "N",
                 "intra-op threads of this process (overrides training.threads; a new run records it)",
                 {},
                 false});
    s.push_back({"train", o});
  }
  s.push_back({"eval",
               {{"split", "", "the split (default test)", {"valid", "test", "train"}, false},
                checkpoint_opt(),
                json_flag("print one JSON object"),
                threads_opt(),
                script_opt()}});
  s.push_back({"label", {{"clear", "", "remove the label", {}, false}}});
  s.push_back(
      {"status",
       {json_flag("print one object: run_dir, state, status, step, reason, writer_pid, checkpoint, exit_status")}});
  s.push_back({"params",
               {set_opt(),
                {"vocab", "N", "build it with a vocabulary of N symbols without loading any data (char_lm)", {}, false},
                json_flag("print the breakdown as JSON")}});
}

// bench and its modes
void add_bench_specs(std::vector<CommandSpec>& s) {
  s.push_back(
      {"bench",
       {{"cell", "CELL", "the cell (default gru)", {}, false},
        {"task",
         "",
         "the model: the char LM, or the sentence classifier (default char_lm)",
         {"char_lm", "classify"},
         false},
        {"batch", "N", "batch size (default 32)", {}, false},
        {"seq", "N", "sequence length (default 150; classify 50)", {}, false},
        {"embed", "N", "embedding size (default 256; classify 200)", {}, false},
        {"hidden", "N", "hidden size (default 512; classify 200)", {}, false},
        set_opt("model.KEY=VALUE; repeatable"),
        {"baseline",
         "torch_gru|torch_lstm|CELL|none",
         "the baseline at the same shape (default: torch::nn::GRU for gru, torch::nn::LSTM for lstm, Cellscope's GRU otherwise)",
         {},
         false},
        {"iters", "N", "timed iterations", {}, false},
        {"vocab", "N", "vocabulary size (classify: default 20000)", {}, false},
        {"data",
         "MB",
         "the corpus-loading benchmark instead: a synthetic file of MB megabytes, MB/s and memory",
         {},
         false},
        threads_opt(),
        json_flag("print one JSON object")}});
  {
    std::vector<OptionSpec> o = {
        {"dist", "", "data-parallel training throughput for 1, 2, ... local processes", {}, false},
        {"task", "LIST", "the tasks, comma-separated (default char_lm,word_lm)", {}, false},
        {"nproc-list", "LIST", "the process counts, comma-separated (default 1,2)", {}, false},
        {"cell", "CELL", "the cell (default gru)", {}, false},
        {"batch", "N", "the global batch", {}, false},
        {"seq", "N", "sequence length", {}, false},
        {"embed", "N", "embedding size", {}, false},
        {"hidden", "N", "hidden size", {}, false},
        set_opt("model.KEY=VALUE; repeatable"),
        {"steps", "N", "timed steps per measurement (default 20)", {}, false},
        {"threads", "N", "intra-op threads of each process (default 1)", {}, false},
        {"out", "FILE", "write the JSON result there too", {}, false},
        json_flag("print one JSON object"),
        {"dist-worker", "", "one rank of a measurement (bench --dist starts them)", {}, true},
    };
    for (auto r : rendezvous_opts()) {
      r.hidden = true;  // set by bench --dist for its workers
      o.push_back(r);
    }
    s.push_back({"bench --dist", o});
  }
  s.push_back({"bench --analysis",
               {{"analysis",
                 "relevance",
                 "the compute time of a relevance map and the redraw time of its heatmap",
                 {"relevance"},
                 false},
                {"run", "DIR", "a trained run (default: the paper's capMZU+DT, hidden 800, random weights)", {}, false},
                {"preset", "NAME", "the preset of the random-weight model (default ptb-cap-mzu-dt)", {}, false},
                checkpoint_opt(),
                {"chars", "N", "characters of text (default 300)", {}, false},
                {"last", "K", "rows: the last K characters (default 10)", {}, false},
                {"repeats", "N", "measurements (default 5)", {}, false},
                {"redraws", "N", "heatmap redraws timed (default 20)", {}, false},
                threads_opt(),
                json_flag("print one JSON object"),
                {"analysis-relevance", "", "the same as --analysis relevance", {}, true}}});
  s.push_back(
      {"bench --peer",
       {{"peer",
         "",
         "every paper cell against its plain-PyTorch Python peer: s/step, speedup, efficiency, memory",
         {},
         false},
        {"peer-check",
         "",
         "the same model in both must agree to --tol in the loss and every gradient (double)",
         {},
         false},
        {"peer-export", "DIR", "write the models, batch, loss and gradients for the Python peer into DIR", {}, false},
        {"cell", "CELL[,CELL..]|all", "the cells (default all)", {}, false},
        {"batch", "LIST", "batch sizes, comma-separated (default 32,256)", {}, false},
        {"seq", "N", "sequence length (default 150)", {}, false},
        {"embed", "N", "embedding size (default 256)", {}, false},
        {"hidden", "N", "hidden size (default 512)", {}, false},
        {"vocab", "N", "vocabulary size", {}, false},
        set_opt("model.KEY=VALUE; repeatable"),
        {"iters", "N", "timed iterations", {}, false},
        {"rounds", "N", "repeat the measurements interleaved and report the median round with the range", {}, false},
        {"autograd", "", "also time the autograd path where a fast path exists", {}, false},
        {"no-python", "", "Cellscope's side only", {}, false},
        {"device",
         "cpu|cuda|cuda:N",
         "where the steps run (default cpu); on a GPU: the CUDA-graph step, the eager one, the "
         "Python peers eagerly and compiled, and the cuDNN GRU",
         {},
         false},
        {"python-modes",
         "LIST",
         "on a GPU: the Python peer's modes, of eager,compile,compile_step (default eager,compile)",
         {},
         false},
        {"compile-timeout", "S", "on a GPU: seconds a compiling Python peer may take (default 300)", {}, false},
        {"partial", "FILE", "on a GPU: the results so far written to FILE (JSON) after every row", {}, false},
        {"table-from", "FILE", "print the table of an earlier --json (or --partial) result", {}, false},
        {"eager", "", "the child's step without a CUDA graph (bench --peer's child)", {}, true},
        {"keep", "DIR", "peer-check: keep the exchanged files in DIR", {}, false},
        {"from", "DIR", "peer-check: check the files of an earlier --keep", {}, false},
        {"tol", "X", "peer-check: the relative tolerance (default 1e-10)", {}, false},
        threads_opt(),
        json_flag("print the results as JSON (progress on stderr)"),
        {"peer-child", "", "one measurement (bench --peer runs it in a fresh process)", {}, true},
        {"model-json", "JSON", "the measured model (bench --peer's child)", {}, true},
        {"min-seconds", "S", "the least time a child measures", {}, true}}});
}

// analyze, cv, sweep
void add_study_specs(std::vector<CommandSpec>& s) {
  s.push_back(
      {"analyze",
       {{"run", "DIR", "the run; repeat it for several runs (kinds marked so)", {}, false},
        {"checkpoint", "best|last|STEP|step_N", "once for all runs or once per --run (default best)", {}, false},
        {"text", "TEXT", "the text analysed (default: the start of the valid split)", {}, false},
        {"out",
         "FILE.{csv,json,png,pdf,svg}",
         "write the result there; repeatable (one computation); default: JSON on stdout",
         {},
         false},
        {"last", "K", "relevance: rows = the last K characters (default 10)", {}, false},
        {"char", "T", "zone_relevance, composition: the character index (default -1 = last)", {}, false},
        {"question", "N", "aoa: the question of the split (default 0)", {}, false},
        {"layer", "L", "the layer (default -1 = top)", {}, false},
        {"split", "S", "length: the split (default test); metric_time: eval lines of S (default valid)", {}, false},
        {"buckets",
         "E0,E1,..",
         "length: bucket edges, bucket i = (E_i, E_i+1] (default: char_lm 0,10,...,90,120 = MZU Fig. 2's; "
         "word-level 0,10,...,60,80)",
         {},
         false},
        {"bins", "N", "gate_histogram: bins over [0,1] (default 20)", {}, false},
        {"metric", "M", "metric_time: the metric (default: the run's primary metric)", {}, false},
        {"color-map", "NAME", "images: the heatmap colour map (default grey_inverted)", {}, false},
        {"width", "W", "images: the width of one panel in pixels", {}, false},
        {"height", "H", "images: the height of one panel in pixels", {}, false},
        threads_opt(),
        script_opt()}});
  s.push_back(
      {"cv",
       {{"folds", "K", "the folds (default: dataset.folds, else 10)", {}, false},
        {"out", "DIR", "the folder of the fold runs and cv_summary.json", {}, false},
        workspace_opt(
            "a new folder for them goes there (default: $CELLSCOPE_WORKSPACE or ~/.local/share/cellscope/runs)"),
        set_opt(),
        {"steps", "N", "training.steps of every fold", {}, false},
        json_flag("print cv_summary.json")}});
  s.push_back(
      {"sweep run",
       {workspace_opt(kDefaultWorkspace),
        {"dry-run", "", "validate every point and list them with their INDEX, without running", {}, false},
        {"threads",
         "K",
         "intra-op threads of each run (default: the machine's cores; with --jobs J: max(1, cores / J))",
         {},
         false},
        {"steps",
         "N",
         "override training.steps of every point (changes the sweep: a fresh workspace or name)",
         {},
         false},
        {"worker", "I/N", "run share I of N (0-based): the points whose index modulo N is I", {}, false},
        {"point", "INDEX", "run that one point (a Slurm array task)", {}, false},
        {"jobs", "K", "run K points at once, each in its own process (log: WORKSPACE/sweeps/NAME/logs/)", {}, false},
        {"quiet", "", "no progress lines", {}, false},
        json_flag("JSON Lines: a point record as each point ends, then a sweep record")}});
  s.push_back({"sweep slurm",
               {workspace_opt(kDefaultWorkspace),
                {"out", "FILE.sh", "write the script there (default: stdout)", {}, false},
                {"partition", "P", "#SBATCH --partition", {}, false},
                {"time", "T", "#SBATCH --time", {}, false},
                {"cpus-per-task", "C", "#SBATCH --cpus-per-task (and each task's --threads)", {}, false},
                {"mem", "M", "#SBATCH --mem", {}, false},
                {"account", "A", "#SBATCH --account", {}, false},
                {"job-name", "J", "#SBATCH --job-name (default: the sweep's name)", {}, false},
                {"max-running", "M", "at most M array tasks at once (--array=0-(P-1)%M)", {}, false},
                {"cli", "PATH", "cellscope-cli as the nodes see it (default: this program)", {}, false},
                {"steps", "N", "override training.steps of every point", {}, false}}});
  s.push_back({"sweep status", {workspace_opt(kDefaultWorkspace), json_flag("print the points as JSON")}});
  s.push_back(
      {"sweep table",
       {workspace_opt(kDefaultWorkspace),
        {"metric", "M", "test|valid|test.KEY|valid.KEY (default: the task's primary metric on test)", {}, false},
        {"paired",
         "LABEL",
         "the difference to column (or row) LABEL per seed, with its test and p (row:L or col:L when both)",
         {},
         false},
        {"series", "AXIS", "long form (series, AXIS, mean, std, n) for a figure with error bars", {}, false},
        {"out", "FILE.csv|.tex|.json|.txt", "write the table there too (by extension)", {}, false},
        {"budget",
         "time=SECONDS|flops=X|step=N|KIND=common",
         "the compute-matched view: every run read at the same budget",
         {},
         false},
        {"at", "time=SECONDS|flops=X|step=N|KIND=common", "the same as --budget", {}, false}}});
  s.push_back({"sweep list", {}});
}

// generate, cloze, decode, report, export, import
void add_use_specs(std::vector<CommandSpec>& s) {
  s.push_back({"generate",
               {{"run", "DIR", "the char_lm or word_lm run (required)", {}, false},
                checkpoint_opt(),
                {"seed-text", "TEXT", "the text the sample continues", {}, false},
                {"length", "N", "tokens to sample (default 200)", {}, false},
                {"temperature", "T", "0 is greedy (default 1.0)", {}, false},
                {"seed", "N", "the random seed: the same seed gives the same text (default 1)", {}, false},
                {"top-k", "K", "sample among the K most probable tokens (default 0: all)", {}, false},
                {"allow-unk", "", "let the sample contain the unknown-word token", {}, false},
                json_flag("print the tokens with their probabilities as JSON"),
                {"out", "FILE.{txt,json,html}", "write the sample there (by extension)", {}, false},
                {"color", "", "shade the tokens by surprisal even when stdout is not a terminal", {}, false},
                {"no-color", "", "never shade them (as NO_COLOR does)", {}, false},
                threads_opt(),
                script_opt()}});
  s.push_back({"cloze scores",
               {{"split", "S", "the split: train, valid or test (required)", {}, false},
                {"checkpoint", "best|last|step_N", "the checkpoint (default best)", {}, false},
                {"out", "F.jsonl", "the file to write (required)", {}, false},
                threads_opt(),
                script_opt()}});
  s.push_back({"cloze rerank",
               {{"valid", "V.jsonl", "the reader's scores on valid, where the weights are tuned (required)", {}, false},
                {"test", "T.jsonl", "the reader's scores on test (required)", {}, false},
                {"lm", "WORD_LM_RUN", "the word_lm run of the Global LM", {}, false},
                {"checkpoint", "best|last|step_N", "the --lm run's checkpoint (default best)", {}, false},
                {"train", "TRAIN.jsonl", "the documents the Word-class LM is trained on (default: valid's)", {}, false},
                {"order", "N", "the n-gram order of the local and word-class LMs (default 3)", {}, false},
                {"wordnet", "DIR", "WordNet's dict folder (default: the system's)", {}, false},
                {"no-word-class", "", "leave out the Word-class LM", {}, false},
                threads_opt(),
                json_flag("print the accuracies and weights as JSON")}});
  s.push_back(
      {"decode",
       {{"split", "", "the split (default valid)", {"valid", "test", "train"}, false},
        checkpoint_opt(),
        {"beam", "K", "the beam width (default: the run's task.beam; 1 = greedy)", {}, false},
        {"alpha", "A", "the length penalty's exponent (default: the run's task.length_penalty)", {}, false},
        {"max", "N", "decode the first N pairs (default 20; 0 = all)", {}, false},
        {"max-length", "L", "at most L tokens per hypothesis (default: the run's)", {}, false},
        json_flag("print the samples and scores as JSON"),
        {"csv", "", "print them as CSV", {}, false},
        {"lowercase", "", "BLEU case-insensitive (sacreBLEU's -lc)", {}, false},
        {"rouge-stem", "", "ROUGE with Porter stemming (rouge-score's use_stemmer)", {}, false},
        {"hyp-out", "FILE", "write the hypotheses there, one per line", {}, false},
        {"ref-out", "FILE", "write the references there, one per line", {}, false},
        {"test-examples",
         "",
         "store RUN/test_examples.json (each test pair's BLEU statistics and ROUGE) for sweep table's bootstrap",
         {},
         false},
        threads_opt(),
        script_opt()}});
  s.push_back(
      {"report",
       {{"out", "DIR", "the folder the bundle is written to", {}, false},
        {"check",
         "DIR",
         "recompute every item of the report in DIR and compare (exit 0 all ok, 1 changed, 2 bad input)",
         {},
         false},
        workspace_opt("where runs and sweeps are (default: $CELLSCOPE_WORKSPACE or ~/.local/share/cellscope/runs; "
                      "--check: the workspace the report was rendered from)"),
        {"no-images", "", "CSV only for figures (faster)", {}, false},
        {"list", "", "the bundled specs", {}, false}}});
  s.push_back({"export",
               {checkpoint_opt(),
                {"out", "DIR", "the folder to write (required; must not exist or be empty)", {}, false},
                {"force", "", "replace an earlier export in DIR (nothing else)", {}, false},
                json_flag("print one JSON object: out, seconds, export"),
                script_opt()}});
  s.push_back({"export tensorboard", {{"out", "LOGDIR", "the TensorBoard log folder (required)", {}, false}}});
  s.push_back({"import",
               {{"run-dir", "RUN_DIR", "the new run's directory (default: a new one under the workspace)", {}, false},
                workspace_opt(kDefaultWorkspace),
                {"label", "TEXT", "the new run's label", {}, false},
                threads_opt(),
                json_flag("print one object: run_dir, tensors, weights_sha256, metric, valid, test"),
                {"quiet", "", "no progress lines", {}, false}}});
}

std::vector<CommandSpec> make_specs() {
  std::vector<CommandSpec> s;
  add_setup_specs(s);
  add_bench_specs(s);
  add_study_specs(s);
  add_use_specs(s);
  for (auto& c : s)
    for (auto& o : c.options)
      if (o.value.empty() && !o.choices.empty())
        for (size_t i = 0; i < o.choices.size(); ++i) o.value += (i ? "|" : "") + o.choices[i];
  return s;
}

// `text` broken into lines of at most `width` characters at spaces.
std::vector<std::string> wrap(const std::string& text, size_t width) {
  std::vector<std::string> lines;
  std::string line;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(' ', at);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(at, end - at);
    if (!line.empty() && line.size() + 1 + word.size() > width) lines.push_back(line), line.clear();
    line += (line.empty() ? "" : " ") + word;
    at = end + 1;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

}  // namespace

const std::vector<CommandSpec>& command_specs() {
  static const std::vector<CommandSpec> specs = make_specs();
  return specs;
}

const CommandSpec& command_spec(const std::string& path) {
  for (const auto& c : command_specs())
    if (c.path == path) return c;
  throw std::logic_error("no option declaration for command '" + path + "' (app/cli/options.cpp)");
}

std::string options_help(const std::vector<std::string>& paths, bool titled) {
  constexpr size_t kColumn = 28, kWidth = 104;
  std::string out;
  for (const auto& path : paths) {
    const CommandSpec& c = command_spec(path);
    bool any = false;
    for (const auto& o : c.options) any = any || !o.hidden;
    if (!any) continue;
    out += paths.size() == 1 && !titled ? "options:\n" : "options of " + path + ":\n";
    for (const auto& o : c.options) {
      if (o.hidden) continue;
      std::string head = "  --" + o.name + (o.value.empty() ? "" : " " + o.value);
      const auto lines = wrap(o.help, kWidth - kColumn);
      if (head.size() + 2 > kColumn) out += head + "\n" + std::string(kColumn, ' ');
      else out += head + std::string(kColumn - head.size(), ' ');
      for (size_t i = 0; i < lines.size(); ++i) out += (i ? std::string(kColumn, ' ') : "") + lines[i] + "\n";
    }
  }
  return out;
}

}  // namespace cli
