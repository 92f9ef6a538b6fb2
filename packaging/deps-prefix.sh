#!/usr/bin/env bash
# The Debian-only build dependencies of a GUI-less build (the core, cellscope-cli, the core tests),
# unpacked into a folder instead of installed: for a machine that has a LibTorch of its own (a
# PyTorch 2.x install, a CUDA LibTorch) but no Debian package registry, or no root. The folder is
# made on a Debian machine with apt and carried over (docs/BUILD.md, "A GUI-less build against a
# PyTorch LibTorch with libraries from a prefix").
#
#   bash packaging/deps-prefix.sh [--offline] DIR
#
#   DIR          made if missing; the .deb files go to DIR/debs, their contents (usr/...) to DIR
#   --offline    download nothing: unpack the .deb files already in DIR/debs (carried over)
#
# Downloads with `apt-get download` for the running release (Debian 12 or 13; no root needed, but
# the apt lists must be there: `apt-get update` once). The packages: the development packages below
# and the run-time libraries they pin to their own version (libicu-dev -> libicu72 on Debian 12,
# libicu76 on 13), read from the archive, not hard-coded. Prints the CMake options to use.
set -euo pipefail

offline=0
if [[ "${1:-}" == --offline ]]; then
  offline=1
  shift
fi
if [[ $# -ne 1 ]]; then
  echo "usage: bash packaging/deps-prefix.sh [--offline] DIR" >&2
  exit 2
fi
mkdir -p "$1/debs"
dir=$(cd "$1" && pwd)

# What core/, app/cli/ and tests/ find with find_package / find_path / pkg-config.
DEV_PACKAGES=(
  nlohmann-json3-dev    # nlohmann_json (header-only, CMake config)
  libcli11-dev          # CLI11 (header-only): app/cli/args.cpp
  libpugixml-dev        # pugixml (CMake config): the SemEval XML loader
  libsentencepiece-dev  # SentencePiece (pkg-config): the dlopen()ed core/spm_shim module
  libicu-dev            # ICU uc + i18n (CMake's FindICU): the word tokenizer
  libstemmer-dev        # Snowball's libstemmer: ROUGE's Porter stemmer
  libgtest-dev          # GoogleTest (CMake config, static libraries): cellscope_core_tests
)

if [[ $offline == 0 ]]; then
  command -v apt-get > /dev/null || {
    echo "deps-prefix.sh: no apt-get here; download on a Debian machine, or use --offline" >&2
    exit 1
  }
  # The run-time packages: the Depends of each -dev package that are pinned to one exact version
  # ("libicu76 (= 76.1-4)"), i.e. the libraries built from the same source. The unpinned ones
  # (libc6-dev, icu-devtools) are the system's or not needed to build.
  runtime=()
  for p in "${DEV_PACKAGES[@]}"; do
    if ! record=$(apt-cache show --no-all-versions "$p" 2> /dev/null) || [[ -z "$record" ]]; then
      echo "deps-prefix.sh: apt does not know $p (run apt-get update; Debian 12 or 13 expected)" >&2
      exit 1
    fi
    deps=$(sed -n 's/^Depends: //p' <<< "$record")
    while read -r dep; do
      [[ -n "$dep" ]] && runtime+=("$dep")
    done < <(tr ',' '\n' <<< "$deps" | sed -n 's/^ *\([a-z0-9][a-z0-9.+-]*\)\(:[a-z0-9]*\)\? *(= .*/\1/p')
  done
  packages=("${DEV_PACKAGES[@]}" "${runtime[@]}")
  # shellcheck source=/dev/null
  . /etc/os-release 2> /dev/null || true
  echo "deps-prefix.sh: for ${PRETTY_NAME:-this system}: ${packages[*]}"
  rm -f "$dir"/debs/*.deb
  (cd "$dir/debs" && apt-get download -q "${packages[@]}")
fi

shopt -s nullglob
debs=("$dir"/debs/*.deb)
if [[ ${#debs[@]} == 0 ]]; then
  echo "deps-prefix.sh: no .deb files in $dir/debs" >&2
  exit 1
fi
for deb in "${debs[@]}"; do
  dpkg-deb -x "$deb" "$dir"
done

cat << EOF
deps-prefix.sh: ${#debs[@]} packages unpacked into $dir
Configure with (the second entry: the LibTorch of python3's PyTorch; or add -DTorch_DIR=...):

  cmake -S . -B build-nogui -G Ninja -DCMAKE_BUILD_TYPE=Release -DCELLSCOPE_GUI=OFF \\
    -DCMAKE_PREFIX_PATH="$dir/usr;\$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"

The programs find the unpacked libraries through the build tree's RPATH; the libraries need the
glibc and libstdc++ of the release they were downloaded for (or newer).
EOF
