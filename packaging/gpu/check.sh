#!/usr/bin/env bash
# Issue #50's whole GPU check in one call (docs/GPU.md): on a machine with an NVIDIA GPU, python3 with
# a CUDA PyTorch (its LibTorch: torch.utils.cmake_prefix_path), CUDA's toolkit, CMake and ninja, but no
# Qt and no package registry. The Debian-only libraries travel as .deb files in .gpu/deps/debs
# (packaging/deps-prefix.sh DIR, run on a Debian machine) and the Moby Dick corpus in .cache/datasets.
#
#   bash packaging/gpu/check.sh [STAGES] OUTDIR      STAGES: all (default: build,info,bench,cells,tests)
#                                                    or a comma list of them, run in that order
#
#   build  the core, cellscope-cli and the core tests (-DCELLSCOPE_GUI=OFF) against that LibTorch in
#          build-gpu/ (the CLI first, the tests in the background while the checks run)
#   info   cellscope-cli info: the GPU and the CUDA-graph state
#   cells  packaging/gpu/check_cells.py: every cell family trains to the CPU run's loss on CUDA (graph
#          and eager), the cross-device resumes, NCCL with --nproc 1
#   tests  the core tests that exercise CUDA (GraphStep, including the CUDA-only ones), then the rest
#          of the core suite as far as CHECK_TESTS_SECONDS allows
#   bench  bench --peer --device cuda at batch 32 and 256, T 150, D 256, H 512 (the MZU paper's
#          configuration), against the Python peers on the same GPU (eager, torch.compile) and cuDNN's GRU
#
# Every stage writes its log and results under OUTDIR; steps.log has the timeline; summary.md the results.
set -uo pipefail
cd "$(dirname "$0")/../.."
stages=all
if [[ $# -ge 2 ]]; then
  stages=$1
  shift
fi
out=${1:?usage: check.sh [STAGES] OUTDIR}
mkdir -p "$out"
build=${CHECK_BUILD_DIR:-build-gpu}
py=${PYTHON:-python3}
jobs=$(nproc)
cli=$build/app/cli/cellscope-cli
# One deadline for the whole call (CHECK_TOTAL_SECONDS, default 560): each later stage gets what is
# left of it, at most its own limit, so the slow ones (the bench) lose rows rather than the call its end.
deadline=$((SECONDS + ${CHECK_TOTAL_SECONDS:-560}))
left() { # left MAX: seconds to give a stage (at least 10)
  local l=$((deadline - SECONDS - 15))
  ((l > $1)) && l=$1
  ((l < 10)) && l=10
  echo "$l"
}
say() { echo "[$(date +%T) +${SECONDS}s] $*" | tee -a "$out/steps.log"; }
summary() { echo "$*" >> "$out/summary.md"; }

stage_build() {
  say "machine: $jobs cores; $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
  $py -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda, "cxx11 abi", torch.compiled_with_cxx11_abi(), "python", sys.version.split()[0])' 2>&1 | tee -a "$out/steps.log"
  torch_prefix=$($py -c 'import torch; print(torch.utils.cmake_prefix_path)')
  nccl_inc=$($py -c "import glob, site; print(next(iter(d for p in site.getsitepackages() for d in glob.glob(p + '/nvidia/nccl/include')), ''))" 2> /dev/null)
  nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2> /dev/null | head -1)
  [[ -n $nvcc ]] && export PATH="$(dirname "$nvcc"):$PATH"
  say "LibTorch: $torch_prefix; nccl.h: ${nccl_inc:-none}; nvcc: ${nvcc:-none}; $(c++ --version | head -1)"
  if [[ ! -d .gpu/deps/usr ]]; then
    if command -v dpkg-deb > /dev/null; then
      bash packaging/deps-prefix.sh --offline .gpu/deps > "$out/deps.log" 2>&1 || { say "deps-prefix failed (deps.log)"; exit 1; }
    else  # no dpkg here: a .deb is an ar archive whose data.tar.* holds the files
      $py packaging/gpu/unpack_debs.py .gpu/deps > "$out/deps.log" 2>&1 || { say "unpacking the .deb files failed (deps.log)"; exit 1; }
    fi
  fi
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCELLSCOPE_GUI=OFF -DCELLSCOPE_UNITY_BATCH=4 \
    -DCMAKE_PREFIX_PATH="$PWD/.gpu/deps/usr;$torch_prefix" ${nccl_inc:+-DCELLSCOPE_NCCL_INCLUDE_DIR="$nccl_inc"} \
    > "$out/configure.log" 2>&1 || { say "configure failed:"; tail -30 "$out/configure.log"; exit 1; }
  grep -E "CUDA|NCCL|Torch|Caffe2" "$out/configure.log" | head -12 | tee -a "$out/steps.log"
  say "building cellscope-cli ($jobs jobs)"
  if ! ninja -C "$build" -j"$jobs" -k 0 cellscope-cli > "$out/build-cli.log" 2>&1; then
    say "the CLI build failed:"
    grep -B2 -A12 -m8 "error" "$out/build-cli.log" | head -120
    exit 1
  fi
  say "cellscope-cli built; the core tests build in the background"
  # on the upper half of the cores, niced: the bench (and the cells' runs) use the lower half
  (nice -n 10 taskset -c "$((jobs / 2))-$((jobs - 1))" ninja -C "$build" -j"$((jobs / 2))" -k 0 cellscope_core_tests \
    > "$out/build-tests.log" 2>&1
   echo $? > "$out/build-tests.rc") &
  echo $! > "$out/build-tests.pid"
  summary "- build: core + cellscope-cli against $($py -c 'import torch; print(torch.__version__)') in ${SECONDS}s"
}

