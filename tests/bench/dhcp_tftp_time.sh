#!/usr/bin/env bash
# DHCP lease time and TFTP transfer time through bpfnet, against the same software without bpfnet, on the
# e2e namespace topology (tests/e2e/lib.sh) with the e2e helpers (tests/e2e/dhcp.sh). Not a test: it never
# passes or fails on time; it fails only if a run could not be made. Needs root; sandboxes itself.
#
# DHCP, busybox udhcpc on the host (one DISCOVER/OFFER/REQUEST/ACK exchange per run), three ways:
#   bpfnet  the eBPF relay on prov0 -> dnsmasq in the pod (the e2e PXE configuration)
#   relay   bpfnet torn down; prov0 has the service IP; `dnsmasq --dhcp-relay` on the node -> the same
#           dnsmasq in the pod
#   direct  bpfnet torn down; prov0 has the service IP; dnsmasq serves the LAN itself from the node
#           (same range and options, no relay)
# Times come from the kernel time stamps of an AF_PACKET capture on the host's eth0: DISCOVER -> OFFER and
# REQUEST -> ACK (the relay and server round trips) and DISCOVER -> ACK (the lease, which also holds
# udhcpc's own pause of 0-50 ms between OFFER and REQUEST); the wall time of the udhcpc process too. Every round runs the three in a rotating order, each
# after switching the topology to it, so a round is a matched triple.
#
# TFTP, tftp-hpa fetching a 3 MiB file from dnsmasq in the pod (default mode, ephemeral server port):
#   bpfnet  host -> service IP:69, DNAT + recorded flow of the datapath
#   direct  node -> pod IP:69 over the node's own route (no bpfnet on the path)
# alternating which goes first; wall time of the tftp process (both include `ip netns exec` and tftp start).
#
#   dhcp_tftp_time.sh [ROUNDS] [LOADER]       (ROUNDS default 10)
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-10}
LOADER=${2:-$top/build/loader/bpfnet-loader}
export XDP_PASS_OBJ=${XDP_PASS_OBJ:-$top/build/tests/e2e/xdp_pass.bpf.o}
# shellcheck source=../e2e/lib.sh
source "$top/tests/e2e/lib.sh"
# shellcheck source=../e2e/dhcp.sh
source "$top/tests/e2e/dhcp.sh"
LOADER=$(realpath "$LOADER")
if [ "$(id -u)" = 0 ] && ! dhcp_available; then
    echo "dhcp_tftp_time: $E2E_REASON" >&2
    exit 77
fi
sandbox_reexec "$@"

CONFIG=$E2E_TMP/conf/bpfnet.yaml
DHCP_TFTP_ROOT=$E2E_TMP/tftp
CAP=$E2E_TMP/lan.jsonl
RESULTS=$E2E_TMP/results
mkdir -p "$DHCP_TFTP_ROOT" "$RESULTS" "$E2E_TMP/dl"

topology_create >/dev/null
random_file "$DHCP_TFTP_ROOT/$DHCP_BOOT_FILE" 3145728
write_config --port "dhcp:udp:67::dhcp" --port "tftp:udp:69::tftp" "$CONFIG"
dnsmasq_start "$E2E_POD" "$E2E_TMP/dnsmasq-pod" || die "$E2E_REASON"
POD_DNSMASQ_PID=$DNSMASQ_PID
NODE_DNSMASQ_PID=""
MODE=none
LOADER_RUNS=0

# ---------------------------------------------------------------------------------------------------
# Switching the topology between the three DHCP paths

node_dnsmasq_stop() {
    if [ -n "$NODE_DNSMASQ_PID" ]; then
        stop_pid "$NODE_DNSMASQ_PID"
        NODE_DNSMASQ_PID=""
    fi
}

bpfnet_down() {
    if [ -n "$LOADER_PID" ]; then
        loader_stop TERM
        run_loader --config "$CONFIG" --teardown >/dev/null 2>&1 || die "loader --teardown failed"
    fi
}

