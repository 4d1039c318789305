#!/usr/bin/env bash
# bpfnet demo: sets this machine up (Debian packages), builds bpfnet, and walks a simulated bare-metal host
# through the datapath to an "Ironic pod" in network namespaces, narrating each step and ending with the
# datapath's counters. Needs root. Everything happens inside a private sandbox (unshare --net --mount
# --pid) with addresses from 198.18.0.0/15; nothing touches this machine's interfaces, and the sandbox
# is removed on exit. Exits non-zero if any step fails.
#
#   host (bare-metal)  198.18.0.10 --- prov0 [node: no address, bpfnet XDP+TC] --- vethpod --- pod 198.18.100.2
#                                      service IP 198.18.0.2 exists only in the datapath
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
  cmake --build "$build" -j "$(nproc)" --target bpfnet-loader bpfnetctl xdp_pass_bpf >/dev/null
fi

export XDP_PASS_OBJ="$build/tests/e2e/xdp_pass.bpf.o"
LOADER="$build/loader/bpfnet-loader"
CTL="$build/cli/bpfnetctl"
# shellcheck source=../tests/e2e/lib.sh
source "$top/tests/e2e/lib.sh"
sandbox_reexec "$@"

step=0
say() { printf '\n\033[1m[%d] %s\033[0m\n' "$((++step))" "$*"; }
show() { printf '    %s\n' "$@"; }
fail() {
  printf '\n\033[31mFAILED: %s\033[0m\n' "$*"
  [ -n "${LOADER_LOG:-}" ] && tail -n 20 "$LOADER_LOG" | sed 's/^/    loader: /'
  exit 1
}
in_host() { ip netns exec "$E2E_HOST" "$@"; }
in_pod() { ip netns exec "$E2E_POD" "$@"; }
ctl() { nsenter --net="/run/netns/$E2E_NODE" "$CTL" --interface "$E2E_NIC" "$@"; }

say "Build the provisioning LAN in network namespaces"
topology_create >/dev/null
show "bare-metal host  $E2E_HOST_IP on the provisioning LAN" \
  "node             NIC $E2E_NIC with no IP address at all (no keepalived, no hostNetwork)" \
  "Ironic pod       $E2E_POD_IP on the pod network, behind vethpod"

say "Start the Ironic pod's servers (API-like HTTP on 8080, iperf3 on 5201)"
bg_in_ns "$E2E_POD" "$E2E_TMP/logs/http.log" python3 "$E2E_DIR/addr_server.py" 0.0.0.0 8080
bg_in_ns "$E2E_POD" "$E2E_TMP/logs/iperf.log" iperf3 -s
bg_in_ns "$E2E_HOST" "$E2E_TMP/logs/agent.log" python3 "$E2E_DIR/addr_server.py" 0.0.0.0 9999
show "and, on the host, a stand-in for the ramdisk agent on 9999"

say "Start bpfnet-loader (standalone mode) for service IP $E2E_SERVICE_IP"
config="$E2E_TMP/conf/bpfnet.yaml"
write_config "$config"
loader_start "$config" "$E2E_TMP/logs/loader.log" || fail "$E2E_REASON"
show "$(grep -o 'msg="xdp program on the NIC".*' "$LOADER_LOG" | head -1)"
show "$(grep -o 'msg="maps reconciled".*' "$LOADER_LOG" | head -1)"

say "The host asks who has $E2E_SERVICE_IP: XDP answers with the node NIC's MAC"
in_host ip neigh flush dev eth0 >/dev/null 2>&1 || true
in_host curl -s -m 3 -o /dev/null "http://$E2E_SERVICE_IP/" || fail "no HTTP answer through the service IP"
neigh=$(in_host ip neigh show "$E2E_SERVICE_IP" dev eth0)
show "host neighbour table: $neigh"
grep -q "$E2E_NIC_MAC" <<<"$neigh" || fail "the service IP does not resolve to the NIC's MAC"

say "HTTP from the host to http://$E2E_SERVICE_IP/ (port 80, translated to the pod's 8080)"
seen=$(in_host curl -s -m 3 "http://$E2E_SERVICE_IP/") || fail "curl failed"
show "the pod answered and saw the client address: $seen"
[ "$seen" = "$E2E_HOST_IP" ] || fail "the pod saw $seen, not the host's own address"

say "Bulk TCP through the datapath: iperf3 host -> pod, then pod -> host (-R), 3 s each"
for dir in "" "-R"; do
  out=$(in_host iperf3 -c "$E2E_SERVICE_IP" -t 3 $dir -f g 2>&1) || fail "iperf3 $dir failed: $out"
  show "${dir:-  } $(grep -E 'receiver$' <<<"$out" | awk '{print $7, $8}')"
done

say "The pod calls the ramdisk agent on the host ($E2E_HOST_IP:9999), as Ironic does"
seen=$(in_pod curl -s -m 5 "http://$E2E_HOST_IP:9999/") || fail "the pod could not reach the host"
show "the host saw the call come from: $seen (the service IP, not the pod)"
[ "$seen" = "$E2E_SERVICE_IP" ] || fail "the host saw $seen"

say "Anything else sent to the service IP is dropped in XDP (here: tcp port 22)"
if in_host curl -s -m 2 "telnet://$E2E_SERVICE_IP:22" </dev/null >/dev/null 2>&1; then
  fail "port 22 answered"
fi
show "no answer, as intended"

say "What the datapath saw: bpfnetctl status and stats"
ctl status | sed 's/^/    /'
echo
ctl stats | sed 's/^/    /'

say "Remove the datapath (bpfnet-loader --teardown)"
loader_stop
nsenter --net="/run/netns/$E2E_NODE" "$LOADER" --config "$config" --teardown 2>&1 | sed 's/^/    /'
printf '\n\033[32mdemo finished: every step passed\033[0m\n'
