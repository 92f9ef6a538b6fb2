#!/usr/bin/env bash
# The README's test command in a fresh Debian chroot of either supported release: a minimal
# debootstrap of bookworm (Debian 12) or trixie (Debian 13), a copy of this checkout in it, and
# `bash packaging/setup.sh test` run there as a new user's root would: it installs the packages,
# fetches the corpora from npm, builds and runs the suite. Each step's time is printed.
#
#   sudo bash packaging/test-distro.sh bookworm|trixie [--core | --sanitize] [--prepare | --reuse] [--keep] [--package]
#
#   --core      the GUI-less configuration (setup.sh with CELLSCOPE_GUI=0: no Qt packages,
#               -DCELLSCOPE_GUI=OFF, no Recommends): the core, the CLI, the core and Python tests;
#               no sanitizer stage: the quick check of a release.
#   --sanitize  GUI-less too, and setup.sh's sanitizer stage alone (CELLSCOPE_MAIN_STAGE=0): the
#               clang ASan + UBSan build of the core, the CLI, the core tests and the fuzz targets,
#               the core tests (Python ones included) under it and every fuzz target: .ci/run's
#               Debian 13 stage, which costs no more compiling than the Debian 12 sanitizer stage
#               it replaces.
#   --prepare   make the chroot and install its packages and corpora (setup.sh fetch), then stop,
#               keeping it: the part without compiling, which .ci/run runs in the background.
#   --reuse     use the chroot a --prepare left (a fresh copy of the checkout in it); makes it
#               anew when there is none.
#   --keep      leave the chroot (and its build) in place afterwards, for a look inside.
#   --package   after the suite passes (the GUI build only), make the .deb there with cpack and
#               install it in a second fresh chroot of the same release (test-install.sh --deb):
#               the CLI, a tiny training and the window under Xvfb, with a screenshot.
#   CELLSCOPE_DISTRO_TIMEOUT=SECONDS  a time box for setup.sh in the chroot (default: none):
#               past it setup.sh is stopped and the run fails, saying so.
#
# Environment:
#   CELLSCOPE_TEST_DIR       where the chroots live (default /var/tmp/cellscope-distro); the
#                            pristine debootstrap tree of each release and the downloaded .debs
#                            are kept there between runs, the installed system never is
#   CELLSCOPE_DISTRO_CCACHE  1: keep a compiler cache per release there too; host: use this machine's
#                            compiler cache (`ccache -k cache_dir`), so that a CI machine that keeps
#                            its cache between runs keeps the chroot's compiles too (ccache tells the
#                            compilers apart); default 0: a cold build. CCACHE_DISABLE=1 is passed in
#   CELLSCOPE_DISTRO_SETUP_ENV  extra NAME=VALUE words passed to setup.sh in the chroot
#   DEBIAN_MIRROR            default http://deb.debian.org/debian
#
# A chroot does not trust what its host trusts: the host's CA bundle is copied in and named by
# SSL_CERT_FILE and NODE_EXTRA_CA_CERTS there (npm fails with SELF_SIGNED_CERT_IN_CHAIN behind a
# TLS-inspecting proxy otherwise), and the proxy variables are carried over.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
suite=${1:-}
shift || true
mode=full
keep=0
prepare=0
reuse=0
package=0
for a in "$@"; do
  case "$a" in
    --core) mode=core ;;
    --sanitize) mode=sanitize ;;
    --prepare) prepare=1 keep=1 ;;
    --reuse) reuse=1 ;;
    --keep) keep=1 ;;
    --package) package=1 ;;
    *) echo "test-distro.sh: unknown option '$a'" >&2; exit 2 ;;
  esac
done
case "$suite" in
  bookworm | trixie) ;;
  *) echo "usage: sudo bash packaging/test-distro.sh bookworm|trixie [--core | --sanitize] [--prepare | --reuse] [--keep] [--package]" >&2; exit 2 ;;
