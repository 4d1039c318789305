#!/usr/bin/env bash
# Kubernetes mode on a large cluster: what a loader needs to start and to follow changes when the API server
# holds many Services and EndpointSlices. For each size, the API server stand-in (tests/k8s/apiserver_standin.py)
# is filled before the loader starts (tests/bench/k8s_populate.py: SERVICES Services, OURS of them of bpfnet's
# class with pods on other nodes, two EndpointSlices of three endpoints each per Service) beside the Ironic
# Service of docs/kubernetes.md, whose pod is on the loader's node. Measured per size:
#   start      from the loader's start to the first who-has for the service IP it answers (every list read, in
#              pages, the first reconcile, the Lease written, the IP activated), probing every 50 ms
#   memory     the loader's resident memory 2 s after it serves, and its peak (VmRSS, VmHWM)
#   change     ROUNDS times: the Ironic pod's endpoint made not ready (an EndpointSlice write), until the
#              service IP is no longer answered; made ready again, until it is answered again (a who-has
#              every 10 ms around the write, timed on CLOCK_MONOTONIC; HTTP checked after)
# Not a test: it fails only when it cannot run. Needs root; sandboxes itself (tests/e2e/lib.sh).
#
#   k8s_scale.sh [ROUNDS] [RESULTS_FILE] [SIZES]   (defaults 5, ./k8s_scale.json, "1000:10 10000:100";
#                                                     a size is SERVICES:OURS)
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-5}
RESULTS_FILE=$(realpath -m "${2:-k8s_scale.json}")
read -r -a SIZES <<<"${3:-1000:10 10000:100}"
BUILD=${BUILD:-$top/build}
LOADER=$BUILD/loader/bpfnet-loader
# shellcheck source=../e2e/lib.sh
source "$top/tests/e2e/lib.sh"
[ -x "$LOADER" ] || { echo "k8s_scale: $LOADER is not built" >&2; exit 2; }
LOADER=$(realpath "$LOADER")
sandbox_reexec "$@"

PY=/usr/bin/python3
REPORT=$top/tests/bench/report.py
ARP_PROBE=$top/tests/e2e/arp_probe.py
LOGS=$E2E_TMP/logs
# shellcheck source=k8s_bench_lib.sh
source "$top/tests/bench/k8s_bench_lib.sh"

k8s_bench_world
mono() { "$PY" -c 'import time; print("%.6f" % time.monotonic())'; }
kb_to_mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# first_answer T0 TIMEOUT: seconds (EPOCHREALTIME) from T0 to the send of the first who-has for the service IP
# that the datapath answers, probing every 50 ms; fails after TIMEOUT seconds.
first_answer() {
    local t0=$1 deadline sent
    deadline=$(awk -v a="$t0" -v t="$2" 'BEGIN { printf "%.3f", a + t }')
    while awk -v now="$EPOCHREALTIME" -v d="$deadline" 'BEGIN { exit !(now < d) }'; do
        sent=$EPOCHREALTIME
        if host "$PY" "$ARP_PROBE" --timeout 0.05 eth0 "$E2E_SERVICE_IP" >/dev/null; then
            awk -v a="$t0" -v b="$sent" 'BEGIN { printf "%.3f", b - a }'
            return 0
        fi
        sleep 0.05
    done
    return 1
}

# transition WANT WRITE...: a train of who-has for the service IP every 10 ms around the EndpointSlice write
# WRITE; prints the seconds from just before the write to the first probe whose outcome is WANT (silent or
# answered), from the train's CLOCK_MONOTONIC send times.
transition() {
    local want=$1 train=$E2E_TMP/train t
    shift
    host "$PY" "$ARP_PROBE" --every 0.01 --count 300 eth0 "$E2E_SERVICE_IP" >"$train" &
    local prober=$!
    sleep 0.3
    t=$(mono)
    "$@" || { kill "$prober"; return 1; }
    wait "$prober"
    awk -v t="$t" -v want="$want" '$1 > t && $2 == want { printf "%.3f", $1 - t; found = 1; exit }
        END { exit !found }' "$train"
}

