#!/bin/bash
# The e2e suites' case lists (lib.sh, "The case list") and `--case KEY`, checked without root and without a
# network: every suite's list is well formed (`--list` exits 0: cases declared, no key twice, every need an
# entry declared before it), every case function a suite defines is in its list (none forgotten), nothing
# calls the old in-body chains (case_needs); an unknown name, a missing one or another argument is a usage
# error (exit 2) before any set-up, and the unknown name's message lists the suite's cases.
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

# Every variant of a suite's list: the family parameters change which steps a walk has.
lists() {
    bash "$1" --list && WALK_FAMILIES="4 6" bash "$1" --list && FIRMWARE_FAMILY=6 bash "$1" --list
}

for script in "$dir"/test_*.sh; do
    suite=$(basename "$script")
    if ! list=$(lists "$script" 2>&1); then
        fail "$suite --list: $list"
        continue
    fi
    keys=" $(awk -F'\t' '$1 != "fixture" { print $2 }' <<<"$list" | tr '\n' ' ')"
    [ -n "${keys// /}" ] || fail "$suite declares no case"
    # The functions its entries run (the third column is the needs, the function is not printed): read the
    # declarations themselves.
    declared=" $(sed -n 's/^ *e2e_\(case\|step\) [a-z0-9_]* \([a-z0-9_]*\) .*/\2/p' "$script" | tr '\n' ' ')"
    while read -r fn; do
        [[ $declared == *" $fn "* ]] || fail "$suite defines $fn, which no entry of its case list runs"
    done < <(sed -n 's/^\(case_[a-z0-9_]*\)() {.*/\1/p' "$script")
    if grep -n '^[^#]*\bcase_needs\b' "$script"; then
        fail "$suite calls case_needs: a case's start state is a need in its case list entry"
    fi
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

# each_case.sh's selections: SUITE:-CASE,... is every case of the suite but those (CI's sanitizer trees split the
# Kubernetes suite so), and leaving out a case the suite does not have is refused before anything runs.
all=$(bash "$dir/each_case.sh" --list "$loader" kubernetes)
but=$(bash "$dir/each_case.sh" --list "$loader" kubernetes:-moves,pivot)
[ "$(grep -c . <<<"$but")" = $(($(grep -c . <<<"$all") - 2)) ] && ! grep -qx 'kubernetes \(moves\|pivot\)' <<<"$but" &&
    grep -qx 'kubernetes serve' <<<"$but" ||
    fail "each_case.sh kubernetes:-moves,pivot selected: $(tr '\n' ',' <<<"$but")"
[ "$(bash "$dir/each_case.sh" --list "$loader" kubernetes:moves,pivot | tr '\n' ,)" = "kubernetes moves,kubernetes pivot," ] ||
    fail "each_case.sh kubernetes:moves,pivot selected otherwise"
bash "$dir/each_case.sh" --list "$loader" kubernetes:-moves,no_such_case >/dev/null 2>&1
rc=$?
[ "$rc" = 2 ] || fail "each_case.sh kubernetes:-moves,no_such_case: exit $rc, want 2"

# A malformed list is refused before anything runs: a need no earlier entry declares, a key twice.
bad=$(mktemp -d /tmp/bpfnet-case-list.XXXXXX)
trap 'rm -rf "$bad"' EXIT
for body in 'e2e_case a case_a "A" nothing_declared' 'e2e_case a case_a "A"; e2e_case a case_b "B"' \
    'e2e_case b case_b "B" case:a; e2e_case a case_a "A"'; do
    printf '#!/bin/bash\nsource "%s/lib.sh"\n%s\nloader_argument "$@"\n' "$dir" "$body" >"$bad/test_bad.sh"
    bash "$bad/test_bad.sh" --list >/dev/null 2>&1
    rc=$?
    [ "$rc" = 2 ] || fail "a case list '$body': --list exit $rc, want 2"
done

[ "$failed" = 0 ] && echo "ok - case selection"
[ "$failed" = 0 ]