esac
die() { echo "test-distro.sh: $*" >&2; exit 1; }
[[ $package == 0 || ($mode == full && $prepare == 0) ]] || die "--package needs the GUI build of the whole suite (not --core, --sanitize or --prepare)"
[[ $EUID -eq 0 ]] || die "run as root (debootstrap, chroot, mounts)"
for t in debootstrap chroot git tar; do command -v $t >/dev/null || die "'$t' is missing (apt-get install debootstrap git)"; done

top=${CELLSCOPE_TEST_DIR:-/var/tmp/cellscope-distro}/$suite
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=$top/root
mkdir -p "$top"

ms() { echo $(($(date +%s%N) / 1000000)); }
t0=$(ms)
t_step=""
step_name=""
times=()
step_done() {
  [[ -n "$t_step" ]] || return 0
  local d=$(($(ms) - t_step))
  printf '    (%d.%01ds)\n' $((d / 1000)) $((d % 1000 / 100))
  times+=("$(printf '%-44s %7d.%01d s' "$step_name" $((d / 1000)) $((d % 1000 / 100)))")
}
step() {
  step_done
  t_step=$(ms)
  step_name="$*"
  printf '\n==> [%s] %s\n' "$suite" "$*"
}

. "$repo/packaging/chroot-lib.sh"
cleanup() {
  [[ -d $root ]] && chroot_kill_inside "$root"
  chroot_unmount "$root" || true
  if [[ $keep == 0 && -d $root ]]; then chroot_remove "$root" && rm -f "$top/prepared"; fi
}
trap cleanup EXIT
# One run at a time on this release's chroot (a second waits): .ci/run's background --prepare and
# its --reuse, or two CI jobs on one machine, never make or remove a tree another is using.
chroot_lock root

# ------------------------------------------------------------------ the release
if [[ ! -x $top/base/usr/bin/apt-get ]]; then
  step "debootstrap --variant=minbase $suite"
  chroot_base
fi

if [[ $reuse == 1 && -f $top/prepared && -d $root ]]; then
  step "The chroot a --prepare made ($(cat "$top/prepared"))"
  chroot_mount "$root"
else
  step "Fresh chroot (a copy of the pristine $suite tree)"
  rm -f "$top/prepared"
  chroot_fresh "$root"
fi
case "${CELLSCOPE_DISTRO_CCACHE:-0}" in
  0) cache_dir="" ;;
  1) cache_dir=$top/ccache ;;
  host) cache_dir=$(ccache -k cache_dir 2>/dev/null || echo "${XDG_CACHE_HOME:-$HOME/.cache}/ccache") ;;
  *) die "CELLSCOPE_DISTRO_CCACHE is 0, 1 or host, not '$CELLSCOPE_DISTRO_CCACHE'" ;;
esac
if [[ -n $cache_dir ]]; then
  mkdir -p "$cache_dir" "$root/root/.ccache"
  mount --bind "$cache_dir" "$root/root/.ccache"
  chroot_mounted+=("$root/root/.ccache")
  chroot_env+=(CCACHE_DIR=/root/.ccache)
fi
# CCACHE_DISABLE=1 (a cold build) holds in the chroot too.
[[ -n "${CCACHE_DISABLE:-}" ]] && chroot_env+=("CCACHE_DISABLE=$CCACHE_DISABLE")

step "Copy of the checkout (tracked and untracked, not ignored files)"
# The corpora a --prepare fetched stay (datasets/fetch.sh's cache); the sources are copied anew.
if [[ -d $root/src/cellscope/.cache ]]; then mv "$root/src/cellscope/.cache" "$root/src/cellscope-cache"; fi
rm -rf "$root/src/cellscope"
mkdir -p "$root/src/cellscope"
if [[ -d $root/src/cellscope-cache ]]; then mv "$root/src/cellscope-cache" "$root/src/cellscope/.cache"; fi
(cd "$repo" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$root/src/cellscope"
echo "    $(du -sh "$root/src/cellscope" | cut -f1) in /src/cellscope"

setup_env=()
case $mode in
  core) setup_env+=(CELLSCOPE_GUI=0 CELLSCOPE_SANITIZE_STAGE=0 CELLSCOPE_APT_RECOMMENDS=0) ;;
  sanitize) setup_env+=(CELLSCOPE_GUI=0 CELLSCOPE_MAIN_STAGE=0 CELLSCOPE_APT_RECOMMENDS=0) ;;
