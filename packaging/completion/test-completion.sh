#!/usr/bin/env bash
# CTest test `completion`: sources packaging/completion/cellscope-cli, completes as bash would
# (COMP_WORDS, COMP_CWORD, then the function; COMPREPLY is checked) and checks that every
# command of `cellscope-cli --help` and every --option each command's and subcommand's --help
# lists is offered, and the presets, paths and option choices.
#
#   bash packaging/completion/test-completion.sh CLI
set -uo pipefail
cli=$(realpath "${1:?usage: test-completion.sh CLI}")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=cellscope-cli
source "$here/cellscope-cli"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1  # path completion of "" lists this empty directory only
fail=0
checks=0
bad() { echo "FAIL: $*"; fail=1; }

# Completes the command line "$@" (the cursor in the last word) in this shell, so the
# completion's cache of help texts lasts from one call to the next; COMPREPLY holds the answer.
complete_in_shell() {
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _cellscope_cli
}
complete_line() { complete_in_shell "$@"; printf '%s\n' "${COMPREPLY[@]}"; }
# offered WORD LINE...: WORD is among the completions of LINE.
offered() {
  local w=$1 x
  shift
  checks=$((checks + 1))
  complete_in_shell "$@"
  for x in "${COMPREPLY[@]}"; do [[ $x == "$w" ]] && return 0; done
  bad "'$w' not offered for: ${*:2}"
}

# Help texts are read through the completion's own cache (_cellscope_cli_load, then
# _cellscope_cli_run): each `cellscope-cli ... --help` runs once in this test (each is a process
# that loads LibTorch), for the test's own lists and the completion alike.

# The commands: the rows under "commands:" in the top-level help.
_cellscope_cli_load "$cli" --help
mapfile -t commands < <(_cellscope_cli_run "$cli" --help | sed -n '/^commands:/,$p' | sed -nE 's/^  ([a-z][a-z0-9-]*)  +[^ ].*/\1/p')
((${#commands[@]} >= 16)) || bad "only ${#commands[@]} commands in '$cli --help'"
for c in "${commands[@]}"; do offered "$c" "$cli" ""; done
offered --version "$cli" --v
[[ $(complete_line "$cli" tr) == train ]] || bad "'tr' completes to '$(complete_line "$cli" tr)', not train"

# Every option of every command's help, and of each subcommand's ("cellscope-cli CMD SUB" in its usage).
for c in "${commands[@]}"; do
  _cellscope_cli_load "$cli" "$c" --help
  help=$(_cellscope_cli_run "$cli" "$c" --help)
  for o in $(grep -oE -- '--[a-z][a-z0-9-]*' <<<"$help" | sort -u) -h --help; do offered "$o" "$cli" "$c" -; done
  for s in $(sed -nE "s/.*cellscope-cli $c ([a-z][a-z0-9-]*)( .*|$)/\1/p" <<<"$help" | sort -u); do
    offered "$s" "$cli" "$c" ""
    _cellscope_cli_load "$cli" "$c" "$s" --help
    for o in $(_cellscope_cli_run "$cli" "$c" "$s" --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u) -h; do offered "$o" "$cli" "$c" "$s" -; done
  done
done
# Options of a subcommand's own help that its command's help does not list
offered --no-word-class "$cli" cloze rerank --no
offered --subword-type "$cli" datasets show X --sub

# CONFIG: preset names and paths; paths elsewhere; the choices of --option a|b|c.
offered quick-gru "$cli" train quick-g
offered quick-gru "$cli" validate --json quick-g
mkdir -p "$tmp/runs/run-1"
offered "$tmp/runs/run-1" "$cli" eval "$tmp/runs/ru"
offered "$tmp/runs/run-1" "$cli" generate --run "$tmp/runs/r"
offered test "$cli" eval RUN --split ""
offered valid "$cli" eval RUN --split v
offered tensorboard "$cli" export t
# After "--" nothing is an option.
[[ -z $(complete_line "$cli" validate -- --js) ]] || bad "an option offered after --"

echo "completion: $checks checks, ${#commands[@]} commands"
[[ $fail -eq 0 ]] && echo "completion test: PASS"
exit $fail
