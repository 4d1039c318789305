#!/usr/bin/env bash
# The loader in Kubernetes mode: memory and CPU while idle and under a burst of watch events. Not a test: it
# reports numbers and fails only when it cannot run. Needs root; sandboxes itself (tests/e2e/lib.sh).
#
# The loader serves the Ironic Service of docs/kubernetes.md (the pod on its node) from the API server stand-in
# (tests/k8s/apiserver_standin.py). Then:
#   idle   IDLE_S seconds with no change (bookmarks every second, Lease renewals, the heartbeat);
#   burst  k8s_burst.py writes EVENTS changes (Services of another type created, EndpointSlices of other
#          Services updated) as fast as the stand-in takes them; the loader's own metrics say when it has
#          applied them all (bpfnet_k8s_watch_events_total).
# For each phase: CPU seconds the loader used (utime + stime from /proc, 10 ms resolution), its resident
# memory (VmRSS) at the end and its peak (VmHWM), and for the burst the time until every event was applied.
# The datapath is checked to still serve the host after the burst.
#
#   k8s_watch_load.sh [EVENTS] [IDLE_S] [LOADER]      (defaults 10000, 10, build/loader/bpfnet-loader)
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
EVENTS=${1:-10000}
IDLE_S=${2:-10}
LOADER=${3:-$top/build/loader/bpfnet-loader}
# shellcheck source=../e2e/lib.sh
source "$top/tests/e2e/lib.sh"
LOADER=$(realpath "$LOADER")
sandbox_reexec "$@"

PY=/usr/bin/python3
LOGS=$E2E_TMP/logs
# shellcheck source=k8s_bench_lib.sh
source "$top/tests/bench/k8s_bench_lib.sh"

k8s_bench_world
standin_start "$LOGS/standin.log"
PORT=$STANDIN_PORT
ironic_create
kubeconfig_write "$E2E_TMP/conf/kubeconfig"
k8s_bench_flags "$E2E_TMP/conf/kubeconfig"
nsenter --net="/run/netns/$E2E_NODE" "$LOADER" "${K8S_BENCH_FLAGS[@]}" >"$LOGS/loader.log" 2>&1 &
LPID=$!
E2E_PIDS+=("$LPID")
serving() { ironic_serving; }
wait_for 15 serving || die "the loader does not serve: $(tail -n 5 "$LOGS/loader.log")"

ticks() { awk '{ print $14 + $15 }' "/proc/$LPID/stat"; }
hz=$(getconf CLK_TCK)
status_kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$LPID/status"; }
metric() {
    ip netns exec "$E2E_NODE" curl -s --max-time 2 http://127.0.0.1:9394/metrics |
        awk -v s="$1" '$1 == s { print $2 }'
}
events_applied() {
    local total=0 r v
    for r in services endpointslices leases; do
        v=$(metric "bpfnet_k8s_watch_events_total{resource=\"$r\"}")
        total=$((total + ${v:-0}))
    done
    echo "$total"
}
cpu_s() { awk -v a="$1" -v b="$2" -v hz="$hz" 'BEGIN { printf "%.2f", (b - a) / hz }'; }

log "the loader serves; idle for $IDLE_S s"
sleep 2 # settle: the first Lease write and Events are done
rss_start=$(status_kb VmRSS)
t0=$(ticks)
sleep "$IDLE_S"
t1=$(ticks)
rss_idle=$(status_kb VmRSS)
idle_cpu=$(cpu_s "$t0" "$t1")
idle_pct=$(awk -v c="$idle_cpu" -v s="$IDLE_S" 'BEGIN { printf "%.2f", 100 * c / s }')

log "burst of $EVENTS events"
before=$(events_applied)
start=$(date +%s.%N)
burst_out=$("$PY" "$top/tests/bench/k8s_burst.py" "$PORT" "$EVENTS") || die "burst failed"
written=$(since "$start")
applied_all() { [ $(($(events_applied) - before)) -ge "$EVENTS" ]; }
wait_for 120 applied_all || die "the loader applied only $(($(events_applied) - before)) of $EVENTS events"
applied_s=$(since "$start")
t2=$(ticks)
sleep 2
t3=$(ticks)
rss_after=$(status_kb VmRSS)
hwm=$(status_kb VmHWM)
reconciles=$(metric bpfnet_k8s_reconciles_total)
serving || die "the datapath does not serve after the burst"

echo "# loader in Kubernetes mode, $(nproc) CPUs, kernel $(uname -r), $(date -u +%F)"
echo "idle ${IDLE_S}s: CPU ${idle_cpu} s (${idle_pct}% of one CPU), RSS ${rss_idle} kB (start ${rss_start} kB)"
echo "burst: ${burst_out}; all applied by the loader after ${applied_s} s (writer done after ${written} s)"
echo "burst: CPU $(cpu_s "$t1" "$t2") s until applied, $(cpu_s "$t2" "$t3") s in the 2 s after; RSS ${rss_after} kB after, peak ${hwm} kB; ${reconciles} reconcile passes in total"
echo "the datapath served the host before and after the burst"
