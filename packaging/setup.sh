#!/usr/bin/env bash
# The one set-up script: dependencies, corpora, build, and then run or test.
#
#   bash packaging/setup.sh [build|fetch|run|test] [extra args for the GUI]
#
#   build (default)  apt dependencies, corpora (datasets/fetch.sh), configure + build build/
#   fetch            apt dependencies and corpora only
#   run              build, then start the workbench on Moby Dick
#                    (no $DISPLAY: runs under xvfb-run only if CELLSCOPE_XVFB=1)
#   test             build, then ctest (offscreen Qt); then the sanitizer stage: a clang
#                    AddressSanitizer + UndefinedBehaviorSanitizer build in build-asan
#                    (-DCELLSCOPE_FUZZ=ON: the core, the CLI, the core tests and the fuzz
#                    targets), the core tests under it, and every fuzz target for
#                    CELLSCOPE_FUZZ_SECONDS (default 15) s; exits non-zero if any part fails.
#                    CELLSCOPE_SANITIZE_STAGE=0 skips the sanitizer stage; CELLSCOPE_MAIN_STAGE=0
#                    skips the main build and its ctest (the sanitizer stage alone: .ci/run's
#                    Debian 13 stage, packaging/test-distro.sh --sanitize).
#
# CELLSCOPE_GUI=0: no Qt packages and a -DCELLSCOPE_GUI=OFF build (the core, the CLI, the core and
# Python tests). Debian 12 (bookworm) and 13 (trixie) are supported: the package names that differ
# between them are in the table below.
#
# Works on a fresh Debian 12 or 13 as root, or as a user with sudo. Idempotent: a
# second run installs nothing, fetches nothing and the build is a no-op.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
action=${1:-build}
shift || true
case "$action" in build | fetch | run | test) ;; *)
  echo "usage: bash packaging/setup.sh [build|fetch|run|test]" >&2
  exit 2
  ;;
esac
main_stage=1  # CELLSCOPE_MAIN_STAGE=0: `test` runs the sanitizer stage alone
if [[ "$action" == test && "${CELLSCOPE_MAIN_STAGE:-1}" == 0 ]]; then
  main_stage=0
  if [[ "${CELLSCOPE_SANITIZE_STAGE:-1}" == 0 ]]; then
    echo "setup.sh: CELLSCOPE_MAIN_STAGE=0 and CELLSCOPE_SANITIZE_STAGE=0 leave nothing to test" >&2
    exit 2
  fi
fi
case "${CELLSCOPE_SANITIZE_TESTS:-all}" in all | ci) ;; *)
  echo "setup.sh: CELLSCOPE_SANITIZE_TESTS is all or ci, not '$CELLSCOPE_SANITIZE_TESTS'" >&2
  exit 2
  ;;
esac
if [[ "$action" == run && "${CELLSCOPE_GUI:-1}" == 0 ]]; then
  echo "setup.sh: 'run' starts the window, which CELLSCOPE_GUI=0 does not build (use cellscope-cli)" >&2
  exit 2
fi

BUILD_DIR=${CELLSCOPE_BUILD_DIR:-$repo/build}
# The packages, by Debian release (VERSION_CODENAME of /etc/os-release). Most names are the
# same on both; the table holds the ones that differ: clang's sanitizer/libFuzzer runtime is
# versioned with clang (Debian 12: 14, Debian 13: 19), Qt SVG's development package was renamed
# (Debian 12's libqt6svg6-dev is qt6-svg-dev on 13), and Debian 13 adds the ONNX runtime and
# safetensors that the Python export tests use where they exist.
. /etc/os-release 2>/dev/null || true
release=${CELLSCOPE_DEBIAN_RELEASE:-${VERSION_CODENAME:-unknown}}
case "$release" in
  bookworm) RELEASE_PACKAGES=(libqt6svg6-dev libclang-rt-14-dev
    clang-format) ;;  # 14, the version .clang-format's style is pinned to (test format)
  trixie) RELEASE_PACKAGES=(qt6-svg-dev libclang-rt-19-dev python3-onnxruntime python3-safetensors) ;;
  *) RELEASE_PACKAGES=(qt6-svg-dev libclang-rt-dev) ;;  # checked against the archive below