switch_to() {
    local want=$1
    [ "$MODE" = "$want" ] && return 0
    node_dnsmasq_stop
    case $want in
    bpfnet)
        ip -n "$E2E_NODE" -4 addr flush dev "$E2E_NIC"
        LOADER_RUNS=$((LOADER_RUNS + 1))
        loader_start "$CONFIG" "$E2E_TMP/logs/loader-$LOADER_RUNS.log" >/dev/null || die "$E2E_REASON"
        ;;
    relay | direct)
        bpfnet_down
        ip -n "$E2E_NODE" addr replace "$E2E_SERVICE_IP/24" dev "$E2E_NIC"
        if [ "$want" = relay ]; then
            dnsmasq_run "$E2E_NODE" "$E2E_TMP/dnsmasq-relay" --dhcp-relay="$E2E_SERVICE_IP,$E2E_POD_IP" \
                --interface="$E2E_NIC" --interface="$E2E_VETH" || die "$E2E_REASON"
        else
            dnsmasq_run "$E2E_NODE" "$E2E_TMP/dnsmasq-direct" --interface="$E2E_NIC" --no-ping \
                --dhcp-range="$DHCP_RANGE_FIRST,$DHCP_RANGE_LAST,$DHCP_NETMASK,$DHCP_LEASE_TIME" \
                --dhcp-option=3,"$DHCP_ROUTER" --dhcp-boot="$DHCP_BOOT_FILE,,$E2E_SERVICE_IP" --log-dhcp || die "$E2E_REASON"
            wait_for 5 ns_udp_listens "$E2E_NODE" 67 || die "node dnsmasq does not listen on 67"
        fi
        NODE_DNSMASQ_PID=$DNSMASQ_PID
        ;;
    esac
    MODE=$want
}

# One lease; appends "DISCOVER->OFFER REQUEST->ACK DISCOVER->ACK WALL" (ms) to RESULTS/dhcp-MODE.
dhcp_once() {
    local mode=$1 t0 t1 events=$E2E_TMP/events-$1 xid_time
    switch_to "$mode"
    rm -f "$events"
    t0=$(date +%s.%N)
    udhcpc_lease "$E2E_HOST" eth0 "$events" || die "$mode: $E2E_REASON"
    t1=$(date +%s.%N)
    [ "$(lease_field "$events" serverid bound)" = "$E2E_SERVICE_IP" ] || die "$mode: lease from $(lease_field "$events" serverid bound)"
    sleep 0.2 # the capture writes the ACK
    xid_time=$(python3 "$CAPTURE_PY" lease-times "$CAP" --after "$t0" | head -n1)
    [ -n "$xid_time" ] || die "$mode: no DISCOVER -> ACK in the capture"
    # shellcheck disable=SC2086 # the three times, as separate arguments
    set -- ${xid_time#* }
    awk -v o="$1" -v r="$2" -v l="$3" -v a="$t0" -v b="$t1" \
        'BEGIN { printf "%.3f %.3f %.3f %.3f\n", o * 1000, r * 1000, l * 1000, (b - a) * 1000 }' >>"$RESULTS/dhcp-$mode"
}

# One 3 MiB transfer; appends WALL_MS to RESULTS/tftp-MODE.
tftp_once() {
    local mode=$1 ns server t0 t1
    if [ "$mode" = bpfnet ]; then
        ns=$E2E_HOST server=$E2E_SERVICE_IP
    else
        ns=$E2E_NODE server=$E2E_POD_IP
    fi
    t0=$(date +%s.%N)
    tftp_get "$ns" "$server" "$DHCP_BOOT_FILE" "$E2E_TMP/dl/$mode" || die "$mode: $E2E_REASON"
    t1=$(date +%s.%N)
    cmp -s "$E2E_TMP/dl/$mode" "$DHCP_TFTP_ROOT/$DHCP_BOOT_FILE" || die "$mode: the file differs"
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }' >>"$RESULTS/tftp-$mode"
}

# report LABEL CANDIDATE_FILE BASELINE_FILE [COLUMN]: a Markdown row of medians and the per-pair ratio.
report() {
    python3 - "$@" <<'PY'
import statistics, sys
label, cand_file, base_file = sys.argv[1:4]
col = int(sys.argv[4]) if len(sys.argv) > 4 else 0
read = lambda f: [float(l.split()[col]) for l in open(f) if l.strip()]
cand, base = read(cand_file), read(base_file)
ratios = sorted(c / b for c, b in zip(cand, base))
q = lambda v, p: sorted(v)[round(p * (len(v) - 1))]
print(f"| {label} | {statistics.median(cand):.2f} | {statistics.median(base):.2f} | "
      f"{statistics.median(ratios):.2f} | {q(ratios, 0.1):.2f}-{q(ratios, 0.9):.2f} | {len(ratios)} |")
PY
}

# ---------------------------------------------------------------------------------------------------

