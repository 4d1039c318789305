#!/bin/bash
# Runs every case of the named e2e suites alone (test_NAME.sh LOADER --case CASE, one sandbox per case), the
# check that no case depends on another having run before it unless its entry in the suite's case list says
# so (lib.sh, "The case list"): a case runs with only what its entry needs. A walk's step runs the walk up to it.
#
#   usage: tests/e2e/each_case.sh [--jobs N] [--list] PATH/TO/bpfnet-loader [SUITE[:CASE,...|:-CASE,...]]...   (as root)
#          SUITE is steering, pxe, ... (tests/e2e/test_SUITE.sh); none given: every suite. SUITE:CASE,...
#          runs those cases; SUITE:-CASE,... every case of the suite but those (each must exist)
#          --jobs N: N cases at a time (default 1), each in its own sandbox. A case alone spends most of its
#          time waiting (servers, the loader, timeouts): 3 at a time cost little more CPU than one.
#          --list: prints the cases selected ("SUITE CASE" lines) and runs nothing (no root needed).
#   env:   anything the suites read (E2E_VLAN, E2E_LAN_SHAPE, ...)
#
# Prints one line per case (ok / not ok / skipped with the time taken), and the output of each failed case as
# TAP comments; the failed runs' output is also kept in the directory printed at the end. Exit 1 when a case
# failed alone (or nothing ran), 77 when every case was skipped.
set -uo pipefail

dir=$(cd "$(dirname "$0")" && pwd)
jobs=1
list_only=0
while [ $# -gt 0 ]; do
    case $1 in
    --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
    --list) list_only=1; shift ;;
    *) break ;;
    esac
done
loader=${1:?usage: each_case.sh [--jobs N] [--list] PATH/TO/bpfnet-loader [SUITE[:CASE,...|:-CASE,...]]...}
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

# one SUITE CASE: runs the case alone; its verdict line in $out/SUITE-CASE.verdict, its output in .log.
one() {
    local suite=$1 case=$2 started rc took log=$out/$1-$2.log verdict
    started=$(date +%s)
    bash "$dir/test_$suite.sh" "$loader" --case "$case" >"$log" 2>&1
    rc=$?
    took=$(($(date +%s) - started))
    case $rc in
    0) verdict="ok - $suite --case $case (${took} s)" ;;
    77) verdict="skipped - $suite --case $case: $(tail -n 1 "$log")" ;;
    *) verdict="not ok - $suite --case $case (exit $rc, ${took} s): $(grep -m1 '^not ok' "$log" || tail -n 1 "$log")" ;;
    esac
    echo "$verdict" >"$out/$suite-$case.verdict"
    echo "$verdict"
    if [[ $verdict == "not ok"* ]]; then
        sed 's/^/#   /' "$log"
    else
        rm -f "$log"
    fi
}

runs=()
for spec in "${suites[@]}"; do
    suite=${spec%%:*}
    [ -f "$dir/test_$suite.sh" ] || { echo "each_case: no suite $suite ($dir/test_$suite.sh)" >&2; exit 2; }
    if [[ $spec == *:-* ]]; then
        # Every case but these: a case added to the suite later runs here unless it is named.
        IFS=, read -ra left_out <<<"${spec#*:-}"
        mapfile -t cases < <(cases_of "$suite")
        for out_case in "${left_out[@]}"; do
            printf '%s\n' "${cases[@]}" | grep -qx -- "$out_case" ||
                { echo "each_case: $suite has no case $out_case to leave out" >&2; exit 2; }
        done
        mapfile -t cases < <(printf '%s\n' "${cases[@]}" | grep -vxF -f <(printf '%s\n' "${left_out[@]}"))
    elif [[ $spec == *:* ]]; then
        IFS=, read -ra cases <<<"${spec#*:}"
    else
        mapfile -t cases < <(cases_of "$suite")
    fi
    for case in "${cases[@]}"; do
        runs+=("$suite $case")
    done
done

if [ "$list_only" = 1 ]; then
    rmdir "$out"
    printf '%s\n' "${runs[@]}"
    exit 0
fi

running=0
for run in "${runs[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
    # shellcheck disable=SC2086 # SUITE CASE
    one $run &
    running=$((running + 1))
done
wait

passed=$(cat "$out"/*.verdict 2>/dev/null | grep -c '^ok - ')
failed=$(cat "$out"/*.verdict 2>/dev/null | grep -c '^not ok - ')
echo "$passed passed alone, $failed failed (logs of failures: $out)"
[ "$failed" = 0 ] || exit 1
[ "$passed" -gt 0 ] && exit 0
# Nothing passed: every case skipped (77, as the suite itself is: the kernel lacks something), or none ran.
grep -q '^skipped' "$out"/*.verdict 2>/dev/null && exit 77
exit 1