esac
GUI_PACKAGES=(qt6-base-dev qt6-base-dev-tools libqcustomplot-dev xvfb xauth)
PACKAGES=(libtorch-dev libopenblas0-openmp
  nlohmann-json3-dev libgloo-dev libgtest-dev cmake ninja-build ccache git lintian
  g++ pkg-config  # named, not left to Recommends: without them (CELLSCOPE_APT_RECOMMENDS=0) c++ is clang and CMake finds no pkg-config
  clang  # + RELEASE_PACKAGES' libclang-rt-N-dev: its sanitizer and libFuzzer runtimes, the sanitizer stage of `test`
  lld  # the linker CMake picks for every executable (docs/BUILD.md)
  python3-torch python3-numpy  # /usr/bin/python3's PyTorch: the plain-Python peers of `bench --peer` (test bench_peers); the TorchScript cells of resources/cells (test script_cell)
  python3-onnx  # the ONNX files of cellscope_torch.portable, checked with onnx.checker (test export_torch)
  wordnet-base  # WordNet's noun/verb lists: the word classes of the CBT-style cloze set
  libsentencepiece-dev  # subword vocabularies of the sequence-to-sequence task
  libpugixml-dev  # the XML parser of the SemEval-2014 loader (core/base/data/text_datasets.cpp)
  libicu-dev  # ICU: NFC, UAX #29 word breaks and Unicode lower-casing of the word tokenizer (core/base/data/tokenizer.cpp)
  libstemmer-dev  # Snowball's Porter stemmer: ROUGE's optional stemming (core/base/data/text_metrics.cpp)
  python3-nltk  # an independent BLEU and Porter stemmer for the metric tests
  python3-pytest python3-setuptools  # the Python package's own tests and its build backend (packaging/python: pytest, pyproject.toml; test cellscope_torch_pytest)
  python3-icu  # PyICU: cellscope_torch tokenises new text with the ICU rules of a run (packaging/python/cellscope_torch/text.py; test cellscope_torch_pytest)
  libcli11-dev  # CLI11 (header-only): the option parser of every cellscope-cli command (app/cli/args.cpp)
  help2man  # cellscope-cli.1 generated at build time from the commands' --help (packaging/man/make-man.sh)
  python3-protobuf protobuf-compiler libprotobuf-dev  # test tensorboard: an independent reader of the event files (protoc + struct.proto)
  "${RELEASE_PACKAGES[@]}")
# CELLSCOPE_GUI=0: the core, the CLI and the core tests only (no Qt packages, -DCELLSCOPE_GUI=OFF).
if [[ "${CELLSCOPE_GUI:-1}" != 0 ]]; then PACKAGES+=("${GUI_PACKAGES[@]}"); fi

ms() { echo $(($(date +%s%N) / 1000000)); }
t_step=""
step_done() {
  [[ -n "$t_step" ]] || return 0
  local d=$(($(ms) - t_step))
  printf '    (%d.%01ds)\n' $((d / 1000)) $((d % 1000 / 100))
}
step() {
  step_done
  t_step=$(ms)
  echo "==> $*"
}
die() { echo "setup.sh: $*" >&2; exit 1; }

# Root runs apt directly; others go through sudo when it exists.
as_root() {
  if [[ $EUID -eq 0 ]]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else die "need root for '$*' (run as root, or install sudo)"; fi
}

# Names of installed packages plus the virtual names they provide (Debian 12's
# libqt6svg6-dev, for one, is provided by qt6-svg-dev), one per line.
installed_names() {
  dpkg-query -W -f='${db:Status-Abbrev}|${Package}|${Provides}\n' 2>/dev/null |
    awk -F'|' '$1 ~ /^ii/ { print $2; n = split($3, p, ","); for (i = 1; i <= n; i++) { sub(/^ +/, "", p[i]); sub(/ .*/, "", p[i]); if (p[i] != "") print p[i] } }' |
    sort -u
}

# --------------------------------------------------------------- dependencies
step "Checking system packages"
missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  have=$(installed_names)
  for p in "${PACKAGES[@]}"; do grep -qxF "$p" <<<"$have" || missing+=("$p"); done
  # node converts the corpora; the registry's tarballs are downloaded by python3 (datasets/fetch.sh), no npm
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
else
  echo "    not a Debian system (no dpkg); make sure these are installed: ${PACKAGES[*]} nodejs"
