# shellcheck shell=bash
# shellcheck disable=SC2154  # suite, top and mirror are the caller's (below)
# A fresh Debian chroot from a cached debootstrap tree: sourced by test-distro.sh (the README's
# test command in a chroot) and test-install.sh (the .deb installed in a chroot), so that both
# make their systems the same way.
#
# Before sourcing, set:
#   suite   bookworm | trixie
#   top     the release's folder ($CELLSCOPE_TEST_DIR/$suite): base/ (the pristine debootstrap
#           tree, kept between runs), archives/ (downloaded .debs, kept), debootstrap.log
#   mirror  the Debian mirror
# Then:
#   chroot_base          debootstrap $top/base unless it is there (main, updates and security,
#                        as a fresh installation has; dpkg without an fsync per file)
#   chroot_fresh ROOT    ROOT becomes a copy of the pristine tree, mounted (proc, sys, dev,
#                        dev/pts, the .deb cache) and able to reach the network as the host does
#   chroot_kill_inside ROOT  stop the processes still running in ROOT (called on exit)
#   chroot_unmount [ROOT]  undo the mounts, and any left below ROOT (called on exit)
#   chroot_remove ROOT   delete ROOT, never what is mounted in it (the host's /dev, the .deb cache)
#   chroot_lock NAME     hold $top/NAME.lock: runs on the same tree take turns
#   chroot_env           the environment for `chroot ROOT /usr/bin/env -i "${chroot_env[@]}" ...`:
#                        PATH, HOME, LANG, the host's CA bundle (SSL_CERT_FILE, NODE_EXTRA_CA_CERTS:
#                        a chroot does not trust what its host trusts, and npm fails behind a
#                        TLS-inspecting proxy otherwise) and the proxy variables
# The caller's `die` is used for errors.

chroot_mounted=()
chroot_env=()

