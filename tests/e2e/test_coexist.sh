#!/bin/bash
# bpfnet's XDP program next to another XDP program on the same NIC, through libxdp's multi-program
# dispatcher: another program is loaded on prov0 first (xdp-loader), then the loader attaches bpfnet's into
# the same dispatcher; both stay attached, the service IP is answered and steered, and bpfnet's teardown
# leaves the other program in place. Where the kernel cannot load the dispatcher (freplace refused, as on
# the build machines' 6.18), the test is skipped (exit 77) with libxdp's reason; the kernel matrix
# (tests/vm/run.sh) runs it on kernels that can.
#
#   usage: test_coexist.sh PATH/TO/bpfnet-loader [--case KEY]... | --list   (as root; it sandboxes itself, see lib.sh)
# shellcheck disable=SC2317
set -uo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"

# The cases, in the order of a full run, with what each starts from (lib.sh, "The case list").
e2e_fixture world other_program_loaded
e2e_case coexist case_coexist "a. bpfnet's XDP program joins another one in libxdp's dispatcher; the service IP works" world
e2e_case teardown_keeps_the_other case_teardown_keeps_the_other "b. bpfnet's teardown removes only its own program" case:coexist

e2e_start "$@"

require_tools xdp-loader curl python3 nsenter


node_xdp() { nsenter --net="/run/netns/$E2E_NODE" xdp-loader "$@"; }

# The topology and the pod's server, and another tool's XDP program on the NIC through libxdp's dispatcher;
# the suite is skipped where the dispatcher does not load.
other_program_loaded() {
    local obj status reason
    topology_create
    bg_in_ns "$E2E_POD" "$LOGS/pod-http.log" python3 "$E2E_DIR/addr_server.py" 0.0.0.0 8080
    wait_for 10 pod curl -s -o /dev/null --max-time 1 http://127.0.0.1:8080/ || die "pod HTTP server did not start"

    # The other program first, as another tool on the node would have loaded it.
    obj=$(xdp_pass_object) || die "no xdp_pass object"
    node_xdp load -m native "$E2E_NIC" "$obj" >"$LOGS/xdp-loader.log" 2>&1 || die "xdp-loader load: $(cat "$LOGS/xdp-loader.log")"
    status=$(node_xdp status "$E2E_NIC" 2>&1)
    if ! grep -q xdp_dispatcher <<<"$status"; then
        reason=$(grep -iE 'dispatcher|freplace|fall' "$LOGS/xdp-loader.log" | head -n1 | tr -s ' ')
        echo "e2e: libxdp's dispatcher does not load on kernel $(uname -r): ${reason:-plain attach}; skipped" >&2
        exit 77
    fi
    log "another XDP program on $E2E_NIC through the dispatcher"
}

case_coexist() {
    write_config "$CONFIG"
    loader_start "$CONFIG" "$LOGS/loader.log" || return 1
    grep -q 'via libxdp dispatcher' "$LOGS/loader.log" ||
        { E2E_REASON="the loader did not join the dispatcher: $(grep -m1 'xdp program' "$LOGS/loader.log")"; return 1; }
    local status
    status=$(node_xdp status "$E2E_NIC" 2>&1)
    grep -q xdp_pass <<<"$status" && grep -q xdp_nic <<<"$status" ||
        { E2E_REASON="not both programs on $E2E_NIC: $status"; return 1; }
    wait_for 5 service_reachable || { E2E_REASON="the host does not reach the service IP"; return 1; }
    log "both programs attached; the service IP answered and steered"
}

case_teardown_keeps_the_other() {
    # From: bpfnet's program in the dispatcher beside the other one (case coexist, its need in the case list).
    loader_stop
    run_loader --config "$CONFIG" --teardown >"$LOGS/teardown.log" 2>&1 || { E2E_REASON="teardown failed"; return 1; }
    local status
    status=$(node_xdp status "$E2E_NIC" 2>&1)
    grep -q xdp_pass <<<"$status" || { E2E_REASON="teardown removed the other program: $status"; return 1; }
    grep -q xdp_nic <<<"$status" && { E2E_REASON="bpfnet's program is still attached: $status"; return 1; }
    return 0
}

run_cases

finish
