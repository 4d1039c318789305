#!/usr/bin/env bash
# Scale: the flows and neighbours tables at 10, 1,000 and 100,000 entries (100,000 is more than either
# holds: 65,536 flows, 4,096 neighbours; the LRU keeps the newest).
#   per-packet cost   bench_path_cost --scale: the paths that look up or record entries, three copies of the
#                     datapath side by side, one per size (BPF_PROG_TEST_RUN)
#   the loader        a running standalone loader whose pinned tables bench_fill_tables fills to each size in
#                     turn (rotating order): its resident memory after a /metrics scrape (the scrape counts
#                     both tables), the scrape's time, and `bpfnetctl flows -o json`'s time and peak memory
# The kernel's memory for the two tables does not depend on the entries (LRU hashes are preallocated);
# bpftool's figure for it is in the notes. Not a test: it fails only if a run could not be made.
# Needs root; sandboxes itself.
#
#   scale.sh [ROUNDS] [RESULTS_FILE]     (defaults 5, ./scale.json)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-5}
RESULTS_FILE=$(realpath -m "${2:-scale.json}")
BUILD=${BUILD:-$top/build}
LOADER=$BUILD/loader/bpfnet-loader
BPFNETCTL=$BUILD/cli/bpfnetctl
FILL=$BUILD/tests/bench/bench_fill_tables
PATH_COST=$BUILD/tests/bench/bench_path_cost
# shellcheck source=../e2e/lib.sh
source "$top/tests/e2e/lib.sh"
for tool in "$BPFNETCTL" "$FILL" "$PATH_COST"; do
    [ -x "$tool" ] || { echo "scale: $tool is not built" >&2; exit 2; }
done
sandbox_reexec "$@"

"$PATH_COST" --scale --rounds "$((ROUNDS * 4))" --runs 1000 --json "$RESULTS_FILE" || die "bench_path_cost --scale failed"
log "per-packet cost by table size done"

METRICS=127.0.0.1:9394
topology_create >/dev/null
write_config "$E2E_TMP/conf/bpfnet.yaml"
loader_start "$E2E_TMP/conf/bpfnet.yaml" "$E2E_TMP/logs/loader.log" --metrics-address "$METRICS" >/dev/null ||
    die "$E2E_REASON"
node() { ip netns exec "$E2E_NODE" "$@"; }

rss_mib() { awk '/^VmRSS:/ { printf "%.2f\n", $2 / 1024 }' "/proc/$LOADER_PID/status"; }
scrape_ms() {
    node curl -sS -o "$E2E_TMP/metrics" -w '%{time_total}\n' --max-time 30 "http://$METRICS/metrics" |
        awk '{ printf "%.2f\n", $1 * 1000 }'
}
# ctl_flows: "MS MIB" of one `bpfnetctl flows -o json`: wall time, and peak RSS from GNU time (in KiB).
ctl_flows() {
    local t0=$EPOCHREALTIME t1
    /usr/bin/time -f '%M' -o "$E2E_TMP/time" "$BPFNETCTL" -o json flows >"$E2E_TMP/flows.json" || return 1
    t1=$EPOCHREALTIME
    awk -v a="$t0" -v b="$t1" '{ printf "%.1f %.2f\n", (b - a) * 1000, $1 / 1024 }' "$E2E_TMP/time"
}

SIZES=(10 1000 100000)
declare -A NAME=([10]="10 entries" [1000]="1,000 entries" [100000]="100,000 offered (tables full)")
declare -A RSS SCRAPE CTL_MS CTL_MIB HELD
for ((round = 0; round < ROUNDS; round++)); do
    for ((i = 0; i < ${#SIZES[@]}; i++)); do
        size=${SIZES[$(((i + round) % ${#SIZES[@]}))]}
        HELD[$size]=$("$FILL" "$E2E_PIN_DIR" "$size") || die "bench_fill_tables $size failed"
        scrape_ms >/dev/null || die "no /metrics answer"
        grep -q "^bpfnet_flows " "$E2E_TMP/metrics" || die "/metrics has no bpfnet_flows"
        SCRAPE[$size]+="$(scrape_ms) "
        RSS[$size]+="$(rss_mib) "
        read -r ms mib < <(ctl_flows) || die "bpfnetctl flows failed"
        CTL_MS[$size]+="$ms "
        CTL_MIB[$size]+="$mib "
    done
    log "loader round $((round + 1))/$ROUNDS done"
done
memlock=$(bpftool -j map show pinned "$E2E_PIN_DIR/flows" | "$SYSTEM_PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["bytes_memlock"])')
memlock_n=$(bpftool -j map show pinned "$E2E_PIN_DIR/neighbours" | "$SYSTEM_PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["bytes_memlock"])')
held="Entries held (flows neighbours):"
for size in "${SIZES[@]}"; do held+=" ${NAME[$size]}: ${HELD[$size]};"; done
kernel="Kernel memory of the tables (bpftool bytes_memlock), whatever the entries: flows $((memlock / 1024)) KiB, neighbours $((memlock_n / 1024)) KiB."

REPORT=$top/tests/bench/report.py
# table METRIC TITLE UNIT NOTES
table() {
    local -n values=$1
    local args=() size
    for size in "${SIZES[@]}"; do args+=(--series "${NAME[$size]}=${values[$size]}"); done
    "$SYSTEM_PYTHON" "$REPORT" table "$RESULTS_FILE" scale --title "$2" --unit "$3" --better lower \
        --baseline "${NAME[10]}" --paired "${args[@]}" --notes "$4"
}
table RSS "Loader resident memory after a /metrics scrape, by table size" MiB "$ROUNDS rounds, sizes in rotating order. $held $kernel"
table SCRAPE "/metrics scrape (counts both tables), by table size" ms "$ROUNDS rounds; curl's total time from the node's namespace."
table CTL_MS "bpfnetctl -o json flows, by table size" ms "$ROUNDS rounds; wall time of the command, its JSON to a file."
table CTL_MIB "bpfnetctl -o json flows: peak memory, by table size" MiB "$ROUNDS rounds; peak resident memory (GNU time)."
log "results in $RESULTS_FILE"