declare -A START MEM PEAK OFF ON NAME OBJECTS
for size in "${SIZES[@]}"; do
    services=${size%%:*}
    ours=${size##*:}
    # With the Ironic Service beside them.
    NAME[$size]="$((services + 1)) Services ($((ours + 1)) of bpfnet's class), $((2 * services + 1)) EndpointSlices"
    log "size $size: filling the stand-in"
    standin_start "$LOGS/standin-$services.log"
    ironic_create
    OBJECTS[$size]=$("$PY" "$top/tests/bench/k8s_populate.py" "$STANDIN_PORT" "$services" "$ours") ||
        die "filling failed"
    log "size $size: ${OBJECTS[$size]}"
    kubeconfig_write "$E2E_TMP/conf/kubeconfig"
    k8s_bench_flags "$E2E_TMP/conf/kubeconfig"
    t0=$EPOCHREALTIME
    nsenter --net="/run/netns/$E2E_NODE" "$LOADER" "${K8S_BENCH_FLAGS[@]}" >"$LOGS/loader-$services.log" 2>&1 &
    lpid=$!
    E2E_PIDS+=("$lpid")
    START[$size]=$(first_answer "$t0" 120) ||
        die "the service IP is not answered 120 s after the start: $(tail -n 5 "$LOGS/loader-$services.log")"
    wait_for 5 ironic_serving || die "the service IP is answered but HTTP is not"
    sleep 2
    MEM[$size]=$(kb_to_mib "$(awk '/^VmRSS:/ { print $2 }' "/proc/$lpid/status")")
    PEAK[$size]=$(kb_to_mib "$(awk '/^VmHWM:/ { print $2 }' "/proc/$lpid/status")")
    log "size $size: serving after ${START[$size]} s, RSS ${MEM[$size]} MiB (peak ${PEAK[$size]} MiB)"
    OFF[$size]="" ON[$size]=""
    for ((round = 0; round < ROUNDS; round++)); do
        took=$(transition silent standin_api PUT "$IRONIC_SLICE_PATH" "$(ironic_slice false)") ||
            die "the service IP still answered 3 s after its endpoint went"
        OFF[$size]+="$took "
        took=$(transition answered standin_api PUT "$IRONIC_SLICE_PATH" "$(ironic_slice true)") ||
            die "the service IP not answered 3 s after its endpoint is ready again"
        ON[$size]+="$took "
        wait_for 5 ironic_serving || die "the service IP is answered again but HTTP is not"
    done
    log "size $size: endpoint gone -> unanswered: ${OFF[$size]}s; back -> served: ${ON[$size]}s"
    kill -TERM "$lpid"
    wait "$lpid" 2>/dev/null
    nsenter --net="/run/netns/$E2E_NODE" "$LOADER" "${K8S_BENCH_FLAGS[@]}" --teardown >>"$LOGS/loader-$services.log" 2>&1 ||
        die "teardown after size $size failed"
    kill "$STANDIN_PID"
    wait "$STANDIN_PID" 2>/dev/null
done

baseline=${NAME[${SIZES[0]}]}
fill_notes=""
for size in "${SIZES[@]}"; do fill_notes+=" ${NAME[$size]}: ${OBJECTS[$size]} into the stand-in."; done
# table VALUES TITLE UNIT NOTES
table() {
    local -n values=$1
    local args=() size
    for size in "${SIZES[@]}"; do args+=(--series "${NAME[$size]}=${values[$size]}"); done
    "$SYSTEM_PYTHON" "$REPORT" table "$RESULTS_FILE" k8s_scale --title "$2" --unit "$3" --better lower \
        --baseline "$baseline" "${args[@]}" --notes "$4"
}
table START "Kubernetes mode at scale: from the loader's start to the service IP answered" s \
    "One start per size, a who-has every 50 ms: every list read in pages of 500, the first reconcile, the Lease written, the IP activated.$fill_notes"
table MEM "Kubernetes mode at scale: the loader's resident memory 2 s after it serves" MiB "One start per size (VmRSS)."
table PEAK "Kubernetes mode at scale: the loader's peak resident memory" MiB "One start per size (VmHWM, by the end of the changes)."
table OFF "Kubernetes mode at scale: an endpoint made not ready, until the service IP is not answered" s \
    "$ROUNDS rounds per size: from just before the EndpointSlice write to the first who-has unanswered, a who-has every 10 ms."
table ON "Kubernetes mode at scale: the endpoint ready again, until the service IP is answered" s \
    "$ROUNDS rounds per size: from just before the EndpointSlice write to the first who-has answered, a who-has every 10 ms; HTTP checked after."
