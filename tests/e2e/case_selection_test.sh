#!/bin/bash
# `--case NAME` of the e2e suites (lib.sh), checked without root and without a network: every suite names its
# cases, no name twice; an unknown name, a missing one or another argument is a usage error (exit 2) before
# any set-up, and the unknown name's message lists the suite's cases.
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
