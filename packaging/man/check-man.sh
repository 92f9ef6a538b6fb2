#!/usr/bin/env bash
# CTest test `man_page` (and packaging/check-package.sh on the packaged page): the generated
# cellscope-cli.1 names every command of `cellscope-cli --help`, with its own --help text, and
# man renders it without warnings.
#
#   bash packaging/man/check-man.sh CLI PAGE.1[.gz]
set -uo pipefail
cli=${1:?usage: check-man.sh CLI PAGE.1[.gz]}
page=${2:?usage: check-man.sh CLI PAGE.1[.gz]}
fail=0
bad() { echo "FAIL: $*"; fail=1; }
[[ -s $page ]] || { echo "FAIL: no man page $page"; exit 1; }
src=$(zcat -f "$page")
mapfile -t commands < <("$cli" --help | sed -n '/^commands:/,$p' | sed -nE 's/^  ([a-z][a-z0-9-]*)  +[^ ].*/\1/p')
((${#commands[@]} >= 16)) || bad "only ${#commands[@]} commands in '$cli --help'"
for c in "${commands[@]}"; do
  grep -qE "^\.SS \"?$c\"?$" <<<"$src" || bad "no section for the command '$c'"
  # the command's usage line, as roff writes it (help2man and make-man.sh escape - as \-)
  usage=$("$cli" "$c" --help | grep -m1 -oE "usage: cellscope-cli $c( [^ ]+)?" | sed 's/-/\\-/g')
  grep -qF -- "$usage" <<<"$src" || bad "the usage of '$c' is missing"
done
# Every declared option (`help --options`: the parser's own list, app/cli/options.cpp) is in its
# command's section, as roff writes it (\-\-name).
nopts=0
while IFS=$'\t' read -r path name _; do
  nopts=$((nopts + 1))
  # the subcommand's own section where it has one (.SS "sweep run"), else the command's
  c=${path%% --*}
  grep -qE "^\.SS \"?$c\"?$" <<<"$src" || c=${path%% *}
  section=$(sed -n "/^\.SS \"\?$c\"\?\$/,/^\.S[SH] /p" <<<"$src")
  grep -qF -- "${name//-/\\-}" <<<"$section" || bad "the option $name of '$path' is not in the section of '$c'"
done < <("$cli" help --options)
((nopts >= 150)) || bad "only $nopts options in '$cli help --options'"
for s in "EXIT STATUS" FILES ENVIRONMENT EXAMPLES SYNOPSIS "SEE ALSO"; do
  grep -qE "^\.SH \"?$s\"?$" <<<"$src" || bad "no $s section"
done
# Every exit status the program uses (train --help names 75; sweep's 3; a second Ctrl-C 130;
# the launcher's 126/127), each an entry of EXIT STATUS.
for code in 0 1 2 3 75 130; do
  sed -n '/^\.SH "\?EXIT STATUS"\?$/,/^\.SH /p' <<<"$src" | grep -qE "^\.B $code$" || bad "EXIT STATUS does not list $code"
done
# Every variable of the programs' table in docs/ENVIRONMENT.md is an entry of ENVIRONMENT.
env_md="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../../docs/ENVIRONMENT.md"
envsec=$(sed -n '/^\.SH ENVIRONMENT$/,/^\.SH /p' <<<"$src")
nvars=0
while read -r v; do
  nvars=$((nvars + 1))
  grep -qE "^\.B .*\b$v\b" <<<"$envsec" || bad "ENVIRONMENT does not list $v (docs/ENVIRONMENT.md does)"
done < <(awk '/^## The programs/{on=1; next} /^## /{on=0} on && /^\| `/' "$env_md" | cut -d'|' -f2 | grep -oE '[A-Z][A-Z0-9_]{2,}')
((nvars >= 25)) || bad "only $nvars variables read from $env_md"
if command -v man >/dev/null; then
  warn=$(zcat -f "$page" | MANWIDTH=100 man --warnings -l - 2>&1 >/dev/null)
  [[ -z $warn ]] || bad "man --warnings: $warn"
fi
echo "man page: ${#commands[@]} commands checked"
[[ $fail -eq 0 ]] && echo "man page check: PASS"
exit $fail
