#!/usr/bin/env bash
# End-to-end test of the Debian package: build it, check it with lintian, install it with apt
# into a fresh chroot of the release it was built on (debootstrap), and there run
# `cellscope-cli info`, a tiny `cellscope-cli train`, the not-fetched message, and the GUI
# under Xvfb (screenshot with xwd).
#
#   sudo bash packaging/test-install.sh [BUILD_DIR]          the package of this machine's build
#   sudo bash packaging/test-install.sh --suite trixie --deb FILE
#                                                           a package built elsewhere (test-distro.sh
#                                                           --package builds one in a chroot of that
#                                                           release and calls this)
#
# The release is this machine's (bookworm or trixie, from /etc/os-release) unless --suite names
# it: a package is tested on the release it was built on, as its Depends name that release's
# library versions. Needs root (chroot, mounts), debootstrap and the network to a Debian mirror.
# The chroot is made as test-distro.sh makes its own (packaging/chroot-lib.sh): the pristine
# debootstrap tree of each release and the downloaded .debs are kept in
# $CELLSCOPE_TEST_DIR/<release> (default /var/tmp/cellscope-distro) and the installed system is
# fresh every time. Output (package, lintian report, screenshot, logs) goes to
# $CELLSCOPE_TEST_DIR/<release>/install-out.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="" deb="" suite=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --suite) suite=${2:-}; shift 2 ;;
    --deb) deb=${2:-}; shift 2 ;;
    -*) echo "test-install.sh: unknown option '$1'" >&2; exit 2 ;;
    *) build=$1; shift ;;
  esac
done
if [[ -z $suite ]]; then
  suite=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
fi
case "$suite" in
  bookworm | trixie) ;;
  *) echo "test-install.sh: release '${suite:-unknown}' is not supported (bookworm or trixie; --suite names one)" >&2; exit 2 ;;
esac
top=${CELLSCOPE_TEST_DIR:-/var/tmp/cellscope-distro}/$suite
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
out=$top/install-out
root=$top/install-root
user=tester

say() { printf '\n==> %s\n' "$*"; }
die() { echo "test-install.sh: $*" >&2; exit 1; }
[[ $EUID -eq 0 ]] || die "run as root (chroot, mounts)"
for t in dpkg-deb debootstrap; do command -v $t >/dev/null || die "'$t' is missing (apt-get install dpkg debootstrap)"; done

# ------------------------------------------------------------------ package
mkdir -p "$top"
rm -rf "$out"
mkdir -p "$out/pkg"
if [[ -n $deb ]]; then
  [[ -s $deb ]] || die "no package at '$deb'"
  cp "$deb" "$out/pkg/"
  deb=$out/pkg/$(basename "$deb")
  echo "package: $deb ($(du -h "$deb" | cut -f1))"
else
  command -v cpack >/dev/null || die "'cpack' is missing (apt-get install cmake)"
  build=$(cd "${build:-$repo/build}" && pwd)
  say "Building the programs and the package files in $build"
  cmake --build "$build" --target cellscope cellscope-cli cellscope_packaging_files
  cpack --config "$build/CPackConfig.cmake" -G DEB -B "$out/pkg" >"$out/cpack.log" 2>&1 || { cat "$out/cpack.log"; die "cpack failed"; }
  deb=$(ls "$out"/pkg/cellscope_*_amd64.deb)
  echo "package: $deb ($(du -h "$deb" | cut -f1))"
fi
dpkg-deb -f "$deb" Package Version Depends Recommends

if command -v lintian >/dev/null; then
  say "lintian"
  set +e
  lintian --info --fail-on error "$deb" | tee "$out/lintian.txt"
  lrc=${PIPESTATUS[0]}
  set -e
  echo "lintian: $(grep -c '^E:' "$out/lintian.txt" || true) error(s), $(grep -c '^W:' "$out/lintian.txt" || true) warning(s) (exit $lrc)"
  [[ $lrc -eq 0 ]] || die "lintian reports errors"
else
  echo "lintian not installed: skipped (apt-get install lintian)"
fi

# ------------------------------------------------------------------- chroot
. "$repo/packaging/chroot-lib.sh"
trap 'chroot_kill_inside "$root"; chroot_unmount "$root"' EXIT
chroot_lock install-root
if [[ ! -x $top/base/usr/bin/apt-get ]]; then
  say "debootstrap $suite (minbase) into $top/base"
  chroot_base
fi
say "Fresh $suite chroot $root (copy of the pristine base)"
chroot_fresh "$root"
in_root() { chroot "$root" /usr/bin/env -i "${chroot_env[@]}" DEBIAN_FRONTEND=noninteractive "$@"; }
as_user() { chroot "$root" /usr/sbin/runuser -u "$user" -- /usr/bin/env -i PATH=/usr/bin:/bin HOME=/home/$user LANG=C.UTF-8 "$@"; }

