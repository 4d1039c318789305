#!/usr/bin/env bash
# The whole walk in one test, as a ramdisk would do it, every step through the service IP (pxe_walk.sh):
# DHCP lease -> TFTP boot file -> HTTP boot script and image -> Ironic lookup -> heartbeat -> Ironic calls
# the agent on the host. Each step is a case; a step runs only if the previous ones passed.
#
#   test_pxe_walk.sh LOADER [--case KEY]... | --list
#   env: WALK_FAMILIES  "4" (default), "6" (an IPv6-only LAN) or "4 6" (dual stack: both walks); pxe_walk.sh
#        E2E_CNI        how the pod is wired: routed (default), bridge, cilium or ovs (lib.sh)
#        E2E_POD_DELIVERY  auto (default) or route: the backend's delivery (lib.sh)
set -u

# shellcheck source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"
# shellcheck source=dhcp.sh
source "$E2E_DIR/dhcp.sh"
# shellcheck source=ironic.sh
source "$E2E_DIR/ironic.sh"
# shellcheck source=pxe_walk.sh
source "$E2E_DIR/pxe_walk.sh"

# The steps, in order (lib.sh, "The case list"): `--case STEP` runs the walk up to STEP. With both families,
# the IPv6 walk follows the IPv4 one.
e2e_fixture walk_world walk_setup
if walk_has 4; then
    e2e_step lease walk_lease "1. DHCP lease through the relay: server id, next server and boot file are the service IP's" walk_world
    e2e_step tftp walk_tftp "2. TFTP boot file from the next server, byte for byte" walk_world
    e2e_step http walk_http "3. HTTP boot script and image from the image server, byte for byte" walk_world
    e2e_step lookup walk_lookup "4. Ironic lookup by MAC returns the node and its agent token" walk_world
    e2e_step heartbeat walk_heartbeat "5. heartbeat with the token is accepted (202)" walk_world
    e2e_step agent_call walk_agent_call "6. the pod calls the agent on the host and is seen as the service IP" walk_world
fi
if walk_has 6; then
    e2e_step walk6_lease walk6_lease "1v6. DHCPv6 lease through the relay: an address of the range, boot file URL on the service address" walk_world
    e2e_step walk6_tftp walk6_tftp "2v6. TFTP boot file from the URL's server, byte for byte" walk_world
    e2e_step walk6_http walk6_http "3v6. HTTP boot script and image from the service address, byte for byte" walk_world
    e2e_step walk6_lookup walk6_lookup "4v6. Ironic lookup by MAC over IPv6 returns the node; Ironic saw the host's address" walk_world
    e2e_step walk6_heartbeat walk6_heartbeat "5v6. heartbeat over IPv6, callback URL on the host's IPv6 address, is accepted (202)" walk_world
    e2e_step walk6_agent_call walk6_agent_call "6v6. the pod calls the agent over IPv6 and is seen as the service address" walk_world
fi
e2e_step move walk_move "7. the pod made again on a new veth (a move): lease, image, heartbeat and agent call through it" walk_world
if [ "$E2E_POD_DELIVERY" = route ]; then
    e2e_step route_delivery walk_route_delivery "8. delivered through the node's routing: the image's packets went out of the pod network's device, and status says so" walk_world
fi
if [ "${E2E_CNI:-routed}" = cilium ]; then
    e2e_step cni_programs walk_cni_programs "8. the CNI's own programs on the pod's veth and the NIC still see what bpfnet hands on" walk_world
fi

e2e_start "$@"
bpfnetctl_argument

skip_unless dhcp_available ironic_available cni_available

walk_setup() {
    topology_create
    pxe_walk_setup || die "set-up failed: $E2E_REASON"
}

run_cases
finish
