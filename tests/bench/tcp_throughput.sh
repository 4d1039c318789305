#!/usr/bin/env bash
# Bulk TCP through bpfnet vs plain kernel routing on the same namespace topology, run alternately.
#
#   candidate: host -> service IP 198.18.0.2:5201, DNAT + bpf_redirect_peer into the pod, SNAT back out
#   baseline:  host -> 198.18.100.3:5201 (a second address of the same pod, not a bpfnet backend), routed
#              by the node's kernel (prov0 gets 198.18.0.1, forwarding on); XDP stays attached for both
#
# Each pair runs iperf3 for SECONDS in one direction through both paths, candidate and baseline in
# alternating order; the report gives medians, the spread and the candidate/baseline ratio per pair.
# Not a test: it fails only if a run could not be made. Needs root; sandboxes itself.
#
#   tcp_throughput.sh [PAIRS] [SECONDS] [LOADER]
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
PAIRS=${1:-10}
SECONDS_PER_RUN=${2:-3}
LOADER=${3:-$top/build/loader/bpfnet-loader}
export XDP_PASS_OBJ=${XDP_PASS_OBJ:-$top/build/tests/e2e/xdp_pass.bpf.o}
# shellcheck source=../e2e/lib.sh
source "$top/tests/e2e/lib.sh"
sandbox_reexec "$@"

BASELINE_IP=198.18.100.3
topology_create >/dev/null
ip -n "$E2E_POD" addr add "$BASELINE_IP/24" dev eth0
ip -n "$E2E_NODE" addr add 198.18.0.1/24 dev "$E2E_NIC"
ip netns exec "$E2E_NODE" sysctl -qw net.ipv4.ip_forward=1
ip -n "$E2E_HOST" route add 198.18.100.0/24 via 198.18.0.1

config="$E2E_TMP/conf/bpfnet.yaml"
write_config "$config"
loader_start "$config" "$E2E_TMP/logs/loader.log" >/dev/null || die "$E2E_REASON"
bg_in_ns "$E2E_POD" "$E2E_TMP/logs/iperf.log" iperf3 -s
sleep 0.5

# One iperf3 run; prints Gbit/s at the receiver.
run() { # run TARGET [-R]
  ip netns exec "$E2E_HOST" iperf3 -c "$1" -t "$SECONDS_PER_RUN" ${2:-} -J |
    python3 -c 'import json,sys; print("%.3f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9))'
}

report() { # report LABEL CANDIDATES BASELINES
  python3 - "$1" "$2" "$3" <<'PY'
import statistics, sys
label, cand, base = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
ratios = sorted(c / b for c, b in zip(cand, base))
q = lambda v, p: sorted(v)[round(p * (len(v) - 1))]
print(f"| {label} | {statistics.median(cand):.2f} | {statistics.median(base):.2f} | "
      f"{statistics.median(ratios):.3f} | {q(ratios, 0.1):.3f}-{q(ratios, 0.9):.3f} | {len(ratios)} |")
PY
}

echo "| direction | bpfnet Gbit/s (median) | plain routing Gbit/s (median) | ratio (median) | ratio p10-p90 | pairs |"
echo "|---|---|---|---|---|---|"
for dir in "" "-R"; do
  cand="" base=""
  for i in $(seq 1 "$PAIRS"); do
    if [ $((i % 2)) -eq 1 ]; then
      c=$(run "$E2E_SERVICE_IP" "$dir") && b=$(run "$BASELINE_IP" "$dir")
    else
      b=$(run "$BASELINE_IP" "$dir") && c=$(run "$E2E_SERVICE_IP" "$dir")
    fi
    cand="$cand $c" base="$base $b"
  done
  label="host -> pod"
  [ -n "$dir" ] && label="pod -> host (-R)"
  report "$label" "$cand" "$base"
done
echo
echo "iperf3 -t $SECONDS_PER_RUN per run, $PAIRS alternating pairs per direction; kernel $(uname -r), $(nproc) CPUs."