fi
if ((${#missing[@]})); then
  command -v apt-get >/dev/null 2>&1 || die "missing packages (${missing[*]}) and no apt-get to install them"
  echo "    installing: ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
  # Every name must be in the archive (real or provided): one message naming those that are not,
  # rather than apt's first "Unable to locate package".
  unknown=()
  for p in "${missing[@]}"; do
    cand=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ { print $2 }')
    if [[ -z "$cand" || "$cand" == "(none)" ]] &&
      ! apt-cache showpkg "$p" 2>/dev/null | sed -n '/^Reverse Provides:/,$p' | sed 1d | grep -q .; then
      unknown+=("$p")
    fi
  done
  if ((${#unknown[@]})); then
    case "$release" in bookworm | trixie) hint="" ;; *)
      hint=" This is Debian release '$release' (/etc/os-release); Cellscope's package list knows Debian 12 (bookworm) and 13 (trixie): the names above are those of Debian 13." ;;
    esac
    die "these packages are not in this machine's apt sources: ${unknown[*]}.${hint} Install their equivalents by hand, or set CELLSCOPE_DEBIAN_RELEASE=bookworm|trixie to use that release's list."
  fi
  # CELLSCOPE_APT_RECOMMENDS=0: without the packages' Recommends (what a GUI-less test machine needs).
  recommends=()
  [[ "${CELLSCOPE_APT_RECOMMENDS:-1}" == 0 ]] && recommends=(--no-install-recommends)
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${recommends[@]}" "${missing[@]}"
else
  echo "    all present"
fi

# LibTorch runs its CPU matmuls through libblas.so.3: the reference (netlib)
# BLAS is many times slower than OpenBLAS, so point the alternatives at OpenBLAS.
if command -v update-alternatives >/dev/null 2>&1; then
  while read -r name _mode value; do
    [[ "$name" == libblas.so.3* || "$name" == liblapack.so.3* ]] || continue
    if [[ "$value" != *openblas* ]]; then
      alt=$(update-alternatives --list "$name" 2>/dev/null | grep openblas | head -n1 || true)
      if [[ -n "$alt" ]]; then
        echo "    $name: $value -> $alt"
        as_root update-alternatives --set "$name" "$alt" >/dev/null
      fi
    fi
  done < <(update-alternatives --get-selections 2>/dev/null || true)
fi

# -------------------------------------------------------------------- corpora
step "Fetching corpora (datasets/fetch.sh)"
bash "$repo/datasets/fetch.sh"
[[ "$action" == fetch ]] && { step_done; exit 0; }

# ---------------------------------------------------------------------- build
# ccache: paths relative to the checkout, so a fresh clone anywhere (CI) reuses the
# cache of an earlier build on this machine (both builds); precompiled headers need the sloppiness.
export CCACHE_BASEDIR="$repo" CCACHE_NOHASHDIR=true
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime

if [[ $main_stage == 1 ]]; then
  step "Configuring $BUILD_DIR"
  if [[ -f "$BUILD_DIR/build.ninja" ]]; then
    echo "    already configured (ninja re-runs CMake when CMakeLists change)"
  else
    launcher=()
    command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    gui=ON
    [[ "${CELLSCOPE_GUI:-1}" == 0 ]] && gui=OFF
    # Warnings are errors with the compiler CI pins (Debian 12's GCC 12: tests/README.md, "Rules a
    # machine checks"); CELLSCOPE_WERROR=0 builds through a warning there.
    werror=OFF
    [[ $release == bookworm && ${CELLSCOPE_WERROR:-1} != 0 ]] && werror=ON
    cmake -S "$repo" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCELLSCOPE_GUI=$gui \
      -DCELLSCOPE_WERROR=$werror "${launcher[@]}"
  fi

  step "Building with $(nproc) jobs"
  cmake --build "$BUILD_DIR" -j"$(nproc)"
fi

# ------------------------------------------------------------------ sanitizer stage
# tests/README.md, "Fuzzing and the sanitizer suite". One clang build serves both: the core,
# the CLI and the core tests with ASan + UBSan (plus libFuzzer's coverage instrumentation,
# which costs little), and the fuzz targets. Returns non-zero when any part fails.
ASAN_BUILD_DIR=${CELLSCOPE_ASAN_BUILD_DIR:-$repo/build-asan}
# The core tests under the sanitizers: all but mzu (finite-difference gradient checks, LibTorch
# arithmetic: 40% of the stage's test time), dist* and launchers (several processes talking
# through gloo; launchers also runs them under Python's torchrun); man_page checks the man page
# that the packaging targets generate, which this stage does not build (the gcc stage runs it);
# tests/README.md has the times. Also subword, seq2seq_task, seq2seq_decode and seq2seq_test_decode: they load
# SentencePiece's module with dlopen(RTLD_DEEPBIND) (core/base/data/SEQ2SEQ_DATA_NOTES.md), which
# the ASan runtime refuses (google/sanitizers#611); they run in the main (gcc) stage.
ASAN_TESTS_EXCLUDE=${CELLSCOPE_ASAN_TESTS_EXCLUDE:-'^(mzu|dist|dist_cluster|dist_end|dist_end_sentences|dist_listen|dist_stop|launchers|man_page|subword|seq2seq_task|seq2seq_decode|seq2seq_test_decode)$'}
# And, inside the files that do run, five long single tests (tests/README.md has their times):
# a 150-step training of each MZU on both paths, the MZU products split over M-functions at four
# sizes (the clang build's core runs on one thread: fused::core_has_openmp), the timed peer bench,
# a cloze reader trained to beat a baseline, and the memory count at the bench width. The
# sanitizers see the same code in the files' shorter tests; these repeat it at length. They all run
# in the main stage. Also the hostile-input test of the subword vocabulary size: it loads
# SentencePiece's module (RTLD_DEEPBIND, refused by the ASan runtime, as for subword above), and so do
# the seq2seq export agreement, the RNNSearch train-and-decode test, the RNNSearch test-examples test
# (a CLI training and decode) and the registry's export test (its
# seq2seq task: Python is killed when it loads the module under the ASan runtime).
ASAN_GTEST_EXCLUDE=${CELLSCOPE_ASAN_GTEST_EXCLUDE:-'FusedMzu.same_training_on_default_corpus:FusedMzu.products_split_over_m_functions:BenchPeers.peerBenchReportsTimesSpeedupEfficiencyAndMemory:ClozeTrain.beatsTheFrequencyBaselineOnHeldOutQuestions:FastPathMemory.gruEngineCellsAtTheBenchWidth:HostileInput.subwordVocabularyTooSmall:ExportTorchPython.seq2seqAgreesWithPyTorch:Seq2seqRnnsearch.tiny_train_finishes_and_decodes:Seq2seqRnnsearch.testExamplesOfTheBeamDecodedTestSplit:ExportTorchRegistry.everyRegisteredCellTaskAndEnumValueLoadsInPythonOrIsRefused'}
# CELLSCOPE_SANITIZE_TESTS=ci (.ci/run's Debian 13 stage; default: all) leaves out 21 more: the
# longest end-to-end tests under the sanitizers, each a series of CLI processes (LibTorch's start-up
# and LeakSanitizer's exit scan in every one) over code the shorter tests also take there:
# 1,701 s of the stage's 3,069 s of test time on the 2-core machine for the first 14, 145 s of the
# Debian 13 stage's 946 s for the 7 after them (tests/README.md has each). And one single test:
# the agreement of every cell and task's export with PyTorch (about 150 s of the 279 s export_torch took
# under ASan: 30-odd runs trained and exported by the instrumented CLI), and the torch.nn renaming of eight such runs
# (Python's side; the sanitizers add nothing there); on Debian 13 the stage
# keeps torch 2.6 loading every dtype with weights_only, TorchScript, ONNX and onnxruntime for GRU,
# LSTM and one cell of each paper (the rest of export_torch_python). The main stage runs them all on the
# same commit (in CI: Debian 12's), and `setup.sh test` (the README's test command,
# test-distro.sh) runs them under the sanitizers too. It keeps the Python tests, cross_version,
# cli, script_cell and every kernel test (fused_*, *_blas_auto). Its fuzz targets run
# CELLSCOPE_FUZZ_SECONDS_CI (default 6) s each instead of 15.
ASAN_CI_EXCLUDE='reliability|cli_help|round_trip|sweep_workers|completion|bench_matrix|kill_resume|report|char_lm|classify|bench_peers|bad_input|word_lm|cloze_train|history|generate|tensorboard|cloze_rerank|sweep|sweep_table|analysis_compare'
ASAN_CI_GTEST_EXCLUDE='ExportTorchPython.everyCellAndTaskAgreesWithPyTorch:ExportTorchPython.gruLstmRnnRunsAreTorchNnModules'
fuzz_seconds=${CELLSCOPE_FUZZ_SECONDS:-15}
case "${CELLSCOPE_SANITIZE_TESTS:-all}" in
  all) ;;
  ci)
    ASAN_TESTS_EXCLUDE="(${ASAN_TESTS_EXCLUDE})|^($ASAN_CI_EXCLUDE)\$"
    ASAN_GTEST_EXCLUDE="${ASAN_GTEST_EXCLUDE:+$ASAN_GTEST_EXCLUDE:}$ASAN_CI_GTEST_EXCLUDE"
    fuzz_seconds=${CELLSCOPE_FUZZ_SECONDS_CI:-${CELLSCOPE_FUZZ_SECONDS:-6}}
    ;;
esac
sanitizer_stage() {
  local src=0
  step "Sanitizer build (clang, ASan + UBSan) in $ASAN_BUILD_DIR"
  if [[ ! -f "$ASAN_BUILD_DIR/build.ninja" ]]; then
    local launcher=()
    command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    cmake -S "$repo" -B "$ASAN_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
      -DCELLSCOPE_GUI=OFF -DCELLSCOPE_FUZZ=ON "${launcher[@]}" || return 1
  fi
  cmake --build "$ASAN_BUILD_DIR" -j"$(nproc)" --target cellscope-cli cellscope_core_tests cellscope_fuzz || return 1

  step "Core tests under ASan + UBSan"
  # halt_on_error: the first report fails the test. LeakSanitizer stays on, with the
  # suppressions of tests/lsan.supp (allocations LibTorch and OpenMP keep until exit).
  ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1 \
    UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1 \
    LSAN_OPTIONS="suppressions=$repo/tests/lsan.supp:print_suppressions=0" \
    CELLSCOPE_TEST_EXCLUDE="$ASAN_GTEST_EXCLUDE" \
    ctest --test-dir "$ASAN_BUILD_DIR" --output-on-failure -j2 -E "$ASAN_TESTS_EXCLUDE" || src=1

  step "Fuzz targets, $fuzz_seconds s each (tests/fuzz/run_all.sh)"
  CELLSCOPE_FUZZ_BUILD="$ASAN_BUILD_DIR" CELLSCOPE_FUZZ_JOBS=2 \
    bash "$repo/tests/fuzz/run_all.sh" "$fuzz_seconds" || src=1
  return $src
}

# ------------------------------------------------------------------ run/test
case "$action" in
  test)
    rc=0
    if [[ $main_stage == 1 ]]; then
      step "Running the tests"
      set +e
      QT_QPA_PLATFORM=offscreen ctest --test-dir "$BUILD_DIR" --output-on-failure -j2
      rc=$?
      set -e
    fi
    if [[ "${CELLSCOPE_SANITIZE_STAGE:-1}" != 0 ]]; then
      sanitizer_stage || rc=1
    fi
    step_done
    exit $rc
    ;;
  run)
    step "Starting the workbench"
    exe="$BUILD_DIR/app/gui/cellscope"
    [[ -x "$exe" ]] || die "$exe was not built"
    if [[ -z "${DISPLAY:-}" && -z "${WAYLAND_DISPLAY:-}" ]]; then
      if [[ "${CELLSCOPE_XVFB:-0}" == 1 ]]; then
        echo "    no \$DISPLAY: running under xvfb-run (CELLSCOPE_XVFB=1)"
        exec xvfb-run -a "$exe" --dataset moby-dick "$@"
      fi
      die "no \$DISPLAY: start it from a graphical session, or set CELLSCOPE_XVFB=1 to run it under xvfb-run"
    fi
    exec "$exe" --dataset moby-dick "$@"
    ;;
  *)
    step_done
    ;;
esac
