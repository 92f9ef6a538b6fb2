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

# not_offered WORD LINE...: WORD is not among the completions of LINE.
not_offered() {
  local w=$1 x
  shift
  checks=$((checks + 1))
  complete_in_shell "$@"
  for x in "${COMPREPLY[@]}"; do [[ $x == "$w" ]] && bad "'$w' offered for: ${*:2}"; done
  return 0
}

# Options the help texts name in their prose or examples that are not this program's: torchrun's
# (train's launcher row: --redirects, --tee, --no_python, read as --no), sbatch's --array (sweep),
# tensorboard's --logdir and wandb's --sync-tensorboard (export tensorboard), and cloze scores'
# --split and --out in cloze rerank's description of its input files, train's --resume and
# --run-dir in status's advice, export's --out in import's.
foreign() {
  case " $1 $2 " in
    *" --redirects "* | *" --tee "* | *" --no "* | *" --array "* | *" --logdir "* | *" --sync-tensorboard "*) return 0 ;;
  esac
  [[ $3 == "cloze rerank" && ($1 == --split || $1 == --out) ]] && return 0
  [[ $3 == status && ($1 == --resume || $1 == --run-dir) ]] && return 0
  [[ $3 == import && $1 == --out ]]
}

# Every option of every command's help, and of each subcommand's ("cellscope-cli CMD SUB" in its
# usage), but for the foreign ones above, which must not be offered.
for c in "${commands[@]}"; do
  _cellscope_cli_load "$cli" "$c" --help
  help=$(_cellscope_cli_run "$cli" "$c" --help)
  for o in $(grep -oE -- '--[a-z][a-z0-9-]*' <<<"$help" | sort -u) -h --help; do
    if foreign "$o" "" "$c"; then not_offered "$o" "$cli" "$c" -; else offered "$o" "$cli" "$c" -; fi
  done
  for s in $(sed -nE "s/.*cellscope-cli $c ([a-z][a-z0-9-]*)( .*|$)/\1/p" <<<"$help" | sort -u); do
    offered "$s" "$cli" "$c" ""
    _cellscope_cli_load "$cli" "$c" "$s" --help
    for o in $(_cellscope_cli_run "$cli" "$c" "$s" --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u) -h; do
      if foreign "$o" "" "$c $s"; then not_offered "$o" "$cli" "$c" "$s" -; else offered "$o" "$cli" "$c" "$s" -; fi
    done
  done
done
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