say "apt-get install ./$(basename "$deb") (and xvfb, xauth, x11-apps, netpbm for the GUI check)"
cp "$deb" "$root/tmp/"
in_root apt-get update -q >"$out/apt.log" 2>&1 || { tail -20 "$out/apt.log"; die "apt-get update failed"; }
# Recommends (nodejs: only for `cellscope-cli fetch`) are left out to keep the chroot small.
if ! in_root apt-get install -y -q --no-install-recommends "/tmp/$(basename "$deb")" xvfb xauth x11-apps netpbm >>"$out/apt.log" 2>&1; then
  tail -30 "$out/apt.log"
  die "apt-get install of the package failed"
fi
grep -E '^(Setting up|Unpacking) cellscope' "$out/apt.log" | head -2
echo "packages in the chroot: $(in_root dpkg-query -W | wc -l)"
in_root useradd -m -s /bin/bash "$user"

fail=0
check() {  # check NAME CMD...: run, show output, record failure
  local name=$1
  shift
  say "$name"
  if "$@"; then echo "[ok] $name"; else echo "[FAIL] $name (exit $?)"; fail=1; fi
}

check "cellscope-cli --version" as_user cellscope-cli --version
check "cellscope-cli info" as_user cellscope-cli info
check "cellscope-cli presets (found under /usr/share/cellscope)" as_user cellscope-cli presets
check "cellscope-cli datasets (manifest and user cache)" as_user cellscope-cli datasets
check "man pages installed" in_root test -s /usr/share/man/man1/cellscope-cli.1.gz -a -s /usr/share/man/man1/cellscope.1.gz

# A tiny corpus copied into the chroot, trained for a few steps.
tiny_text() {
  local i
  for i in $(seq 1 400); do echo "the quick brown fox $i jumps over the lazy dog; call me ishmael."; done
}
tiny_text >"$root/home/$user/tiny.txt"
chroot "$root" chown "$user:$user" "/home/$user/tiny.txt"
check "cellscope-cli train (tiny)" as_user cellscope-cli train quick-gru --set dataset.path=/home/$user/tiny.txt \
  --set model.embed=8 --set model.hidden=16 --set training.batch=4 --set training.bptt=16 \
  --set training.eval_every=10 --set training.log_every=5 --steps 20
check "run stored under ~/.local/share/cellscope/runs" \
  bash -c "ls -d '$root/home/$user/.local/share/cellscope/runs/'*/ && ls '$root/home/$user/.local/share/cellscope/runs/'*/"

# The default corpus is not fetched: the error must say how to fetch it.
say "cellscope-cli train quick-gru without the corpus (expect exit 2 and a fetch hint)"
set +e
msg=$(as_user cellscope-cli train quick-gru --steps 1 2>&1)
rc=$?
set -e
echo "$msg"
if [[ $rc -eq 2 && $msg == *"cellscope-cli fetch"* && $msg == *"/usr/share/cellscope/datasets/fetch.sh"* && $msg == *"/home/$user/.cache/cellscope/datasets"* ]]; then
  echo "[ok] not-fetched message"
else
  echo "[FAIL] not-fetched message (exit $rc)"
  fail=1
fi
say "cellscope-cli fetch without nodejs (expect exit 1 and what is missing)"
set +e
msg=$(as_user cellscope-cli fetch 2>&1)
rc=$?
set -e
echo "$msg"
if [[ $rc -eq 1 && $msg == *"node"* && $msg == *"cellscope-cli fetch"* ]]; then echo "[ok] fetch failure message"; else
  echo "[FAIL] fetch failure message (exit $rc)"
  fail=1
fi

# GUI: start it under Xvfb, screenshot after 5 s, and check it is still alive.
say "cellscope under Xvfb (5 s, screenshot)"
cat >"$root/tmp/gui.sh" <<'EOF'
cellscope >/tmp/gui.log 2>&1 &
pid=$!
sleep 5
xwd -root -silent >/tmp/cellscope.xwd
if kill -0 "$pid" 2>/dev/null; then echo "cellscope alive after 5 s (pid $pid)"; st=0; else echo "cellscope exited early"; st=1; fi
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
cat /tmp/gui.log
exit $st
EOF
chmod 755 "$root/tmp/gui.sh"
if as_user xvfb-run -a -s "-screen 0 1280x800x24" bash /tmp/gui.sh; then
  echo "[ok] GUI stays up"
else
  echo "[FAIL] GUI"
  fail=1
fi
# xwd -> PNG with netpbm inside the chroot (no host tools needed).
if [[ -s $root/tmp/cellscope.xwd ]] && in_root sh -c 'xwdtopnm /tmp/cellscope.xwd 2>/dev/null | pnmtopng >/tmp/cellscope.png' &&
  [[ -s $root/tmp/cellscope.png ]]; then
  cp "$root/tmp/cellscope.png" "$out/cellscope.png"
  echo "screenshot: $out/cellscope.png ($(du -h "$out/cellscope.png" | cut -f1))"
else
  echo "[FAIL] no screenshot"
  fail=1
fi

say "Result"
if [[ $fail -eq 0 ]]; then echo "test-install: PASS ($deb)"; else echo "test-install: FAIL (see above)"; fi
exit $fail
