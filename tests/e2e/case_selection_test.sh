#!/bin/bash
# `--case NAME` of the e2e suites (lib.sh), checked without root and without a network: every suite names its
# cases, no name twice; every case_needs names one of the suite's case functions; an unknown name, a missing one
# or another argument is a usage error (exit 2) before any set-up, and the unknown name's message lists the
# suite's cases.
#
#   usage: case_selection_test.sh PATH/TO/bpfnet-loader
set -uo pipefail

dir=$(cd "$(dirname "$0")" && pwd)
loader=${1:?usage: case_selection_test.sh PATH/TO/bpfnet-loader}
failed=0
fail() {
    echo "not ok - $*"
    failed=$((failed + 1))
}

for script in "$dir"/test_*.sh; do
    suite=$(basename "$script")
    cases=$(bash -c 'source "$1/lib.sh"; suite_cases' "$script" "$dir")
    [ -n "$cases" ] || fail "$suite names no case"
    dup=$(sort <<<"$cases" | uniq -d)
    [ -z "$dup" ] || fail "$suite names a case twice: $dup"
done

# case_needs: every call, in the suite or a file it sources, names by a literal a case function defined there
# (not lib.sh's helpers) whose key is one of the suite's cases. case_needs runs its argument as a command, so a
# name without its case_ prefix passes in a full run (the case has run: case_ran) and fails only when --case
# selects the dependent case alone. Every occurrence outside a comment counts: a call this cannot read fails.
for script in "$dir"/test_*.sh; do
    suite=$(basename "$script")
    mapfile -t files < <(bash -c 'source "$1/lib.sh"; suite_files' "$script" "$dir")
    keys=" $(bash -c 'source "$1/lib.sh"; suite_cases' "$script" "$dir" | tr '\n' ' ')"
    defined=" $(sed -n 's/^\([a-z_][a-z0-9_]*\)() {.*/\1/p' "${files[@]}" | tr '\n' ' ')"
    while IFS=: read -r file line text; do
        code=${text%%[[:space:]]#*} # a trailing comment
        [[ $code =~ ^[[:space:]]*# ]] && continue
        rest=$code
        while [[ $rest =~ (^|[^a-z_])case_needs([^a-z0-9_].*|$) ]]; do
            rest=${BASH_REMATCH[2]}
            where="$suite:$line"
            [ "$file" = "$script" ] || where="$suite (in $(basename "$file"):$line)"
            if ! [[ $rest =~ ^[[:space:]]+([a-z_][a-z0-9_]*)([[:space:]]|$) ]]; then
                fail "$where: case_needs without a literal case function: $code"
                continue
            fi
            needed=${BASH_REMATCH[1]}
            [[ $needed =~ ^(case|walk)_ ]] && [[ $defined == *" $needed "* ]] ||
                fail "$where: case_needs $needed: no case_ or walk_ function of that name in the suite"
            key=${needed#case_}
            key=${key#walk_}
            [[ $keys == *" $key "* ]] || fail "$where: case_needs $needed: '$key' is not one of its cases"
        done
    done < <(grep -Hn 'case_needs' "${files[@]}")
done

# Unknown name: exit 2 and the list, before anything else happens (no sandbox, so no root needed).
out=$(bash "$dir/test_steering.sh" "$loader" --case no_such_case 2>&1)
rc=$?
[ "$rc" = 2 ] || fail "--case no_such_case: exit $rc, want 2"
[[ $out == *"no case named 'no_such_case'"*" bad_config "*" teardown"* ]] || fail "--case no_such_case said: $out"
# One unknown name among known ones is still refused.
bash "$dir/test_pxe.sh" "$loader" --case udhcpc,nope >/dev/null 2>&1
rc=$?
[ "$rc" = 2 ] || fail "--case udhcpc,nope: exit $rc, want 2"
bash "$dir/test_steering.sh" "$loader" --case >/dev/null 2>&1
rc=$?
[ "$rc" = 2 ] || fail "--case without a name: exit $rc, want 2"
bash "$dir/test_steering.sh" "$loader" --bogus >/dev/null 2>&1
rc=$?
[ "$rc" = 2 ] || fail "an unknown argument: exit $rc, want 2"

[ "$failed" = 0 ] && echo "ok - case selection"
[ "$failed" = 0 ]