esac
# shellcheck disable=SC2206
setup_env+=(${CELLSCOPE_DISTRO_SETUP_ENV:-})
action=test
[[ $prepare == 1 ]] && action=fetch
box=()
[[ -n "${CELLSCOPE_DISTRO_TIMEOUT:-}" ]] && box=(timeout --kill-after=30 "$CELLSCOPE_DISTRO_TIMEOUT")
step "bash packaging/setup.sh $action${setup_env[*]:+ (${setup_env[*]})}${box[*]:+, time box ${CELLSCOPE_DISTRO_TIMEOUT} s}"
set +e
"${box[@]}" chroot "$root" /usr/bin/env -i "${chroot_env[@]}" "${setup_env[@]}" bash -c 'cd /src/cellscope && . /etc/os-release &&
  echo "    $PRETTY_NAME, $(nproc) cores" && bash packaging/setup.sh '"$action" 2>&1 | tee "$top/setup.log"
rc=${PIPESTATUS[0]}
set -e
if [[ ${#box[@]} -gt 0 && ($rc -eq 124 || $rc -eq 137) ]]; then
  echo "test-distro.sh: the time box of ${CELLSCOPE_DISTRO_TIMEOUT} s ran out in setup.sh $action (last step: $(grep '^==> ' "$top/setup.log" | tail -1))" >&2
fi
if [[ $prepare == 1 && $rc -eq 0 ]]; then
  echo "$suite, mode $mode, prepared $(date -u +%FT%TZ)" >"$top/prepared"
fi
if [[ $package == 1 && $rc -eq 0 ]]; then
  step "The .deb (cpack in the chroot), installed in a fresh $suite chroot (test-install.sh --deb)"
  rm -rf "$root/src/pkg"
  chroot "$root" /usr/bin/env -i "${chroot_env[@]}" bash -c 'cd /src/cellscope &&
    cmake --build build --target cellscope cellscope-cli cellscope_packaging_files >/dev/null &&
    cpack --config build/CPackConfig.cmake -G DEB -B /src/pkg >/src/pkg.log 2>&1' ||
    { cat "$root/src/pkg.log" 2>/dev/null; rc=1; }
  if [[ $rc -eq 0 ]]; then
    mkdir -p "$top/out"
    deb=$(ls "$root"/src/pkg/cellscope_*_amd64.deb)
    cp "$deb" "$top/out/"
    bash "$repo/packaging/test-install.sh" --suite "$suite" --deb "$top/out/$(basename "$deb")" 2>&1 | tee "$top/install.log"
    rc=${PIPESTATUS[0]}
  fi
fi
step_done
echo
echo "==> [$suite] times"
printf '    %s\n' "${times[@]}"
d=$(($(ms) - t0))
printf '    %-44s %7d.%01d s\n' "total" $((d / 1000)) $((d % 1000 / 100))
grep -E '^==> |^ +\([0-9.]+s\)$|tests passed|tests failed' "$top/setup.log" | sed 's/^/    setup.sh: /' || true
[[ $package == 1 && -f $top/install.log ]] && { grep -E '^\[(ok|FAIL)\]|^screenshot|^test-install' "$top/install.log" | sed 's/^/    test-install.sh: /' || true; }
if [[ $rc -eq 0 ]]; then echo "test-distro: PASS ($suite, setup.sh $action${setup_env[*]:+, ${setup_env[*]}})"; else
  echo "test-distro: FAIL ($suite, setup.sh exit $rc; log: $top/setup.log)"
fi
exit $rc
