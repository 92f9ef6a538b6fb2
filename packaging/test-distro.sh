#!/usr/bin/env bash
# The README's test command in a fresh Debian chroot of either supported release: a minimal
# debootstrap of bookworm (Debian 12) or trixie (Debian 13), a copy of this checkout in it, and
# `bash packaging/setup.sh test` run there as a new user's root would: it installs the packages,
# fetches the corpora from npm, builds and runs the suite. Each step's time is printed.
#
#   sudo bash packaging/test-distro.sh bookworm|trixie [--core | --sanitize] [--prepare | --reuse] [--keep]
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
#   CELLSCOPE_DISTRO_TIMEOUT=SECONDS  a time box for setup.sh in the chroot (default: none):
#               past it setup.sh is stopped and the run fails, saying so.
#
# Environment:
#   CELLSCOPE_TEST_DIR       where the chroots live (default /var/tmp/cellscope-distro); the
#                            pristine debootstrap tree of each release and the downloaded .debs
#                            are kept there between runs, the installed system never is
#   CELLSCOPE_DISTRO_CCACHE  1: keep a compiler cache per release there too (default 0: a cold build)
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
for a in "$@"; do
  case "$a" in
    --core) mode=core ;;
    --sanitize) mode=sanitize ;;
    --prepare) prepare=1 keep=1 ;;
    --reuse) reuse=1 ;;
    --keep) keep=1 ;;
    *) echo "test-distro.sh: unknown option '$a'" >&2; exit 2 ;;
  esac
done
case "$suite" in
  bookworm | trixie) ;;
  *) echo "usage: sudo bash packaging/test-distro.sh bookworm|trixie [--core | --sanitize] [--prepare | --reuse] [--keep]" >&2; exit 2 ;;
esac
die() { echo "test-distro.sh: $*" >&2; exit 1; }
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

mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
  if [[ $keep == 0 && -d $root ]]; then rm -rf "$root" "$top/prepared"; fi
}
trap cleanup EXIT

# ------------------------------------------------------------------ the release
if [[ ! -x $top/base/usr/bin/apt-get ]]; then
  step "debootstrap --variant=minbase $suite"
  rm -rf "$top/base.tmp"
  mkdir -p "$top/archives/partial"
  debootstrap --variant=minbase --cache-dir="$top/archives" "$suite" "$top/base.tmp" "$mirror" >"$top/debootstrap.log" 2>&1 ||
    { tail -20 "$top/debootstrap.log"; die "debootstrap failed ($top/debootstrap.log)"; }
  # What a fresh installation has: main, updates and security.
  printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s %s-security main\n' "$mirror" "$suite" "$mirror" "$suite" \
    "${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}" "$suite" >"$top/base.tmp/etc/apt/sources.list"
  rm -f "$top/base.tmp/etc/apt/sources.list.d/debian.sources"
  # dpkg without an fsync per file (as Debian's own container images do): a throw-away system,
  # and the install of about 1,200 packages takes minutes less.
  echo force-unsafe-io >"$top/base.tmp/etc/dpkg/dpkg.cfg.d/cellscope-unsafe-io"
  mv "$top/base.tmp" "$top/base"
fi

if [[ $reuse == 1 && -f $top/prepared && -d $root ]]; then
  step "The chroot a --prepare made ($(cat "$top/prepared"))"
else
  step "Fresh chroot (a copy of the pristine $suite tree)"
  rm -rf "$root" "$top/prepared"
  cp -a "$top/base" "$root"
fi
for m in proc sys dev dev/pts; do
  mkdir -p "$root/$m"
  case $m in
    proc) mount -t proc proc "$root/proc" ;;
    sys) mount -t sysfs sys "$root/sys" ;;
    *) mount --bind "/$m" "$root/$m" ;;
  esac || die "cannot mount $m in $root: this machine lets root make no chroot (a container without CAP_SYS_ADMIN?)"
  mounted+=("$root/$m")
done
mkdir -p "$top/archives/partial"
mount --bind "$top/archives" "$root/var/cache/apt/archives"
mounted+=("$root/var/cache/apt/archives")
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
ca=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
chroot_env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 CI=${CI:-})
if [[ -s $ca ]]; then
  cp -L "$ca" "$root/etc/cellscope-host-ca.crt"
  chroot_env+=(SSL_CERT_FILE=/etc/cellscope-host-ca.crt NODE_EXTRA_CA_CERTS=/etc/cellscope-host-ca.crt)
fi
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
  [[ -n "${!v:-}" ]] && chroot_env+=("$v=${!v}")
done
if [[ "${CELLSCOPE_DISTRO_CCACHE:-0}" == 1 ]]; then
  mkdir -p "$top/ccache" "$root/root/.ccache"
  mount --bind "$top/ccache" "$root/root/.ccache"
  mounted+=("$root/root/.ccache")
  chroot_env+=(CCACHE_DIR=/root/.ccache)
fi

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
step_done
echo
echo "==> [$suite] times"
printf '    %s\n' "${times[@]}"
d=$(($(ms) - t0))
printf '    %-44s %7d.%01d s\n' "total" $((d / 1000)) $((d % 1000 / 100))
grep -E '^==> |^ +\([0-9.]+s\)$|tests passed|tests failed' "$top/setup.log" | sed 's/^/    setup.sh: /' || true
if [[ $rc -eq 0 ]]; then echo "test-distro: PASS ($suite, setup.sh $action${setup_env[*]:+, ${setup_env[*]}})"; else
  echo "test-distro: FAIL ($suite, setup.sh exit $rc; log: $top/setup.log)"
fi
exit $rc