capture_start "$E2E_HOST" eth0 "$CAP" || die "$E2E_REASON"
modes=(bpfnet relay direct)
for mode in "${modes[@]}"; do # warm-up: leases exist, caches are filled, nothing recorded
    switch_to "$mode"
    udhcpc_lease "$E2E_HOST" eth0 "$E2E_TMP/warmup-$mode" || die "warm-up $mode: $E2E_REASON"
done
: >"$RESULTS/dhcp-bpfnet"
: >"$RESULTS/dhcp-relay"
: >"$RESULTS/dhcp-direct"
for round in $(seq 1 "$ROUNDS"); do
    for k in 0 1 2; do
        dhcp_once "${modes[$(((round + k) % 3))]}"
    done
done
capture_stop

# TFTP: bpfnet must be attached; no capture running (it would load the host side only). Lockstep TFTP is
# bound by wake-up latency, which on 2 CPUs depends on where the client and the server happen to run;
# a second series pins both (and with them the softirq work of the veths they send on) to CPU 0.
switch_to bpfnet
tftp_series() { # tftp_series SUFFIX
    tftp_once bpfnet
    tftp_once direct # warm-up
    : >"$RESULTS/tftp-bpfnet"
    : >"$RESULTS/tftp-direct"
    for round in $(seq 1 "$ROUNDS"); do
        if [ $((round % 2)) -eq 1 ]; then
            tftp_once bpfnet
            tftp_once direct
        else
            tftp_once direct
            tftp_once bpfnet
        fi
    done
    mv "$RESULTS/tftp-bpfnet" "$RESULTS/tftp-bpfnet$1"
    mv "$RESULTS/tftp-direct" "$RESULTS/tftp-direct$1"
}
tftp_series -free
all_cpus=$(taskset -pc $$ | sed 's/.*: //')
if ! taskset -pc 0 "$POD_DNSMASQ_PID" >/dev/null || ! taskset -pc 0 $$ >/dev/null; then
    die "taskset failed"
fi
tftp_series -pinned
taskset -pc "$all_cpus" $$ >/dev/null
taskset -pc "$all_cpus" "$POD_DNSMASQ_PID" >/dev/null

echo "# $(uname -r), $(nproc) CPUs; $(dnsmasq --version | head -n1 | cut -d' ' -f1-3); $(busybox | head -n1 | cut -d' ' -f1-2); tftp-hpa $(dpkg-query -W -f='${Version}' tftp-hpa 2>/dev/null); $ROUNDS rounds"
echo
echo "| DHCP, udhcpc | bpfnet ms (median) | baseline ms (median) | ratio (median) | ratio p10-p90 | pairs |"
echo "|---|---|---|---|---|---|"
for base in relay direct; do
    name=$([ $base = relay ] && echo "dnsmasq relay" || echo "dnsmasq on the LAN")
    report "DISCOVER->OFFER, bpfnet vs $name" "$RESULTS/dhcp-bpfnet" "$RESULTS/dhcp-$base" 0
    report "REQUEST->ACK, bpfnet vs $name" "$RESULTS/dhcp-bpfnet" "$RESULTS/dhcp-$base" 1
    report "DISCOVER->ACK, bpfnet vs $name" "$RESULTS/dhcp-bpfnet" "$RESULTS/dhcp-$base" 2
    report "udhcpc wall time, bpfnet vs $name" "$RESULTS/dhcp-bpfnet" "$RESULTS/dhcp-$base" 3
done
echo
echo "| TFTP, 3 MiB, tftp-hpa | bpfnet ms (median) | direct ms (median) | ratio (median) | ratio p10-p90 | pairs |"
echo "|---|---|---|---|---|---|"
report "host -> service IP vs node -> pod IP" "$RESULTS/tftp-bpfnet-free" "$RESULTS/tftp-direct-free"
report "the same, client and server pinned to CPU 0" "$RESULTS/tftp-bpfnet-pinned" "$RESULTS/tftp-direct-pinned"
echo
for mode in bpfnet relay direct; do
    echo "raw (ms, DISCOVER->OFFER/REQUEST->ACK/DISCOVER->ACK/wall): dhcp $mode [$(awk '{printf "%s/%s/%s/%s ", $1, $2, $3, $4}' "$RESULTS/dhcp-$mode")]"
done
for s in -free -pinned; do
    echo "raw (ms): tftp$s bpfnet [$(tr '\n' ' ' <"$RESULTS/tftp-bpfnet$s")] direct [$(tr '\n' ' ' <"$RESULTS/tftp-direct$s")]"
done
kill -0 "$POD_DNSMASQ_PID" 2>/dev/null || die "the pod's dnsmasq died"
