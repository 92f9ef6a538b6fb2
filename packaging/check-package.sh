#!/usr/bin/env bash
# The cheap package check (CTest test `package`): build the .deb with CPack from
# an already built tree, list it (dpkg-deb -c) and check the expected files and
# dependencies are there, run lintian when installed (no errors allowed), and
# run the extracted cellscope-cli to check it finds its data from its own prefix.
#
#   bash packaging/check-package.sh BUILD_DIR [OUT_DIR]
set -euo pipefail

build=$(cd "${1:?usage: check-package.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-$build/package-check}
rm -rf "$out"
mkdir -p "$out"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

cpack --config "$build/CPackConfig.cmake" -G DEB -B "$out" >"$out/cpack.log" 2>&1 || { cat "$out/cpack.log"; exit 1; }
shopt -s nullglob
debs=("$out"/cellscope_*_amd64.deb)
[[ ${#debs[@]} -eq 1 ]] || { ls -l "$out"; echo "FAIL: expected one cellscope_<version>_amd64.deb"; exit 1; }
deb=${debs[0]}
version=$(dpkg-deb -f "$deb" Version)
echo "package: $(basename "$deb") (version $version)"
[[ $(basename "$deb") == "cellscope_${version}_amd64.deb" ]] || bad "file name does not follow cellscope_<version>_amd64.deb"

dpkg-deb -c "$deb" | tee "$out/contents.txt"
has() { grep -qE " \./$1\$" "$out/contents.txt" || bad "missing $1"; }
has_exec() { grep -qE "^-rwxr-xr-x .* \./$1\$" "$out/contents.txt" || bad "missing or not executable: $1"; }
has_exec usr/bin/cellscope-cli
has_exec usr/bin/cellscope-cli-full  # the program the launcher cellscope-cli executes (app/cli/CMakeLists.txt)
has_exec usr/share/cellscope/datasets/fetch.sh
has usr/share/cellscope/presets/quick-gru.json
has usr/share/cellscope/reports/sweep-notes.json
has usr/share/cellscope/datasets/manifest.json
has usr/share/cellscope/ABOUT.md
has usr/lib/python3/dist-packages/cellscope_torch/__init__.py
has usr/lib/python3/dist-packages/cellscope_torch/README.md
has usr/lib/cellscope/libcellscope_spm.so  # SentencePiece, dlopen()ed (core/base/data/SEQ2SEQ_DATA_NOTES.md)
has usr/share/man/man1/cellscope-cli.1.gz
has usr/share/man/man1/cellscope-cli-full.1.gz
has usr/share/bash-completion/completions/cellscope-cli
has usr/share/doc/cellscope/copyright
has usr/share/doc/cellscope/changelog.gz
gui=0
if grep -qE ' \./usr/bin/cellscope$' "$out/contents.txt"; then gui=1; fi
if [[ -f $build/app/gui/cellscope ]]; then
  [[ $gui -eq 1 ]] || bad "the GUI is built but not packaged"
fi
if [[ $gui -eq 1 ]]; then
  has_exec usr/bin/cellscope
  has usr/share/man/man1/cellscope.1.gz
  has usr/share/applications/cellscope.desktop
  has usr/share/metainfo/org.cellscope.Cellscope.metainfo.xml
  has usr/share/icons/hicolor/scalable/apps/cellscope.svg
  for s in 16 22 24 32 48 64 128 256; do has "usr/share/icons/hicolor/${s}x${s}/apps/cellscope.png"; done
fi
grep -q '/usr/local' "$out/contents.txt" && bad "files under /usr/local"

depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
# The packages whose names carry a version are the ones of the libraries the programs were linked
# against on this machine (LibTorch 1.13 / 2.6, ICU 72 / 76 on Debian 12 / 13): asked of dpkg, so a
# package built on one release never names the other's.
versioned=()
for lib in libtorch_cpu.so libicuuc.so; do
  # (awk reads all of ldd's output: an early exit would end ldd with SIGPIPE, which pipefail reports)
  so=$(ldd "$build/app/cli/cellscope-cli-full" | awk -v l="$lib" 'index($1, l) == 1 && !done { print $3; done = 1 }')
  [[ -n $so ]] || { bad "cellscope-cli-full is not linked against $lib"; continue; }
  owner=$(dpkg -S "$(readlink -f "$so")" 2>/dev/null | head -1 | cut -d: -f1)
  [[ -n $owner ]] && versioned+=("$owner") || bad "no package owns $(readlink -f "$so")"
done
for d in "${versioned[@]}" libopenblas0-openmp libgloo0 libsentencepiece0 libpugixml1v5 libstemmer0d python3 libc6 libstdc++6; do
  [[ $depends == *"$d"* ]] || bad "Depends lacks $d"
done
echo "versioned dependencies (from dpkg -S of the linked libraries): ${versioned[*]}"
if [[ $gui -eq 1 ]]; then
  for d in libqt6widgets6 libqt6svg6 libqcustomplot2.1-qt6 qt6-qpa-plugins; do
    [[ $depends == *"$d"* ]] || bad "Depends lacks $d"
  done
fi

# Each package once in Depends (#53: six libraries were named by hand and again by dpkg-shlibdeps).
dups=$(tr ',' '\n' <<<"$depends" | sed -E 's/^ +//; s/[ (].*//' | sort | uniq -d | tr '\n' ' ')
[[ -z $dups ]] || bad "named more than once in Depends: $dups"
# fetch.sh downloads with python3: npm (some 335 node-* packages on plain Debian) is not recommended.
recommends=$(dpkg-deb -f "$deb" Recommends)
[[ ", $recommends," != *", npm,"* ]] || bad "Recommends npm: $recommends"
# Maintainer scripts: py3compile / py3clean for the Python module, and no ldconfig (the only shared object is a
# private dlopen()ed module in /usr/lib/cellscope).
dpkg-deb -e "$deb" "$out/control"
grep -q 'py3compile -p cellscope' "$out/control/postinst" 2>/dev/null || bad "postinst does not byte-compile cellscope_torch"
grep -q 'py3clean -p cellscope' "$out/control/prerm" 2>/dev/null || bad "prerm does not remove cellscope_torch's byte code"
for f in "$out"/control/post* "$out"/control/pre*; do
  [[ -f $f ]] && grep -q ldconfig "$f" && bad "$(basename "$f") calls ldconfig"
done

# The extracted tree must find its presets and manifest from its own prefix and
# keep data in the user's XDG directories, not in the source tree it was built from.
dpkg-deb -x "$deb" "$out/root"
export XDG_CACHE_HOME=$out/xdg-cache XDG_DATA_HOME=$out/xdg-data
unset CELLSCOPE_RESOURCES CELLSCOPE_MANIFEST CELLSCOPE_DATA_DIR CELLSCOPE_FETCH_SCRIPT CELLSCOPE_WORKSPACE
cli=$out/root/usr/bin/cellscope-cli
"$cli" --version | grep -qx "cellscope-cli $version" || bad "--version does not print $version"
# The man page help2man made from this CLI names every command it has (packaging/man/check-man.sh).
bash "$(dirname "${BASH_SOURCE[0]}")/man/check-man.sh" "$cli" "$out/root/usr/share/man/man1/cellscope-cli.1.gz" >"$out/man.txt" 2>&1 ||
  bad "man page: $(grep FAIL "$out/man.txt")"
# Every document the man page names by a source-tree path (the commands' help texts) is in the package:
# /usr/share/doc/cellscope/PATH, or the Python package's own README.
# (A path that is neither installed nor a file of the source tree, such as OUT/report.md, is a file the
# program writes.)
srcroot=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ndocs=0
while read -r doc; do
  case $doc in
    usr/*) f=$doc ;;
    packaging/python/cellscope_torch/*) f=usr/lib/python3/dist-packages/cellscope_torch/${doc#packaging/python/cellscope_torch/} ;;
    datasets/README.md) f=usr/share/cellscope/datasets/README.md ;;
    *) [[ -f $srcroot/$doc ]] || continue
       f=usr/share/doc/cellscope/$doc ;;
  esac
  ndocs=$((ndocs + 1))
  [[ -f $out/root/$f ]] || bad "the man page names $doc, which the package does not ship (as /$f)"
done < <(zcat -f "$out/root/usr/share/man/man1/cellscope-cli.1.gz" | sed 's/\\-/-/g' | grep -oE '[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)+\.md' | sort -u)
((ndocs >= 5)) || bad "only $ndocs documents named in the man page (the help texts name docs/DISTRIBUTED.md and more)"
"$cli" presets >"$out/presets.txt" 2>&1 || bad "cellscope-cli presets failed: $(cat "$out/presets.txt")"
grep -q quick-gru "$out/presets.txt" || bad "cellscope-cli presets does not list quick-gru"
"$cli" datasets >"$out/datasets.txt" 2>&1 || bad "cellscope-cli datasets failed: $(cat "$out/datasets.txt")"
"$cli" datasets --help >>"$out/datasets.txt" 2>&1 # names the manifest and the cache it uses
grep -q "$out/root/usr/share/cellscope/datasets/manifest.json" "$out/datasets.txt" || bad "extracted CLI does not use its own manifest: $(head -3 "$out/datasets.txt")"
grep -q "$XDG_CACHE_HOME/cellscope/datasets" "$out/datasets.txt" || bad "extracted CLI does not use the XDG cache"
"$cli" fetch --dry-run | grep -q "$out/root/usr/share/cellscope/datasets/fetch.sh" || bad "fetch --dry-run does not name the installed fetch.sh"
# The extracted CLI loads its own SentencePiece module (<bin>/../lib/cellscope): a subword
# vocabulary on a two-line parallel fixture.
mkdir -p "$out/par"
for s in train valid test; do printf 'eins zwei drei\nvier fuenf sechs\n' >"$out/par/$s.de"; printf 'one two three\nfour five six\n' >"$out/par/$s.en"; done
"$cli" datasets show "$out/par" --subword 24 >"$out/subword.txt" 2>&1 || bad "datasets show --subword failed: $(cat "$out/subword.txt")"
grep -q "24 pieces" "$out/subword.txt" || bad "no 24-piece subword vocabulary: $(cat "$out/subword.txt")"
set +e
msg=$("$cli" train quick-gru --steps 1 2>&1)
rc=$?
set -e
[[ $rc -eq 2 && $msg == *"cellscope-cli fetch"* && $msg == *"$XDG_CACHE_HOME/cellscope/datasets"* ]] ||
  bad "missing corpus: expected exit 2 and a fetch hint, got $rc: $msg"

if command -v desktop-file-validate >/dev/null && [[ $gui -eq 1 ]]; then
  desktop-file-validate "$out/root/usr/share/applications/cellscope.desktop" || bad "desktop-file-validate"
fi
# AppStream: valid (no error or warning), with a home page, a developer and screenshots (#53).
if [[ $gui -eq 1 ]]; then
  meta=$out/root/usr/share/metainfo/org.cellscope.Cellscope.metainfo.xml
  for tag in '<url type="homepage">' '<developer' '<screenshot type="default">'; do
    grep -q "$tag" "$meta" || bad "the AppStream metadata has no $tag"
  done
  if command -v appstreamcli >/dev/null; then
    appstreamcli validate --no-net "$meta" >"$out/appstream.txt" 2>&1 || bad "appstreamcli validate: $(cat "$out/appstream.txt")"
  fi
fi
if command -v lintian >/dev/null; then
  set +e
  lintian --info --fail-on error "$deb" | tee "$out/lintian.txt"
  lrc=${PIPESTATUS[0]}
  set -e
  echo "lintian: $(grep -c '^E:' "$out/lintian.txt") error(s), $(grep -c '^W:' "$out/lintian.txt") warning(s)"
  [[ $lrc -eq 0 ]] || bad "lintian reports errors"
else
  echo "lintian not installed: lintian check skipped"
fi
[[ $fail -eq 0 ]] && echo "package check: PASS"
exit $fail
