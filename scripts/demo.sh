#!/usr/bin/env bash
# bpfnet demo: sets this machine up (Debian packages), builds bpfnet, and PXE-boots a simulated bare-metal
# host from an "Ironic pod" through bpfnet, narrating each step and ending with the datapath's counters.
# Needs root. Everything happens inside a private sandbox (unshare --net --mount --pid) with addresses
# from 198.18.0.0/15; nothing touches this machine's interfaces, and the sandbox is removed on exit.
# Exits non-zero if any step fails.
#
#   host (bare metal)  --- LAN ---  prov0 [node: no address; bpfnet XDP + TC]  ---  vethpod  ---  pod
#   PXE firmware, then                  service IP 198.18.0.2 exists only in       dnsmasq (DHCP, TFTP),
#   the Ironic ramdisk                  the datapath                               image server, Ironic
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build="$top/build"

if [ "${BPFNET_E2E_SANDBOX:-}" != 1 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "demo.sh: run as root (BPF programs and network namespaces need it)" >&2
    exit 1
  fi
  "$top/scripts/setup.sh"
  echo "== building bpfnet"
  cmake -S "$top" -B "$build" >/dev/null
  cmake --build "$build" -j "$(nproc)" --target bpfnet-loader bpfnetctl >/dev/null
fi

LOADER="$build/loader/bpfnet-loader"
CTL="$build/cli/bpfnetctl"
# shellcheck source=../tests/e2e/lib.sh
source "$top/tests/e2e/lib.sh"
# shellcheck source=../tests/e2e/dhcp.sh
source "$top/tests/e2e/dhcp.sh"
# shellcheck source=../tests/e2e/ironic.sh
source "$top/tests/e2e/ironic.sh"
# shellcheck source=../tests/e2e/pxe_walk.sh
source "$top/tests/e2e/pxe_walk.sh"
sandbox_reexec "$@"
set +e # each step reports its own failure

step=0
say() { printf '\n\033[1m[%d] %s\033[0m\n' "$((++step))" "$*"; }
show() { printf '    %s\n' "$@"; }
quiet() { "$@" >>"$E2E_TMP/logs/demo.log" 2>&1; }
fail() {
  printf '\n\033[31mFAILED: %s\033[0m\n' "$*"
  [ -n "${LOADER_LOG:-}" ] && grep -v 'level=debug' "$LOADER_LOG" | tail -n 10 | sed 's/^/    loader: /'
  exit 1
}
ctl() { nsenter --net="/run/netns/$E2E_NODE" "$CTL" --interface "$E2E_NIC" "$@"; }

say "Build a provisioning LAN in network namespaces"
quiet topology_create || fail "topology"
show "bare-metal host  MAC $E2E_HOST_MAC on the provisioning LAN" \
  "node             NIC $E2E_NIC with no IP address (no keepalived, no hostNetwork)" \
  "Ironic pod       $E2E_POD_IP on the pod network: dnsmasq (DHCP relayed, TFTP), image server, Ironic"

say "Start the pod's servers and bpfnet-loader (standalone) for service IP $E2E_SERVICE_IP"
quiet pxe_walk_setup || fail "$E2E_REASON"
show "$(grep -o 'msg="xdp program on the NIC".*' "$LOADER_LOG" | head -1)"
show "$(grep -o 'msg="maps reconciled".*' "$LOADER_LOG" | head -1)"
show "Ironic answers; node $IRONIC_NODE_UUID enrolled with the host's MAC"

say "PXE firmware: DHCP (broadcast DISCOVER, relayed by the datapath to dnsmasq in the pod)"
quiet walk_lease || fail "$E2E_REASON"
show "lease obtained: $WALK_IP" "server identifier $WALK_SERVER_ID, next server $WALK_NEXT_SERVER, boot file $WALK_BOOT_FILE"

say "PXE firmware: TFTP $WALK_BOOT_FILE from $WALK_NEXT_SERVER (server answers from an ephemeral port)"
quiet walk_tftp || fail "$E2E_REASON"
show "file fetched: $(stat -c %s "$WALK_DIR/fetched-$WALK_BOOT_FILE") bytes, identical to the server's"

say "iPXE: HTTP boot script and the ramdisk image from the image server"
quiet walk_http || fail "$E2E_REASON"
show "boot.ipxe and ironic-agent.img ($(stat -c %s "$WALK_DIR/fetched.img") bytes) fetched, identical"

say "Ramdisk: Ironic lookup by MAC through http://$E2E_SERVICE_IP:$IRONIC_PORT"
quiet walk_lookup || fail "$E2E_REASON"
show "Ironic answered: node $WALK_NODE, agent token ${WALK_TOKEN:0:6}..."
show "Ironic saw the caller as: $(ironic_log_client 'GET /v1/lookup' 2>/dev/null || echo '?')"

say "Ramdisk: heartbeat with the agent token"
quiet walk_heartbeat || fail "$E2E_REASON"
show "Ironic accepted the heartbeat (202)"

say "Ironic calls the agent on the host ($WALK_IP:$WALK_AGENT_PORT)"
quiet walk_agent_call || fail "$E2E_REASON"
show "the agent saw the call come from $WALK_AGENT_SAW: the service IP, not the pod"

say "Anything else sent to the service IP is dropped in XDP (here: tcp port 22)"
if host curl -s -m 2 "telnet://$E2E_SERVICE_IP:22" </dev/null >/dev/null 2>&1; then
  fail "port 22 answered"
fi
show "no answer, as intended"

say "What the datapath saw: bpfnetctl status and stats"
ctl status | sed 's/^/    /'
echo
ctl stats | awk '$2 != 0' | sed 's/^/    /'
show "(counters that stayed 0 are not shown)"

say "Remove the datapath (bpfnet-loader --teardown)"
loader_stop
nsenter --net="/run/netns/$E2E_NODE" "$LOADER" --config "$WALK_CONFIG" --teardown 2>&1 | sed 's/^/    /'
printf '\n\033[32mdemo finished: the host PXE-booted and met Ironic through the service IP\033[0m\n'
