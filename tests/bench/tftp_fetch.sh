#!/usr/bin/env bash
# TFTP: time to fetch a SIZE MiB boot image from the pod, through bpfnet (host -> service IP:69, the
# transfer's ephemeral server port steered by the datapath) and over plain routing (host -> the pod's
# second address 198.18.100.3, routed by the node's kernel; tests/bench/paths.sh), side by side:
#   dnsmasq, curl                       default block size (512 bytes: lockstep, one round trip per block)
#   dnsmasq, curl --tftp-blksize 1468   the largest block an Ethernet frame holds (RFC 2348)
#   atftpd, atftp blksize 1468, windowsize 16   RFC 7440 windows (dnsmasq does not negotiate them; atftpd
#                                       does), so 16 blocks per round trip
# Each round runs every variant through both paths, in an order that alternates from round to round;
# the file is compared after every fetch. Reported: seconds per fetch and the ratio to plain routing.
# Not a test: it fails only if a run could not be made. Needs root; sandboxes itself.
#
#   tftp_fetch.sh [ROUNDS] [SIZE_MIB] [RESULTS_FILE]     (defaults 10, 8, ./tftp_fetch.json)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-10}
SIZE_MIB=${2:-8}
RESULTS_FILE=$(realpath -m "${3:-tftp_fetch.json}")
BUILD=${BUILD:-$top/build}
LOADER=$BUILD/loader/bpfnet-loader
# shellcheck source=../e2e/lib.sh
source "$top/tests/e2e/lib.sh"
# shellcheck source=../e2e/dhcp.sh
source "$top/tests/e2e/dhcp.sh"
for tool in dnsmasq curl atftp atftpd nft; do
    command -v "$tool" >/dev/null || { echo "tftp_fetch: $tool is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
done
sandbox_reexec "$@"
# shellcheck source=paths.sh
source "$top/tests/bench/paths.sh"

ROOT=$E2E_TMP/tftp
mkdir -p "$ROOT" "$E2E_TMP/dl"
random_file "$ROOT/image" $((SIZE_MIB * 1048576))
paths_create --port "tftp:udp:69::tftp"
CANDIDATES=(bpfnet "plain routing")
VARIANTS=(curl-512 curl-1468 atftp-1468-w16)
declare -A TITLE=([curl-512]="dnsmasq, curl, default block size (512)" [curl-1468]="dnsmasq, curl --tftp-blksize 1468"
    [atftp-1468-w16]="atftpd, atftp blksize 1468 windowsize 16")

SERVER_PID=""
# serve dnsmasq|atftpd: that TFTP server in the pod, on port 69, serving ROOT.
serve() {
    [ -z "$SERVER_PID" ] || stop_pid "$SERVER_PID"
    if [ "$1" = dnsmasq ]; then
        dnsmasq_run "$E2E_POD" "$E2E_TMP/dnsmasq" --enable-tftp --tftp-root="$ROOT" || die "$E2E_REASON"
        SERVER_PID=$DNSMASQ_PID
    else
        bg_in_ns "$E2E_POD" "$E2E_TMP/logs/atftpd.log" atftpd --daemon --no-fork --user root.root --port 69 \
            --logfile - "$ROOT"
        SERVER_PID=$BG_PID
    fi
    wait_for 5 ns_udp_listens "$E2E_POD" 69 || die "$1 does not listen on UDP 69 in the pod"
}

# fetch VARIANT NAME: one fetch; prints its seconds.
fetch() {
    local target=${PATH_TARGET[$2]} out=$E2E_TMP/dl/image t0 t1
    rm -f "$out"
    t0=$(date +%s.%N)
    case $1 in
    curl-512) host curl -sS --max-time 120 -o "$out" "tftp://$target/image" ;;
    curl-1468) host curl -sS --max-time 120 --tftp-blksize 1468 -o "$out" "tftp://$target/image" ;;
    atftp-1468-w16) host timeout 120 atftp --option "blksize 1468" --option "windowsize 16" -g -r image -l "$out" "$target" 69 >>"$E2E_TMP/logs/atftp.log" 2>&1 ;;
    esac
    t1=$(date +%s.%N)
    cmp -s "$out" "$ROOT/image" || return 1
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", b - a }'
}

declare -A SECONDS_TAKEN
for variant in "${VARIANTS[@]}"; do
    case $variant in
    curl-512) serve dnsmasq ;;
    atftp-*) serve atftpd ;;
    esac
    for name in "${CANDIDATES[@]}"; do # warm-up: caches, neighbours, the file in the page cache
        fetch "$variant" "$name" >/dev/null || die "$variant through $name: the fetch failed or the file differs"
    done
    for ((round = 0; round < ROUNDS; round++)); do
        for ((i = 0; i < ${#CANDIDATES[@]}; i++)); do
            name=${CANDIDATES[$(((i + round) % ${#CANDIDATES[@]}))]}
            took=$(fetch "$variant" "$name") || die "$variant through $name: the fetch failed or the file differs"
            SECONDS_TAKEN[$variant,$name]+="$took "
        done
    done
    log "$variant: $ROUNDS rounds done"
done

REPORT=$top/tests/bench/report.py
rm -f "$RESULTS_FILE"
for variant in "${VARIANTS[@]}"; do
    args=()
    for name in "${CANDIDATES[@]}"; do args+=(--series "$name=${SECONDS_TAKEN[$variant,$name]}"); done
    "$SYSTEM_PYTHON" "$REPORT" table "$RESULTS_FILE" tftp_fetch --title "TFTP fetch of a $SIZE_MIB MiB image: ${TITLE[$variant]}" \
        --unit s --better lower --baseline "plain routing" --paired "${args[@]}" \
        --notes "$ROUNDS rounds, the paths in alternating order; wall time of the client process, file compared after each fetch."
done
log "results in $RESULTS_FILE"
