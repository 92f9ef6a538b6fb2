#!/usr/bin/env bash
# CTest test `completion`: sources packaging/completion/cellscope-cli, completes as bash would
# (COMP_WORDS, COMP_CWORD, then the function; COMPREPLY is checked) and checks that every
# command of `cellscope-cli --help`, every subcommand and every declared option (`help --options`)
# is offered where it belongs, and the presets, paths and option choices; never the options that
# examples and prose in the helps name (torchrun's, sbatch's, tensorboard's).
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

# not_offered WORD LINE...: WORD is not among the completions of LINE.
not_offered() {
  local w=$1 x
  shift
  checks=$((checks + 1))
  complete_in_shell "$@"
  for x in "${COMPREPLY[@]}"; do [[ $x == "$w" ]] && bad "'$w' offered for: ${*:2}"; done
  return 0
}

# The subcommands each command's usage names ("cellscope-cli CMD SUB ...") are offered after it.
for c in "${commands[@]}"; do
  _cellscope_cli_load "$cli" "$c" --help
  for s in $(_cellscope_cli_run "$cli" "$c" --help | sed -nE "s/.*cellscope-cli $c ([a-z][a-z0-9-]*)( .*|$)/\1/p" | sort -u); do
    offered "$s" "$cli" "$c" ""
  done
done

# Every declared option (`help --options`: command path, --name, VALUE; app/cli/options.cpp, the
# parser's own list) is offered after its command and subcommand (bench's modes: after bench), -h
# and --help after every one, and a closed VALUE's choices after the option.
_cellscope_cli_load "$cli" help --options
declared=0
while IFS=$'\t' read -r path name value; do
  read -r -a words <<<"$path"
  line=("$cli" "${words[0]}")
  [[ ${#words[@]} -gt 1 && ${words[1]} != --* ]] && line+=("${words[1]}")
  offered "$name" "${line[@]}" -
  offered --help "${line[@]}" -
  declared=$((declared + 1))
  if [[ $value == *"|"* && $value =~ ^[a-z0-9_.|]+$ ]]; then
    for v in ${value//|/ }; do offered "$v" "${line[@]}" X "$name" ""; done
  fi
done < <(_cellscope_cli_run "$cli" help --options)
((declared >= 150)) || bad "only $declared declared options in '$cli help --options'"
# The options of another command are not offered: sweep slurm's after sweep run, export's after
# export tensorboard.
not_offered --partition "$cli" sweep run --p
not_offered --force "$cli" export tensorboard --f

# The options the issue found offered that do not exist, by name, where their help mentions them.
not_offered --redirects "$cli" train --re
not_offered --tee "$cli" train --t
not_offered --no "$cli" train --n
not_offered --array "$cli" sweep --a
not_offered --logdir "$cli" export tensorboard --l
not_offered --sync-tensorboard "$cli" export tensorboard --s
not_offered --split "$cli" cloze rerank --s
offered --tol "$cli" bench --to

# --set: SECTION.KEY= from `validate --keys`, then the key's values (bash splits the word at "=";
# both forms), never the presets.
offered model.hidden= "$cli" train quick-gru --set model.hid
offered training.lr= "$cli" train quick-gru --set training.l
not_offered quick-gru "$cli" train quick-gru --set ""
not_offered quick-gru "$cli" train quick-gru --set q
offered gru "$cli" train quick-gru --set model.cell = g
offered sat_mzu "$cli" train quick-gru --set model.cell =
offered model.cell=gru "$cli" train quick-gru --set model.cell=g
offered false "$cli" validate quick-gru --set model.layer_norm = f
[[ -z $(complete_line "$cli" train quick-gru --set model.hidden = 5) ]] || bad "values offered for the integer model.hidden"
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
