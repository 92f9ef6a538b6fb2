#!/usr/bin/env bash
# Every C++ file of the checkout is formatted as .clang-format says (tests/README.md, "Rules a
# machine checks"). The style is pinned to one clang-format major version (CELLSCOPE_CLANG_FORMAT_MAJOR
# in tests/CMakeLists.txt): another version formats some constructs differently, so the test is
# registered only where that version is installed (Debian 12's clang-format, what CI runs).
#
# usage: check_format.sh CLANG_FORMAT SOURCE_DIR
#   exit 0 every file formatted, 1 a file that is not (each named, with the command that fixes it)
# Before the tree, it checks itself: a made-up file that is not formatted must be found.
set -euo pipefail
cf=${1:?usage: check_format.sh CLANG_FORMAT SOURCE_DIR}
src=${2:?usage: check_format.sh CLANG_FORMAT SOURCE_DIR}
cd "$src"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp .clang-format "$tmp/"
printf 'int  f( int x ){return x;}\n' >"$tmp/bad.cpp"
if "$cf" --dry-run -Werror --style=file "$tmp/bad.cpp" >/dev/null 2>&1; then
  echo "check_format.sh: $cf did not flag an unformatted file: this checker cannot be trusted" >&2
  exit 1
fi

# The tracked C++ files (a checkout without git metadata, as a source tarball: every such file).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.cpp' '*.h' '*.hpp' '*.cc' '*.cxx')
else
  mapfile -t files < <(find . -path ./build -prune -o -type f \( -name '*.cpp' -o -name '*.h' \) -print | sed 's|^\./||' | sort)
fi
bad=()
for f in "${files[@]}"; do
  [[ -f $f ]] || continue  # deleted in the work tree, not yet in the index
  "$cf" --dry-run -Werror --style=file "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  printf '%s: not formatted as .clang-format says\n' "${bad[@]}" >&2
  echo "check_format.sh: ${#bad[@]} of ${#files[@]} files; fix with: $cf -i --style=file FILE (or git clang-format)" >&2
  exit 1
fi
echo "check_format.sh: ${#files[@]} files formatted ($("$cf" --version))"