stage_info() {
  "$cli" info > "$out/info.txt" 2>&1
  say "info: $(grep -E '^(LibTorch|CUDA|  cuda|CUDA graphs)' "$out/info.txt" | tr '\n' ';')"
}

stage_cells() {
  say "cells: CPU vs CUDA (graph, eager), resumes, NCCL"
  timeout "$(left "${CHECK_CELLS_SECONDS:-200}")" $py packaging/gpu/check_cells.py --cli "$cli" --out "$out/cells" --nccl \
    --jobs "${CHECK_CELLS_JOBS:-12}" > "$out/cells.log" 2>&1
  rc=$?
  pkill -f "cellscope-cli-full train" 2> /dev/null  # a run the time box cut short
  say "cells: exit $rc"
  [[ -f $out/cells/cells.md ]] && cp "$out/cells/cells.md" "$out/cells.md" && cat "$out/cells.md"
  (cd "$out/cells" && tar czf ../cells-runs.tgz runs/*.log runs/*.json runs/*/log.txt runs/*/summary.json \
    runs/*/metrics.jsonl 2> /dev/null)
  rm -rf "$out/cells/runs"
  summary "- cells: exit $rc (cells.md)"
}

stage_tests() {
  if [[ -f $out/build-tests.pid ]]; then
    say "waiting for the core tests' build"
    while kill -0 "$(cat "$out/build-tests.pid")" 2> /dev/null && ((SECONDS < deadline - 60)); do sleep 2; done
  fi
  say "core tests built: exit $(cat "$out/build-tests.rc" 2> /dev/null || echo '?')"
  if [[ -x $build/tests/cellscope_core_tests ]]; then
    timeout "$(left 150)" "$build/tests/cellscope_core_tests" --gtest_filter='GraphStep.*:FastPathDevice.*' > "$out/tests-cuda.log" 2>&1
    say "GraphStep + FastPathDevice on CUDA: exit $? ($(grep -cE '^\[       OK \]' "$out/tests-cuda.log") ok, $(grep -cE '^\[  FAILED  \]' "$out/tests-cuda.log") failed lines, $(grep -c SKIPPED "$out/tests-cuda.log") skipped lines)"
    grep -E '^\[  (FAILED|SKIPPED) ' "$out/tests-cuda.log" | head -20
    if grep -q '^\[  PASSED  \]' "$out/tests-cuda.log" && ! grep -q '^\[  FAILED  \]' "$out/tests-cuda.log"; then
      # every test passed but the process may still die at its exit: which test leaves that, and where
      for t in capturedStepTrainsAsTheEagerStep benchStepCapturesWhereItCan staticStepTrainsAsThePlainStep; do
        timeout 60 "$build/tests/cellscope_core_tests" --gtest_filter="GraphStep.$t" > /dev/null 2>&1
        say "  GraphStep.$t alone: exit $?"
      done
      if command -v cuda-gdb > /dev/null; then
        timeout "$(left 60)" cuda-gdb -batch -ex run -ex bt -ex 'info threads' --args "$build/tests/cellscope_core_tests" \
          --gtest_filter='GraphStep.captured*:GraphStep.bench*' > "$out/tests-exit-bt.log" 2>&1
        say "  cuda-gdb: $(grep -m1 -E 'SIGSEGV|exited normally|exited with' "$out/tests-exit-bt.log")"
        grep -A25 -m1 'SIGSEGV' "$out/tests-exit-bt.log" | head -30
      fi
    fi
    if [[ ${CHECK_TESTS_SECONDS:-0} -gt 0 ]]; then
      (cd "$build" && timeout "$(left "$CHECK_TESTS_SECONDS")" ctest -j"$jobs" --timeout 120 -E 'chroot|package|hardening|man_page|format|unity' > "$out/ctest.log" 2>&1)
      say "ctest: $(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -1)"
      grep -E '\*\*\*Failed|\*\*\*Timeout|Not Run' "$out/ctest.log" | head -40 > "$out/ctest-failed.txt"
    fi
  else
    grep -B2 -A12 -m8 "error" "$out/build-tests.log" | head -80
  fi
}

stage_bench() {
  say "bench --peer --device cuda"
  CELLSCOPE_PEER_PYTHON=$(command -v "$py") timeout "$(left "${CHECK_BENCH_SECONDS:-420}")" taskset -c "0-$((jobs / 2 - 1))" "$cli" bench --peer --device cuda \
    --batch "${CHECK_BENCH_BATCHES:-32,256}" --seq 150 --embed 256 --hidden 512 \
    --min-seconds "${CHECK_BENCH_MIN_SECONDS:-0.5}" --iters "${CHECK_BENCH_ITERS:-0}" \
    --python-modes "${CHECK_BENCH_MODES:-eager,compile_step}" \
    --compile-timeout "${CHECK_COMPILE_TIMEOUT:-90}" ${CHECK_BENCH_CELLS:+--cell "$CHECK_BENCH_CELLS"} \
    --partial "$out/peer.json" --json > /dev/null 2> "$out/peer.log"
  rc=$?
  say "bench: exit $rc"
  if [[ -s $out/peer.json ]]; then
    "$cli" bench --peer --table-from "$out/peer.json" > "$out/peer.md" 2>> "$out/peer.log"
    cat "$out/peer.md"
  else
    tail -20 "$out/peer.log"
  fi
  summary "- bench: exit $rc (peer.md, peer.json)"
}
# The stages in the order given (all: build, info, bench, cells, tests: the bench times on a quiet
# machine while nothing else runs but the core tests' build, kept to other cores).
[[ $stages == all ]] && stages=build,info,bench,cells,tests
IFS=, read -r -a order <<< "$stages"
for st in "${order[@]}"; do
  "stage_$st"
done
say "done"
