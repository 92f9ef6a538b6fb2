#!/usr/bin/env bash
# Regenerates docs/screenshots/{training,compare,compare-seeds,analyses}-{1600x1000,1024x700}.png
# on the default dataset (moby-dick), from throw-away workspaces:
#   1. two short char-LM trainings through the CLI (a GRU and a gcnMZU, evaluation
#      every 40 steps, a test point at the end), so every view has finished runs;
#   1b. three seeds of that GRU in a workspace of their own, with --threads 1, 2, 1 (the
#      threads are bookkeeping: one seed group);
#   2. the workbench under Xvfb at each window size: the Compare tab with the three seeds
#      aggregated (mean and min-max band; two of them selected for the config diff), the
#      Training tab while a third short run trains live, the Compare tab with both runs,
#      the Analyses tab (per-character relevance of the two runs).
# Usage: bash docs/screenshots.sh [BUILD_DIR]   (default: build). Needs xvfb-run and
# the corpus (datasets/fetch.sh or `cellscope-cli fetch moby-dick`). Look at every PNG.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
cli=$build/app/cli/cellscope-cli
gui=$build/app/gui/cellscope
out=$here/docs/screenshots
for b in "$cli" "$gui"; do [ -x "$b" ] || { echo "screenshots.sh: $b is not built" >&2; exit 2; }; done
command -v xvfb-run >/dev/null || { echo "screenshots.sh: xvfb-run is missing (apt-get install xvfb)" >&2; exit 2; }
ws=$(mktemp -d /tmp/cellscope-shots.XXXXXX)
seeds=$(mktemp -d /tmp/cellscope-shots-seeds.XXXXXX)
cfg=$(mktemp -d /tmp/cellscope-shots-config.XXXXXX)
trap 'rm -rf "$ws" "$seeds" "$cfg"' EXIT
export CELLSCOPE_WORKSPACE=$ws
common=(--set dataset.max_chars=200000 --set training.batch=16 --set training.bptt=64 --set training.steps=160
        --set training.eval_every=40 --set training.log_every=5 --set training.eval_test=true --set model.embed=32)
"$cli" train quick-gru --workspace "$ws" "${common[@]}" --set model.hidden=96 --quiet
"$cli" train quick-gcn-mzu --workspace "$ws" "${common[@]}" --set model.hidden=48 --set training.steps=80 --quiet
for s in 1 2 3; do
  "$cli" train quick-gru --workspace "$seeds" "${common[@]}" --set model.hidden=96 --set training.seed=$s \
    --threads $(( s == 2 ? 2 : 1 )) --quiet
done
mapfile -t runs < <(find "$ws" -mindepth 1 -maxdepth 1 -type d | sort)
[ "${#runs[@]}" -ge 2 ] || { echo "screenshots.sh: the trainings made no runs in $ws" >&2; exit 1; }
mkdir -p "$out"
shot() {  # size name args...
  local size=$1 name=$2; shift 2
  # The settings of this script's window only (never the user's).
  XDG_CONFIG_HOME=$cfg xvfb-run -a -s "-screen 0 ${size}x24" \
    "$gui" --dataset moby-dick --workspace "$ws" --window-size "$size" --screenshot "$out/$name-$size.png" "$@"
}
# Compare and Analyses first: the Training shots add (stopped) runs to the workspace.
for size in 1600x1000 1024x700; do
  XDG_CONFIG_HOME=$cfg xvfb-run -a -s "-screen 0 ${size}x24" "$gui" --dataset moby-dick --workspace "$seeds" \
    --window-size "$size" --screenshot "$out/compare-seeds-$size.png" --tab compare --check-all --seed-bands --after-ms 2500
  shot "$size" compare --tab compare --check-all --after-ms 2500
  shot "$size" analyses --analysis relevance --analysis-run "${runs[0]}" --analysis-run2 "${runs[1]}" \
    --analysis-text "Call me Ishmael. Some years ago, never mind how long precisely" --analysis-k 12 --after-ms 800
done
for size in 1600x1000 1024x700; do
  shot "$size" training --set training.steps=400 --set training.eval_every=50 --set dataset.max_chars=200000 \
    --set model.hidden=64 --set training.batch=16 --set training.bptt=64 --set training.log_every=5 --start --after-ms 25000
done
ls -l "$out"/{training,compare,compare-seeds,analyses}-{1600x1000,1024x700}.png
