#!/usr/bin/env bash
# Small-packet rate: 64-byte UDP frames to the same pod through bpfnet, nftables DNAT with conntrack and
# plain routing (tests/bench/paths.sh), side by side. The generator is in the kernel: bench_udp_flood runs
# an XDP_TX program by BPF_PROG_TEST_RUN in live-frames mode on the host's eth0, so frames leave as fast as
# the path behind prov0 takes them, with no userspace socket loop in the way. The pod counts what arrives
# with an nftables counter at the start of its prerouting (priority raw, then dropped: no socket, no
# conntrack in the pod), so every path is counted at the same point. One flow (one source port).
# Reported: frames delivered to the pod per second of generator time (Mpps), per run; each round runs
# the three paths once, in an order that rotates from round to round.
# Not a test: it fails only if a run could not be made. Needs root; sandboxes itself.
#
#   packet_rate.sh [ROUNDS] [FRAMES] [RESULTS_FILE]     (defaults 10, 2000000, ./packet_rate.json)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-10}
FRAMES=${2:-2000000}
RESULTS_FILE=$(realpath -m "${3:-packet_rate.json}")
BUILD=${BUILD:-$top/build}
LOADER=$BUILD/loader/bpfnet-loader
FLOOD=$BUILD/tests/bench/bench_udp_flood
# shellcheck source=../e2e/lib.sh
source "$top/tests/e2e/lib.sh"
command -v nft >/dev/null || { echo "packet_rate: nft is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
[ -x "$FLOOD" ] || { echo "packet_rate: $FLOOD is not built" >&2; exit 2; }
sandbox_reexec "$@"
# shellcheck source=paths.sh
source "$top/tests/bench/paths.sh"

SINK_PORT=9999
CANDIDATES=(bpfnet "plain routing" "nftables DNAT")
paths_create --port "sink:udp:$SINK_PORT"
# The generator's frames leave eth0 by XDP_TX, which a veth delivers only to a peer that polls with NAPI:
# GRO on the generator's own bridge port. That is the load generator's link; the paths compared, from
# the bridge to the pod, keep their defaults.
ip netns exec "$(lan_bridge_ns)" ethtool -K lan-host gro on >/dev/null || die "GRO on the generator's bridge port"
ip netns exec "$E2E_POD" nft -f - <<EOF || die "the pod's counting rule"
table ip sink {
    counter delivered {}
    chain prerouting {
        type filter hook prerouting priority raw;
        udp dport $SINK_PORT counter name delivered drop
    }
}
EOF

delivered() {
    ip netns exec "$E2E_POD" nft -j list counter ip sink delivered |
        "$SYSTEM_PYTHON" -c 'import json, sys
print(next(o["counter"]["packets"] for o in json.load(sys.stdin)["nftables"] if "counter" in o))'
}

# measure NAME: one burst of FRAMES through NAME; prints "MPPS_DELIVERED SHARE_DELIVERED".
measure() {
    local before after sent
    before=$(delivered)
    sent=$(ip netns exec "$E2E_HOST" "$FLOOD" --ifname eth0 --src-mac "$E2E_HOST_MAC" --dst-mac "$E2E_NIC_MAC" \
        --src "$E2E_HOST_IP" --dst "${PATH_TARGET[$1]}" --dport "$SINK_PORT" --count "$FRAMES") || return 1
    sleep 0.2 # what is still in the veth's ring when the generator returns
    after=$(delivered)
    "$SYSTEM_PYTHON" -c 'import json, sys
s = json.loads(sys.argv[1]); n = int(sys.argv[2])
if n <= 0: sys.exit(1)
print("%.4f %.4f" % (n / s["seconds"] / 1e6, n / s["frames"]))' "$sent" $((after - before))
}

for name in "${CANDIDATES[@]}"; do # a first burst each: the flow, the conntrack entry, the neighbour
    measure "$name" >/dev/null || die "no frame reached the pod through $name"
done
declare -A MPPS SHARE
for ((round = 0; round < ROUNDS; round++)); do
    for ((i = 0; i < ${#CANDIDATES[@]}; i++)); do
        name=${CANDIDATES[$(((i + round) % ${#CANDIDATES[@]}))]}
        out=$(measure "$name") || die "64-byte UDP through $name could not be measured"
        read -r mpps share <<<"$out"
        MPPS[$name]+="$mpps "
        SHARE[$name]+="$share "
    done
    log "round $((round + 1))/$ROUNDS done"
done

REPORT=$top/tests/bench/report.py
rm -f "$RESULTS_FILE"
args=()
for name in "${CANDIDATES[@]}"; do args+=(--series "$name=${MPPS[$name]}"); done
"$SYSTEM_PYTHON" "$REPORT" table "$RESULTS_FILE" packet_rate --title "64-byte UDP to the pod: rate delivered" \
    --unit Mpps --better higher --baseline "plain routing" --paired "${args[@]}" \
    --notes "$ROUNDS rounds, the paths in rotating order; $FRAMES frames per run from an in-kernel generator (BPF_PROG_TEST_RUN live frames, XDP_TX on the host's eth0); counted in the pod's prerouting; one flow."
args=()
for name in "${CANDIDATES[@]}"; do args+=(--series "$name=${SHARE[$name]}"); done
"$SYSTEM_PYTHON" "$REPORT" table "$RESULTS_FILE" packet_rate --title "64-byte UDP to the pod: share of the frames sent that arrived" \
    --unit share --better higher --baseline "plain routing" --paired "${args[@]}" \
    --notes "The generator sends as fast as the host's veth accepts; frames the path cannot take in time are dropped on the way (veth ring full)."
log "results in $RESULTS_FILE"
