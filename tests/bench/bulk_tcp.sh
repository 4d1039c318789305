#!/usr/bin/env bash
# Bulk TCP, as an image download is: through bpfnet and through what users would otherwise run, side by
# side on the e2e namespace topology (host <-> node prov0 <-> pod), every path to the same pod:
#
#   bpfnet          host -> service IP 198.18.0.2 (:5201 iperf3, :80 -> pod :8080 HTTP): DNAT and
#                   bpf_redirect_peer into the pod, SNAT back out (the datapath under test)
#   plain routing   host -> 198.18.100.3, a second address of the pod, routed by the node's kernel (the
#                   floor: what any datapath adds is measured against it)
#   nftables DNAT   host -> 198.18.0.3 on the node, DNAT to the pod by nftables with conntrack (kube-proxy
#                   and MetalLB's data path)
#   HAProxy         host -> 198.18.0.4 on the node, HAProxy in the node namespace proxying to the pod (the
#                   ironic-proxy approach: a reverse proxy; TCP mode for iperf3, HTTP mode for GET)
#   bpfnet IPv6     host -> service address [2001:2::2]: NAT66 into the pod's IPv6 address (paths.sh)
#   plain routing IPv6  host -> [2001:2:0:100::3], the pod's second IPv6 address, routed by the node
#
# bpfnet's XDP program stays on prov0 for all of them (it passes what is not for a service IP), so the others
# are measured with that pass-through included. Per round, each path runs once per measurement, in an order
# that rotates from round to round: iperf3 host -> pod and pod -> host (-R), and an HTTP GET of a SIZE MiB
# blob from the pod. Reported: throughput, and CPU seconds per GB moved (all CPUs' busy time from
# /proc/stat during the run: the machine is otherwise idle, both ends and the path share it).
# Not a test: it fails only if a run could not be made. Needs root; sandboxes itself.
#
#   bulk_tcp.sh [ROUNDS] [SECONDS] [RESULTS_FILE]     (defaults 10, 3, ./bulk_tcp.json)
#   env: E2E_CNI=bridge  the pod wired as a bridge CNI wires it (tests/e2e/lib.sh): plain routing crosses cni0
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-10}
SECONDS_PER_RUN=${2:-3}
RESULTS_FILE=$(realpath -m "${3:-bulk_tcp.json}")
BLOB_MIB=${BLOB_MIB:-512}
BUILD=${BUILD:-$top/build}
LOADER=$BUILD/loader/bpfnet-loader
BLOB_SERVER=$BUILD/tests/bench/bench_http_blob_server
# shellcheck source=../e2e/lib.sh
source "$top/tests/e2e/lib.sh"
for tool in iperf3 nft haproxy curl; do
    command -v "$tool" >/dev/null || { echo "bulk_tcp: $tool is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
done
[ -x "$BLOB_SERVER" ] || { echo "bulk_tcp: $BLOB_SERVER is not built" >&2; exit 2; }
sandbox_reexec "$@"

# shellcheck source=paths.sh
source "$top/tests/bench/paths.sh"
HAPROXY_IP=198.18.0.4
declare -A TARGET
for name in "${!PATH_TARGET[@]}"; do TARGET[$name]=${PATH_TARGET[$name]}; done
TARGET[HAProxy]=$HAPROXY_IP
# The HTTP port on each path: the service maps 80 -> 8080; the others reach the pod's 8080 as it is.
declare -A HTTP_PORT=([bpfnet]=80 ["plain routing"]=8080 ["nftables DNAT"]=8080 [HAProxy]=8080)
CANDIDATES=(bpfnet "plain routing" "nftables DNAT" HAProxy)

paths_create
paths_add_ipv6
for name in "${!PATH_TARGET6[@]}"; do TARGET[$name]=${PATH_TARGET6[$name]}; done
HTTP_PORT["bpfnet IPv6"]=80
HTTP_PORT["plain routing IPv6"]=8080
CANDIDATES+=("bpfnet IPv6" "plain routing IPv6")
ip -n "$E2E_NODE" addr add "$HAPROXY_IP/32" dev "$E2E_NIC"

# HAProxy in the node namespace: TCP for iperf3, HTTP (a reverse proxy, as ironic-proxy) for the blob.
cat >"$E2E_TMP/haproxy.cfg" <<EOF
global
    maxconn 1000
defaults
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend iperf
    mode tcp
    bind $HAPROXY_IP:5201
    default_backend pod_iperf
backend pod_iperf
    mode tcp
    server pod $E2E_POD_IP:5201
frontend images
    mode http
    bind $HAPROXY_IP:8080
    default_backend pod_images
backend pod_images
    mode http
    server pod $E2E_POD_IP:8080
EOF
bg_in_ns "$E2E_NODE" "$E2E_TMP/logs/haproxy.log" haproxy -db -f "$E2E_TMP/haproxy.cfg"

bg_in_ns "$E2E_POD" "$E2E_TMP/logs/iperf.log" iperf3 -s
bg_in_ns "$E2E_POD" "$E2E_TMP/logs/blob.log" "$BLOB_SERVER" :: 8080 "$BLOB_MIB"
# url_host ADDRESS: as a URL writes it (an IPv6 address in brackets).
url_host() { if [[ $1 == *:* ]]; then echo "[$1]"; else echo "$1"; fi; }
for name in "${CANDIDATES[@]}"; do
    wait_for 10 host curl -s -o /dev/null --max-time 1 "http://$(url_host "${TARGET[$name]}"):${HTTP_PORT[$name]}/" ||
        die "no HTTP answer through $name (${TARGET[$name]}:${HTTP_PORT[$name]})"
done

# busy_jiffies: all CPUs' non-idle time so far (user, nice, system, irq, softirq, steal), in clock ticks.
busy_jiffies() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
TICK=$(getconf CLK_TCK)

# measure KIND NAME: one run of KIND (up, down or http) through NAME; prints "GBIT_PER_S CPU_S_PER_GB".
measure() {
    local kind=$1 name=$2 target=${TARGET[$2]} cpu0 cpu1 bytes seconds
    cpu0=$(busy_jiffies)
    case $kind in
    up | down)
        local flag=""
        [ "$kind" = down ] && flag=-R
        read -r bytes seconds < <(ip netns exec "$E2E_HOST" iperf3 -c "$target" -t "$SECONDS_PER_RUN" $flag -J |
            "$SYSTEM_PYTHON" -c 'import json, sys
s = json.load(sys.stdin)["end"]["sum_received"]
print(s["bytes"], s["seconds"])')
        ;;
    http)
        read -r bytes seconds < <(ip netns exec "$E2E_HOST" curl -sS -o /dev/null --max-time 120 \
            -w '%{size_download} %{time_total}\n' "http://$(url_host "$target"):${HTTP_PORT[$name]}/blob")
        ;;
    esac
    cpu1=$(busy_jiffies)
    awk -v b="$bytes" -v s="$seconds" -v c=$((cpu1 - cpu0)) -v t="$TICK" \
        'BEGIN { if (b <= 0 || s <= 0) exit 1; printf "%.4f %.4f\n", b * 8 / s / 1e9, (c / t) / (b / 1e9) }'
}

