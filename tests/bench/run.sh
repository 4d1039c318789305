#!/usr/bin/env bash
# The benchmarks, with one command: sets the machine up (scripts/setup.sh), builds bpfnet, runs each
# benchmark (each builds its own namespace topology inside its own sandbox and alternates candidate and
# baseline side by side), and writes the report: OUT/report.md for people, OUT/report.json for machines,
# with medians, spread, ratios, versions and machine facts (tests/bench/report.py). Nothing here is a
# pass/fail verdict on a number: the command fails only if a benchmark could not run (the report says which
# and why). Needs root.
#
#   tests/bench/run.sh [--quick] [--only NAME,...] [--out DIR]
#     --quick  fewer rounds and shorter runs (a smoke run of the whole chain; numbers are noisier)
#     --only   run only these benchmarks (names below)
#     --out    where the results and the report go (default ./bench-report-<date>)
#
# Benchmarks:
#   path_cost   ns per packet of every datapath path vs a trivial XDP_PASS / TC_ACT_OK program
#   bulk_tcp    iperf3 both ways and an HTTP image download: bpfnet vs plain routing, nftables DNAT, HAProxy
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
quick=0
only=""
out=""
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1; shift ;;
    --only) only=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--quick] [--only NAME,...] [--out DIR]" >&2; exit 2 ;;
    esac
done
if [ "$(id -u)" -ne 0 ]; then
    echo "bench: run as root (BPF programs and network namespaces need it)" >&2
    exit 2
fi
out=$(realpath -m "${out:-bench-report-$(date -u +%Y%m%d-%H%M)}")
mkdir -p "$out/results" "$out/logs"

"$top/scripts/setup.sh" || exit 2
build=$top/build
cmake -S "$top" -B "$build" -DBPF_CLANG=clang-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
    cmake --build "$build" -j "$(nproc)" >"$out/logs/build.log" 2>&1 || {
    echo "bench: the build failed (log: $out/logs/build.log)" >&2
    exit 2
}

if [ "$quick" = 1 ]; then
    PATH_COST_ARGS=(--rounds 5 --runs 200)
    BULK_ARGS=(3 1)
else
    PATH_COST_ARGS=(--rounds 20 --runs 1000)
    BULK_ARGS=(10 3)
fi

run_path_cost() { "$build/tests/bench/bench_path_cost" "${PATH_COST_ARGS[@]}" --json "$1"; }
run_bulk_tcp() { BUILD=$build BLOB_MIB=$([ "$quick" = 1 ] && echo 128 || echo 512) \
    "$top/tests/bench/bulk_tcp.sh" "${BULK_ARGS[@]}" "$1"; }

BENCHMARKS=(path_cost bulk_tcp)
failed=()
for name in "${BENCHMARKS[@]}"; do
    [ -z "$only" ] || [[ ",$only," == *",$name,"* ]] || continue
    echo "== $name"
    result=$out/results/$name.json
    t0=$(date +%s)
    if "run_$name" "$result" >"$out/logs/$name.log" 2>&1 && [ -s "$result" ]; then
        echo "   done in $(($(date +%s) - t0)) s"
    else
        failed+=("$name")
        reason=$(tail -n 3 "$out/logs/$name.log" | tr '\n' ' ')
        echo "   could not run: $reason (log: $out/logs/$name.log)"
        /usr/bin/python3 -c 'import json, sys; json.dump({"benchmark": sys.argv[1], "error": sys.argv[2], "tables": []}, open(sys.argv[3], "w"))' \
            "$name" "$reason" "$result"
    fi
done

/usr/bin/python3 "$top/tests/bench/report.py" "$out/results" "$out/report" || exit 2
echo "report: $out/report.md (and report.json)"
if [ "${#failed[@]}" != 0 ]; then
    echo "bench: could not run: ${failed[*]}" >&2
    exit 1
fi
