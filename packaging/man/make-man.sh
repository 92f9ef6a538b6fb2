#!/usr/bin/env bash
# cellscope-cli.1 from the program itself (CMake runs this after building cellscope-cli,
# packaging/CMakeLists.txt): help2man turns `cellscope-cli --help` and `--version` into NAME,
# SYNOPSIS, DESCRIPTION and the command list; a COMMANDS section adds every command's and
# subcommand's own --help; ENVIRONMENT comes from docs/ENVIRONMENT.md; cellscope-cli.h2m adds
# what help2man cannot make (EXIT STATUS, FILES, EXAMPLES, SEE ALSO).
#
#   bash packaging/man/make-man.sh CLI OUT.1
set -euo pipefail
cli=${1:?usage: make-man.sh CLI OUT.1}
out=${2:?usage: make-man.sh CLI OUT.1}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v help2man >/dev/null || { echo "make-man.sh: help2man is not installed (Debian: help2man)" >&2; exit 1; }

# The help texts name the data directories: the installed package's, not this build machine's.
export CELLSCOPE_RESOURCES=/usr/share/cellscope
export CELLSCOPE_MANIFEST=/usr/share/cellscope/datasets/manifest.json
export CELLSCOPE_FETCH_SCRIPT=/usr/share/cellscope/datasets/fetch.sh
export CELLSCOPE_DATA_DIR='$XDG_CACHE_HOME/cellscope/datasets'
export CELLSCOPE_WORKSPACE='$XDG_DATA_HOME/cellscope/runs'
export LC_ALL=C.UTF-8

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The commands of the top-level help ("  name   what it does" under "commands:").
commands=$("$cli" --help | awk '/^commands:/{on=1; next} on && /^  [a-z][a-z0-9-]* +[^ ]/{print $1}')
[[ -n $commands ]] || { echo "make-man.sh: no commands in '$cli --help'" >&2; exit 1; }

# roff-safe literal text: backslashes, minus signs (options copy as typed), lines that start with . or '
roff() { sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\([.']\)/\\\\\&\1/"; }

{
  echo "[COMMANDS]"
  echo "Each command's own help (\\fBcellscope\\-cli\\fR \\fIcommand\\fR \\fB\\-\\-help\\fR, or \\fB\\-h\\fR)."
  for c in $commands; do
    help=$("$cli" "$c" --help)
    printf '.SS %s\n.nf\n' "$c"
    printf '%s\n' "$help" | roff
    echo ".fi"
    # Subcommands with a help of their own ("cellscope-cli CMD SUB ..." in the usage lines).
    for s in $(grep -oE "cellscope-cli $c [a-z][a-z0-9-]*( |$)" <<<"$help" | awk '{print $3}' | sort -u); do
      sub=$("$cli" "$c" "$s" --help)
      [[ $sub == "$help" ]] && continue  # the command's help covers it
      printf '.SS "%s %s"\n.nf\n' "$c" "$s"
      printf '%s\n' "$sub" | roff
      echo ".fi"
    done
  done
} >"$tmp/commands.h2m"

# ENVIRONMENT: every variable the programs read, from the table "The programs" of docs/ENVIRONMENT.md
# (each row names the code that reads it), so the page cannot list fewer than the code reads.
env_md="$here/../../docs/ENVIRONMENT.md"
[[ -f $env_md ]] || { echo "make-man.sh: no $env_md" >&2; exit 1; }
{
  echo "[ENVIRONMENT]"
  awk '/^## The programs/{on=1; next} /^## /{on=0} on && /^\| `/' "$env_md" |
    while IFS='|' read -r _ vars default what _; do
      vars=$(tr -d '`' <<<"$vars" | sed 's/^ *//; s/ *$//')
      default=$(tr -d '`' <<<"$default" | sed 's/^ *//; s/ *$//')
      what=$(tr -d '`' <<<"$what" | sed 's/^ *//; s/ *$//')
      printf '.TP\n.B %s\n' "$(roff <<<"$vars")"
      printf '%s (default: %s).\n' "$what" "$default" | roff
    done
  echo ".PP"
  echo "docs/ENVIRONMENT.md (installed in /usr/share/doc/cellscope) also lists the variables of the build and test scripts."
} >"$tmp/environment.h2m"
grep -q '^\.B CELLSCOPE_WORKSPACE$' "$tmp/environment.h2m" || { echo "make-man.sh: no variables read from $env_md" >&2; exit 1; }

# help2man makes SYNOPSIS from a line that starts with "Usage:"; the program writes "usage:".
cat >"$tmp/cellscope-cli" <<WRAP
#!/bin/sh
"$cli" "\$@" | sed '1,/^usage:/s/^usage:/Usage:/'
WRAP
chmod +x "$tmp/cellscope-cli"

help2man --no-info --section=1 --source="Cellscope" --manual="User Commands" \
  --name="train, compare and look inside recurrent cells from the command line" \
  --include="$tmp/commands.h2m" --include="$tmp/environment.h2m" --include="$here/cellscope-cli.h2m" \
  --output="$tmp/page.1" "$tmp/cellscope-cli"
mv "$tmp/page.1" "$out"