declare -A GBPS CPU
for ((round = 0; round < ROUNDS; round++)); do
    for kind in up down http; do
        for ((i = 0; i < ${#CANDIDATES[@]}; i++)); do
            name=${CANDIDATES[$(((i + round) % ${#CANDIDATES[@]}))]}
            out=$(measure "$kind" "$name") || die "$kind through $name could not be measured"
            read -r gbps cpu <<<"$out"
            GBPS[$kind,$name]+="$gbps "
            CPU[$kind,$name]+="$cpu "
        done
    done
    log "round $((round + 1))/$ROUNDS done"
done

declare -A TITLE=([up]="iperf3 host -> pod" [down]="iperf3 pod -> host (-R)" [http]="HTTP GET of a $BLOB_MIB MiB image, host <- pod")
REPORT=$top/tests/bench/report.py
rm -f "$RESULTS_FILE"
for kind in up down http; do
    for metric in throughput cpu; do
        args=()
        for name in "${CANDIDATES[@]}"; do
            if [ "$metric" = throughput ]; then
                args+=(--series "$name=${GBPS[$kind,$name]}")
            else
                args+=(--series "$name=${CPU[$kind,$name]}")
            fi
        done
        if [ "$metric" = throughput ]; then
            "$SYSTEM_PYTHON" "$REPORT" table "$RESULTS_FILE" bulk_tcp --title "${TITLE[$kind]}: throughput" \
                --unit Gbit/s --better higher --baseline "plain routing" --paired "${args[@]}" \
                --notes "$ROUNDS rounds, the ${#CANDIDATES[@]} paths in rotating order; iperf3 -t $SECONDS_PER_RUN, one stream."
        else
            "$SYSTEM_PYTHON" "$REPORT" table "$RESULTS_FILE" bulk_tcp --title "${TITLE[$kind]}: CPU seconds per GB" \
                --unit "CPU s/GB" --better lower --baseline "plain routing" --paired "${args[@]}" \
                --notes "All CPUs' busy time (/proc/stat) during each run over the bytes received: both ends and the path, on one machine."
        fi
    done
done
log "results in $RESULTS_FILE"
