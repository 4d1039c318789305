#!/bin/bash
# Runs every case of the named e2e suites alone (test_NAME.sh LOADER --case CASE, one sandbox per case), the
# check that no case depends on another having run before it unless its entry in the suite's case list says
# so (lib.sh, "The case list"): a case runs with only what its entry needs. A walk's step runs the walk up to it.
#
#   usage: tests/e2e/each_case.sh PATH/TO/bpfnet-loader [SUITE[:CASE,...]]...   (as root)
#          SUITE is steering, pxe, ... (tests/e2e/test_SUITE.sh); none given: every suite
#   env:   anything the suites read (E2E_VLAN, E2E_LAN_SHAPE, ...)
#
# Prints one line per case (ok / not ok / skipped with the time taken); the failed runs' output is kept in
# the directory printed at the end. Exit 1 when a case failed alone.
set -uo pipefail

dir=$(cd "$(dirname "$0")" && pwd)
loader=${1:?usage: each_case.sh PATH/TO/bpfnet-loader [SUITE[:CASE,...]]...}
shift
suites=("$@")
if [ ${#suites[@]} = 0 ]; then
    for script in "$dir"/test_*.sh; do
        name=${script##*/test_}
        suites+=("${name%.sh}")
    done
fi

# The cases of a suite's case list (test_SUITE.sh --list), a walk's steps included.
cases_of() {
    bash "$dir/test_$1.sh" --list | awk -F'\t' '$1 != "fixture" { print $2 }'
}

out=$(mktemp -d /tmp/bpfnet-each-case.XXXXXX)
failed=0
passed=0
for spec in "${suites[@]}"; do
    suite=${spec%%:*}
    [ -f "$dir/test_$suite.sh" ] || { echo "each_case: no suite $suite ($dir/test_$suite.sh)" >&2; exit 2; }
    if [[ $spec == *:* ]]; then
        IFS=, read -ra cases <<<"${spec#*:}"
    else
        mapfile -t cases < <(cases_of "$suite")
    fi
    for case in "${cases[@]}"; do
        started=$(date +%s)
        log=$out/$suite-$case.log
        bash "$dir/test_$suite.sh" "$loader" --case "$case" >"$log" 2>&1
        rc=$?
        took=$(($(date +%s) - started))
        case $rc in
        0)
            echo "ok - $suite --case $case (${took} s)"
            passed=$((passed + 1))
            rm -f "$log"
            ;;
        77) echo "skipped - $suite --case $case: $(tail -n 1 "$log")" ;;
        *)
            echo "not ok - $suite --case $case (exit $rc, ${took} s): $(grep -m1 '^not ok' "$log" || tail -n 1 "$log")"
            failed=$((failed + 1))
            ;;
        esac
    done
done
echo "$passed passed alone, $failed failed (logs of failures: $out)"
[ "$failed" = 0 ]
