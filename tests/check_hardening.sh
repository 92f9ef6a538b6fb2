#!/usr/bin/env bash
# ctest `hardening`: the programs the .deb ships are built with Debian's hardening (CMakeLists.txt,
# cellscope_hardening): each ELF file given is position-independent (PIE), has a read-only relocation
# segment (GNU_RELRO) bound at start-up (BIND_NOW), calls the stack protector's __stack_chk_fail and
# uses FORTIFY_SOURCE's checked functions (__*_chk). (#53 item 14: the package had none of the flags.)
#
# usage: check_hardening.sh CXX FILE... [-- FILE...]
# The files after `--` are checked for everything but FORTIFY_SOURCE's functions: a small program whose
# only fortifiable calls are memcpy/memset on pointers whose object size the compiler cannot know (the
# CLI's launcher, the sentencepiece shim) gets no __*_chk call even when compiled with the flag, so
# the binary cannot show it; their flags are the same as the others' (cellscope_hardening).
# CXX compiles two small programs first, one with the flags and one without: the check must pass the
# first and refuse the second, or it proves nothing (a self-test).
set -uo pipefail
cxx=$1
shift
command -v readelf >/dev/null || { echo "check_hardening.sh: readelf is missing (binutils)" >&2; exit 1; }

# Prints what FILE lacks, one line each; returns 1 when it lacks anything. A second argument
# "nofortify" leaves out the FORTIFY_SOURCE check.
lacks() {
  local f=$1 fortify=${2:-fortify} bad=0 dyn
  if ! readelf -hW "$f" 2>/dev/null | grep -Eq 'Type:[[:space:]]+DYN'; then echo "$f: not position-independent (PIE)"; bad=1; fi
  if ! readelf -lW "$f" 2>/dev/null | grep -q 'GNU_RELRO'; then echo "$f: no GNU_RELRO segment (-z relro)"; bad=1; fi
  if ! readelf -dW "$f" 2>/dev/null | grep -Eq 'BIND_NOW|FLAGS_1.*[[:space:]]NOW'; then echo "$f: not bound at start-up (-z now)"; bad=1; fi
  dyn=$(readelf --dyn-syms -W "$f" 2>/dev/null)
  if ! grep -q '__stack_chk_fail' <<<"$dyn"; then echo "$f: no stack protector (__stack_chk_fail)"; bad=1; fi
  if [[ $fortify == fortify ]] && ! grep -Eq '__[a-z0-9_]+_chk(@|$| )' <<<"$dyn"; then
    echo "$f: no FORTIFY_SOURCE checked function (__*_chk)"
    bad=1
  fi
  return $bad
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/p.cpp" <<'EOF'
#include <cstdio>
#include <cstring>
int main(int argc, char** argv) {
  char b[64];
  std::strcpy(b, argv[0]);
  std::printf("%s %d\n", b, argc);
  return 0;
}
EOF
"$cxx" -O2 -fPIE -pie -fstack-protector-strong -D_FORTIFY_SOURCE=2 -Wl,-z,relro -Wl,-z,now "$tmp/p.cpp" -o "$tmp/hardened" ||
  { echo "self-test: cannot compile with $cxx" >&2; exit 1; }
"$cxx" -O2 -no-pie -fno-PIE -fno-stack-protector -U_FORTIFY_SOURCE -Wl,-z,norelro -Wl,-z,lazy "$tmp/p.cpp" -o "$tmp/plain" ||
  { echo "self-test: cannot compile with $cxx" >&2; exit 1; }
if ! out=$(lacks "$tmp/hardened"); then echo "self-test: a hardened program was refused:"; echo "$out"; exit 1; fi
if out=$(lacks "$tmp/plain"); then echo "self-test: a program without hardening passed"; exit 1; fi
[[ $(wc -l <<<"$out") -eq 5 ]] || { echo "self-test: expected 5 findings for the plain program, got:"; echo "$out"; exit 1; }

status=0 mode=fortify
for f in "$@"; do
  if [[ $f == -- ]]; then mode=nofortify; continue; fi
  [[ -f $f ]] || { echo "$f: missing"; status=1; continue; }
  if out=$(lacks "$f" $mode); then echo "ok: $f$([[ $mode == nofortify ]] && echo " (FORTIFY_SOURCE not checked)")"; else echo "$out"; status=1; fi
done
exit $status
