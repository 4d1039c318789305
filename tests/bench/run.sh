#!/usr/bin/env bash
# The benchmarks, with one command: sets the machine up (scripts/setup.sh), builds bpfnet, runs each
# benchmark (each builds its own namespace topology inside its own sandbox and alternates candidate and
# baseline side by side), and writes the report: OUT/report.md for people, OUT/report.json for machines,
# with medians, spread, ratios, versions and machine facts (tests/bench/report.py). Nothing here is a
# pass/fail verdict on a number: the command fails only if a benchmark could not run (the report says which
# and why). Needs root.
#
#   tests/bench/run.sh [--quick] [--only NAME,...] [--out DIR]
#     --quick  fewer rounds and shorter runs, as many benchmarks at once as there are CPUs (a smoke run of the
#              whole chain; its numbers are noisier and never judged)
#     --only   run only these benchmarks (names below)
#     --out    where the results and the report go (default ./bench-report-<date>)
#
# Benchmarks (each script's header says exactly what it measures and how):
#   path_cost    ns per packet of every datapath path vs a trivial XDP_PASS / TC_ACT_OK program
#   packet_rate  64-byte UDP from an in-kernel generator: bpfnet vs nftables DNAT vs plain routing
#   bulk_tcp     iperf3 both ways and an HTTP image download: bpfnet vs plain routing, nftables DNAT, HAProxy
#   latency      TCP and UDP ping-pong p50/p99 (sockperf): bpfnet vs nftables DNAT vs plain routing
#   dhcp_leases  many machines' DHCP exchanges: bpfnet's relay vs dnsmasq's relay vs dnsmasq on the LAN;
#                perfdhcp as a relay on the LAN to the service IP
#   router_solicitations  hosts coming up on an IPv6 LAN: solicitation -> advertisement, link up -> prefix
#                on-link: bpfnet's router advertisements vs dnsmasq's (enable-ra) on the LAN
#   tftp_fetch   a boot image by TFTP (default, blksize, windowsize): bpfnet vs plain routing
#   failover     backend moves by bpfnetctl, config reload and Kubernetes: first answers, longest gaps
#   scale        flows/neighbours tables at 10, 1,000, 100,000 entries: per-packet cost, loader memory
#   k8s_scale    Kubernetes mode with 1,000 and 10,000 Services in the API server: start, memory, changes
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
rm -f "$out"/results/*.json # a reused directory: the report is of this run only

# What the report names as the code measured and when: taken now, before the checkout can move on.
BPFNET_BENCH_COMMIT=$(git -C "$top" describe --always --dirty 2>/dev/null || true)
BPFNET_BENCH_STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')
export BPFNET_BENCH_COMMIT BPFNET_BENCH_STARTED

"$top/scripts/setup.sh" || exit 2
build=$top/build
cmake -S "$top" -B "$build" -DBPF_CLANG=clang-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
    cmake --build "$build" -j "$(nproc)" >"$out/logs/build.log" 2>&1 || {
    echo "bench: the build failed (log: $out/logs/build.log)" >&2
    exit 2
}

# Rounds are the pairs each comparison gets (at least 10 in a full run); --quick only checks the chain.
if [ "$quick" = 1 ]; then
    PATH_COST_ARGS=(--rounds 5 --runs 200)
    PACKET_RATE_ARGS=(3 300000)
    BULK_ARGS=(1 1)
    BLOB_MIB=128
    LATENCY_ARGS=(1 1)
    DHCP_ARGS=(1 1)
    RS_ARGS=(1)
    TFTP_ARGS=(3 2)
    FAILOVER_ARGS=(1)
    SCALE_ARGS=(2)
    K8S_SCALE_ROUNDS=2 K8S_SCALE_SIZES="100:2 1000:10"
else
    PATH_COST_ARGS=(--rounds 20 --runs 1000)
    PACKET_RATE_ARGS=(10 2000000)
    BULK_ARGS=(10 3)
    BLOB_MIB=512
    LATENCY_ARGS=(10 2)
    DHCP_ARGS=(10 2)
    RS_ARGS=(10)
    TFTP_ARGS=(10 8)
    FAILOVER_ARGS=(20)
    SCALE_ARGS=(10)
    K8S_SCALE_ROUNDS=5 K8S_SCALE_SIZES="1000:10 10000:100"
fi
export BUILD=$build

run_path_cost() { "$build/tests/bench/bench_path_cost" "${PATH_COST_ARGS[@]}" --json "$1"; }
run_packet_rate() { "$top/tests/bench/packet_rate.sh" "${PACKET_RATE_ARGS[@]}" "$1"; }
run_bulk_tcp() { BLOB_MIB=$BLOB_MIB "$top/tests/bench/bulk_tcp.sh" "${BULK_ARGS[@]}" "$1"; }
run_latency() { "$top/tests/bench/latency.sh" "${LATENCY_ARGS[@]}" "$1"; }
run_dhcp_leases() { "$top/tests/bench/dhcp_leases.sh" "${DHCP_ARGS[@]}" "$1"; }
run_router_solicitations() { "$top/tests/bench/router_solicitations.sh" "${RS_ARGS[@]}" "$1"; }
run_tftp_fetch() { "$top/tests/bench/tftp_fetch.sh" "${TFTP_ARGS[@]}" "$1"; }
run_failover() { "$top/tests/bench/failover.sh" "${FAILOVER_ARGS[@]}" "$1"; }
run_scale() { "$top/tests/bench/scale.sh" "${SCALE_ARGS[@]}" "$1"; }
run_k8s_scale() { "$top/tests/bench/k8s_scale.sh" "$K8S_SCALE_ROUNDS" "$1" "$K8S_SCALE_SIZES"; }

BENCHMARKS=(path_cost packet_rate bulk_tcp latency dhcp_leases router_solicitations tftp_fetch failover scale k8s_scale)
if [ -n "$only" ]; then
    for name in ${only//,/ }; do
        [[ " ${BENCHMARKS[*]} " == *" $name "* ]] || { echo "bench: no benchmark named $name (${BENCHMARKS[*]})" >&2; exit 2; }
    done
fi
# run_one NAME INDEX: one benchmark, its log and result file; prints its lines when it ends, and marks a failure.
run_one() {
    local name=$1 index=$2 result t0 reason
    result=$out/results/$(printf '%02d' "$index")-$name.json # the report keeps this order
    t0=$(date +%s)
    if "run_$name" "$result" >"$out/logs/$name.log" 2>&1 && [ -s "$result" ]; then
        printf '== %s\n   done in %s s\n' "$name" "$(($(date +%s) - t0))"
        return 0
    fi
    touch "$out/logs/$name.failed"
    reason=$(tail -n 3 "$out/logs/$name.log" | tr '\n' ' ')
    printf '== %s\n   could not run: %s (log: %s)\n' "$name" "$reason" "$out/logs/$name.log"
    /usr/bin/python3 -c 'import json, sys; json.dump({"benchmark": sys.argv[1], "error": sys.argv[2], "tables": []}, open(sys.argv[3], "w"))' \
        "$name" "$reason" "$result"
}

# A full run measures one benchmark at a time. The quick run only checks that each still runs (its numbers are
# never judged), so it runs as many at once as there are CPUs: each sandboxes itself (its own network, mount and
# pid namespaces), and bench_path_cost only loads programs and runs them on packets (BPF_PROG_TEST_RUN).
# The longest start first (failover's Kubernetes rounds, then latency's and k8s_scale's set-ups: 97, 42 and 39 s
# of a quick run's 155 s, 2026-12-06), and the others fill in beside them.
parallel=1
start_order=("${BENCHMARKS[@]}")
if [ "$quick" = 1 ]; then
    parallel=$(nproc)
    start_order=(failover latency k8s_scale)
    for name in "${BENCHMARKS[@]}"; do
        [[ " ${start_order[*]} " == *" $name "* ]] || start_order+=("$name")
    done
fi
declare -A position=() # a benchmark's place in BENCHMARKS: its result file's number, the report's order
for index in "${!BENCHMARKS[@]}"; do position[${BENCHMARKS[$index]}]=$((index + 1)); done
rm -f "$out"/logs/*.failed
for name in "${start_order[@]}"; do
    [ -z "$only" ] || [[ ",$only," == *",$name,"* ]] || continue
    while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
    run_one "$name" "${position[$name]}" &
done
wait
failed=()
for name in "${BENCHMARKS[@]}"; do
    [ -e "$out/logs/$name.failed" ] && failed+=("$name")
done

/usr/bin/python3 "$top/tests/bench/report.py" "$out/results" "$out/report" || exit 2
echo "report: $out/report.md (and report.json)"
if [ "${#failed[@]}" != 0 ]; then
    echo "bench: could not run: ${failed[*]}" >&2
    exit 1
fi
