#!/usr/bin/env bash
# packaging/chroot-lib.sh's chroot_remove deletes a chroot tree and never what is mounted in it:
# a tree with the "host's" folder bound into it (as /dev and the compiler cache are), a tmpfs
# with a second one stacked on it, and a space in its path (mountinfo writes it \040) is removed,
# and the bound folder's file survives; a tree whose mount cannot be undone is refused. Needs root
# and mounts (CI has both); elsewhere it is skipped (exit 77).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ $EUID -eq 0 ]] || { echo "not root: skipped"; exit 77; }
work=$(mktemp -d -t "cellscope chroot.XXXXXX")
fail() { echo "FAIL: $*" >&2; exit 1; }
die() { echo "die: $*" >&2; return 1; }
top=$work/top
root=$top/root
mkdir -p "$work/host" "$root/dev" "$root/root/.ccache" "$root/tmp"
echo keep >"$work/host/canary"
cleanup() {
  local m
  for m in "$root/tmp" "$root/tmp" "$root/root/.ccache" "$root/dev"; do command umount -l "$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
if ! mount -t tmpfs none "$root/tmp" 2>/dev/null; then echo "this machine may not mount: skipped"; exit 77; fi
mount --bind "$work/host" "$root/dev"
mount --bind "$work/host" "$root/root/.ccache"
mount -t tmpfs none "$root/tmp"  # stacked on the first
. "$repo/packaging/chroot-lib.sh"

[[ $(chroot_mounts_under "$root" | wc -l) -eq 3 ]] || fail "chroot_mounts_under: $(chroot_mounts_under "$root" | tr '\n' ' ')"
[[ $(chroot_mounts_under "$root" | head -1) == "$root/tmp" ]] || fail "deepest first: $(chroot_mounts_under "$root" | head -1)"
chroot_remove "$root"
[[ -e $root ]] && fail "the tree is still there"
[[ -f $work/host/canary ]] || fail "the bound folder's file was deleted through the tree"
[[ -z $(chroot_mounts_under "$top") ]] || fail "mounts left: $(chroot_mounts_under "$top")"

# A mount that stays (umount is made to fail): the tree is left as it is and chroot_remove fails.
mkdir -p "$root/dev"
mount --bind "$work/host" "$root/dev"
umount() { return 1; }
if (chroot_remove "$root") 2>"$work/err"; then fail "removed a tree with a mount that stayed"; fi
unset -f umount
grep -q "still mounted under" "$work/err" || fail "no message naming the mount: $(cat "$work/err")"
[[ -f $root/dev/canary && -f $work/host/canary ]] || fail "something was deleted through the mount"
echo "chroot_remove: ok"
