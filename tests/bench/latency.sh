#!/usr/bin/env bash
# Latency: request/response round trips to the same pod through bpfnet, nftables DNAT with conntrack and
# plain routing (tests/bench/paths.sh), side by side: sockperf ping-pong from the host to a sockperf
# server in the pod, over TCP (one connection, Nagle off) and over UDP, 64-byte messages, one at a time.
# Reported per run: the round trip's p50 and p99 (sockperf --full-rtt); each round runs the three paths
# once per protocol, in an order that rotates from round to round.
# Not a test: it fails only if a run could not be made. Needs root; sandboxes itself.
#
#   latency.sh [ROUNDS] [SECONDS] [RESULTS_FILE]     (defaults 10, 2, ./latency.json)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-10}
SECONDS_PER_RUN=${2:-2}
RESULTS_FILE=$(realpath -m "${3:-latency.json}")
BUILD=${BUILD:-$top/build}
LOADER=$BUILD/loader/bpfnet-loader
# shellcheck source=../e2e/lib.sh
source "$top/tests/e2e/lib.sh"
for tool in sockperf nft; do
    command -v "$tool" >/dev/null || { echo "latency: $tool is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
done
sandbox_reexec "$@"
# shellcheck source=paths.sh
source "$top/tests/bench/paths.sh"

PORT=11111
CANDIDATES=(bpfnet "plain routing" "nftables DNAT")
paths_create --port "sockperf-tcp:tcp:$PORT" --port "sockperf-udp:udp:$PORT"
bg_in_ns "$E2E_POD" "$E2E_TMP/logs/sockperf-tcp.log" sockperf server --tcp -i 0.0.0.0 -p "$PORT"
bg_in_ns "$E2E_POD" "$E2E_TMP/logs/sockperf-udp.log" sockperf server -i 0.0.0.0 -p "$PORT"
wait_for 10 pod_listens "$PORT" || die "sockperf server not listening in the pod"

# measure PROTO NAME: one ping-pong run; prints "P50_US P99_US" (round trips).
measure() {
    local flag=""
    [ "$1" = tcp ] && flag=--tcp
    ip netns exec "$E2E_HOST" sockperf ping-pong $flag -i "${PATH_TARGET[$2]}" -p "$PORT" -m 64 \
        -t "$SECONDS_PER_RUN" --full-rtt 2>&1 | awk '
        /percentile 50.000 =/ { p50 = $NF }
        /percentile 99.000 =/ { p99 = $NF }
        END { if (p50 == "" || p99 == "") exit 1; print p50, p99 }'
}

for proto in tcp udp; do
    for name in "${CANDIDATES[@]}"; do
        wait_for 10 measure "$proto" "$name" >/dev/null || die "no $proto ping-pong answer through $name"
    done
done
declare -A P50 P99
for ((round = 0; round < ROUNDS; round++)); do
    for proto in tcp udp; do
        for ((i = 0; i < ${#CANDIDATES[@]}; i++)); do
            name=${CANDIDATES[$(((i + round) % ${#CANDIDATES[@]}))]}
            out=$(measure "$proto" "$name") || die "$proto ping-pong through $name could not be measured"
            read -r p50 p99 <<<"$out"
            P50[$proto,$name]+="$p50 "
            P99[$proto,$name]+="$p99 "
        done
    done
    log "round $((round + 1))/$ROUNDS done"
done

REPORT=$top/tests/bench/report.py
rm -f "$RESULTS_FILE"
declare -A TITLE=([tcp]="TCP ping-pong (one connection, 64-byte messages)" [udp]="UDP ping-pong (64-byte messages)")
for proto in tcp udp; do
    for q in p50 p99; do
        args=()
        for name in "${CANDIDATES[@]}"; do
            if [ "$q" = p50 ]; then args+=(--series "$name=${P50[$proto,$name]}"); else args+=(--series "$name=${P99[$proto,$name]}"); fi
        done
        "$SYSTEM_PYTHON" "$REPORT" table "$RESULTS_FILE" latency --title "${TITLE[$proto]}: round trip $q" \
            --unit "µs" --better lower --baseline "plain routing" --paired "${args[@]}" \
            --notes "$ROUNDS rounds, the paths in rotating order; sockperf ping-pong -t $SECONDS_PER_RUN --full-rtt, host -> pod; each value is one run's $q."
    done
done
log "results in $RESULTS_FILE"