# chroot_kill_inside ROOT: stop every process whose root is ROOT (a build or a test left running
# when the script was stopped, a daemon a test started), so that nothing keeps writing there
# while the tree is unmounted or removed.
chroot_kill_inside() {
  local root p sig pids
  root=$(readlink -f "$1")
  for sig in TERM KILL; do
    pids=()
    for p in /proc/[0-9]*; do
      [[ "$(readlink "$p/root" 2>/dev/null)" == "$root" ]] && pids+=("${p#/proc/}")
    done
    [[ ${#pids[@]} -eq 0 ]] && return 0
    kill -s $sig "${pids[@]}" 2>/dev/null || true
    sleep 2
  done
}

# chroot_mounts_under ROOT: the mount points at or below ROOT, deepest first (from the kernel's
# table, /proc/self/mountinfo, so that a mount made by a package's script in the chroot, one stacked
# on ours, or one a killed earlier run left counts too; its octal escapes, \040 for a space, decoded)
chroot_mounts_under() {
  local root mp
  root=$(readlink -f "$1")
  while read -r _ _ _ _ mp _; do
    mp=$(printf '%b' "${mp//\\/\\0}")
    if [[ $mp == "$root" || $mp == "$root"/* ]]; then echo "$mp"; fi
  done </proc/self/mountinfo | sort -r -u
}

# chroot_unmount [ROOT]: undo the mounts this script made (last first), then, given ROOT, every
# mount still at or below it, a few passes for stacked ones; fails, naming them, if one stays
chroot_unmount() {
  local i m ms=()
  for ((i = ${#chroot_mounted[@]} - 1; i >= 0; i--)); do umount -l "${chroot_mounted[$i]}" 2>/dev/null || true; done
  chroot_mounted=()
  [[ -n ${1:-} && -e $1 ]] || return 0
  for _ in 1 2 3 4 5; do
    mapfile -t ms < <(chroot_mounts_under "$1")
    [[ ${#ms[@]} -eq 0 ]] && return 0
    for m in "${ms[@]}"; do umount -l "$m" 2>/dev/null || true; done
  done
  mapfile -t ms < <(chroot_mounts_under "$1")
  [[ ${#ms[@]} -eq 0 ]] && return 0
  echo "still mounted under $1: ${ms[*]}" >&2
  return 1
}

# chroot_remove ROOT: delete a chroot tree, never what is mounted in it. A plain `rm -rf` of a tree
# whose /dev is still bound to the host's deletes the host's device nodes (/dev/urandom gone, and
# every program that seeds a generator fails after it) and, through the compiler cache's bind
# mount, the host's cache: so the processes inside are stopped, every mount below ROOT is undone,
# and if one cannot be, ROOT is left as it is and the caller stops, saying so. `--one-file-system`
# is the second guard: rm does not step onto another file system even so.
chroot_remove() {
  local root=$1
  [[ -e $root || -L $root ]] || return 0
  chroot_kill_inside "$root"
  if ! chroot_unmount "$root"; then
    die "not removing $root: file systems are still mounted in it (above); unmount them (umount -l), then run again"
    return 1
  fi
  rm -rf --one-file-system "$root"
}

# chroot_lock NAME: hold $top/NAME.lock (flock) until chroot_unlock NAME or the script's end: two
# runs that would make, use or remove the same tree at once take turns instead
declare -A chroot_lock_fd=()
chroot_lock() {
  local fd
  mkdir -p "$top"
  exec {fd}>"$top/$1.lock"
  if ! flock -n "$fd"; then
    echo "    waiting for another run that holds $top/$1.lock"
    flock "$fd"
  fi
  chroot_lock_fd[$1]=$fd
}
chroot_unlock() {
  local fd=${chroot_lock_fd[$1]:-}
  [[ -n $fd ]] && exec {fd}>&-
  unset "chroot_lock_fd[$1]"
}

chroot_base() {
  chroot_lock base
  if [[ -x $top/base/usr/bin/apt-get ]]; then chroot_unlock base; return 0; fi
  # debootstrap mounts proc and sys in its target: one killed half-way leaves them there
  chroot_remove "$top/base.tmp"
  mkdir -p "$top/archives/partial"
  debootstrap --variant=minbase --cache-dir="$top/archives" "$suite" "$top/base.tmp" "$mirror" >"$top/debootstrap.log" 2>&1 ||
    { tail -20 "$top/debootstrap.log"; die "debootstrap failed ($top/debootstrap.log)"; }
  printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s %s-security main\n' "$mirror" "$suite" "$mirror" "$suite" \
    "${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}" "$suite" >"$top/base.tmp/etc/apt/sources.list"
  rm -f "$top/base.tmp/etc/apt/sources.list.d/debian.sources"
  # A throw-away system, as Debian's own container images are: the install of about 1,200
  # packages takes minutes less.
  echo force-unsafe-io >"$top/base.tmp/etc/dpkg/dpkg.cfg.d/cellscope-unsafe-io"
  mv "$top/base.tmp" "$top/base"
  chroot_unlock base
}

# chroot_mount ROOT: the mounts and the network set-up, on a ROOT that is already there
chroot_mount() {
  local root=$1 m v ca
  for m in proc sys dev dev/pts; do
    mkdir -p "$root/$m"
    case $m in
      proc) mount -t proc proc "$root/proc" ;;
      sys) mount -t sysfs sys "$root/sys" ;;
      *) mount --bind "/$m" "$root/$m" ;;
    esac || die "cannot mount $m in $root: this machine lets root make no chroot (a container without CAP_SYS_ADMIN?)"
    chroot_mounted+=("$root/$m")
  done
  mkdir -p "$top/archives/partial"
  mount --bind "$top/archives" "$root/var/cache/apt/archives"
  chroot_mounted+=("$root/var/cache/apt/archives")
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
  # The chroot shares the host's name (the UTS namespace), which an installed system resolves
  # through /etc/hosts (the installer writes it there; a debootstrap tree has no entry for it):
  # torchrun's standalone rendezvous, for one, listens on that name.
  # (debootstrap's minbase writes no /etc/hosts at all: localhost comes from the installer's too)
  [[ -s $root/etc/hosts ]] || printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
  grep -qwF "$(hostname)" "$root/etc/hosts" || printf '127.0.1.1\t%s\n' "$(hostname)" >>"$root/etc/hosts"
  chroot_env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "CI=${CI:-}")
  ca=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
  if [[ -s $ca ]]; then
    cp -L "$ca" "$root/etc/cellscope-host-ca.crt"
    chroot_env+=(SSL_CERT_FILE=/etc/cellscope-host-ca.crt NODE_EXTRA_CA_CERTS=/etc/cellscope-host-ca.crt)
  fi
  for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
    [[ -n "${!v:-}" ]] && chroot_env+=("$v=${!v}")
  done
  return 0
}

chroot_fresh() {
  local root=$1
  chroot_remove "$root"
  cp -a "$top/base" "$root"
  chroot_mount "$root"
}
