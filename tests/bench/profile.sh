#!/usr/bin/env bash
# Where a datapath function's time goes, by source line: runs bench_path_cost (one copy, long enough to
# sample), records every CPU with perf, and charges each sample taken in a BPF program to the source line of
# the instruction it hit, or, for a sample in a kernel helper, to the line that called the helper
# (tests/bench/profile_lines.py; the JITed code's lines come from bench_jit_lines). Perf's sampling skid can
# put a sample on the instruction after the one that took the time: read lines, not single instructions.
# Runs in its own network namespace; needs root and perf.
#
#   tests/bench/profile.sh [--build DIR] [--rounds R] [--only TEXT] FUNCTION...
#     --only    run only the paths whose name holds TEXT (bench_path_cost --only), e.g. "reverse SNAT"
#     FUNCTION  a program or subprogram of bpf/bpfnet.bpf.c: tc_pod_ipv4 (reverse SNAT and the pod's own
#               flows), tc_pod_dhcp (DHCP reply), dhcp_hide_backend, tc_ipv6_dhcp (DHCPv6 request), ...
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
build=$top/build
rounds=150
only=()
usage="usage: $0 [--build DIR] [--rounds R] [--only TEXT] FUNCTION..."
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --only) only=(--only "$2"); shift 2 ;;
    -*) echo "$usage" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
command -v perf >/dev/null || { echo "profile: perf is not installed" >&2; exit 2; }

work=$(mktemp -d /tmp/bpfnet-profile.XXXXXX)
bench_pid=""
cleanup() {
    [ -n "$bench_pid" ] && kill "$bench_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

unshare --net --mount --fork "$build/tests/bench/bench_path_cost" --copies 1 --rounds "$rounds" --runs 1000 \
    "${only[@]}" >/dev/null 2>&1 &
bench_pid=$!
# The programs stay loaded until the bench ends: their line maps are read once they are.
for _ in $(seq 50); do
    bpftool prog show 2>/dev/null | grep -q "name tc_pod_ingress " && break
    sleep 0.1
done
for name in xdp_nic tc_nic_ingress tc_pod_ingress; do
    for id in $(bpftool prog show | awk -v n="$name" '$3 == "name" && $4 == n { sub(":", "", $1); print $1 }'); do
        "$build/tests/bench/bench_jit_lines" "$id" >"$work/lines_$id.txt"
    done
done
perf record -q -a -F 15000 -g -o "$work/perf.data" -- tail --pid="$bench_pid" -f /dev/null >/dev/null 2>&1
bench_pid=""
perf script -i "$work/perf.data" -F ip,sym,symoff 2>/dev/null >"$work/samples.txt"
for function in "$@"; do
    python3 "$top/tests/bench/profile_lines.py" --lines "$work" --samples "$work/samples.txt" "$function"
done
