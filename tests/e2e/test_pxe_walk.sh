#!/usr/bin/env bash
# The whole walk in one test, as a ramdisk would do it, every step through the service IP (pxe_walk.sh):
# DHCP lease -> TFTP boot file -> HTTP boot script and image -> Ironic lookup -> heartbeat -> Ironic calls
# the agent on the host. Each step is a case; a step runs only if the previous ones passed.
#
#   test_pxe_walk.sh LOADER [--case NAME]...
#   env: WALK_FAMILIES  "4" (default), "6" (an IPv6-only LAN) or "4 6" (dual stack: both walks); pxe_walk.sh
set -u

# shellcheck source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"
# shellcheck source=dhcp.sh
source "$E2E_DIR/dhcp.sh"
# shellcheck source=ironic.sh
source "$E2E_DIR/ironic.sh"
# shellcheck source=pxe_walk.sh
source "$E2E_DIR/pxe_walk.sh"
e2e_start "$@"

for check in dhcp_available ironic_available; do
    if ! "$check"; then
        echo "e2e: $E2E_REASON; skipped" >&2
        exit 77
    fi
done

topology_create
pxe_walk_setup || die "set-up failed: $E2E_REASON"

if walk_has 4; then
    run_step "1. DHCP lease through the relay: server id, next server and boot file are the service IP's" walk_lease
    run_step "2. TFTP boot file from the next server, byte for byte" walk_tftp
    run_step "3. HTTP boot script and image from the image server, byte for byte" walk_http
    run_step "4. Ironic lookup by MAC returns the node and its agent token" walk_lookup
    run_step "5. heartbeat with the token is accepted (202)" walk_heartbeat
    run_step "6. the pod calls the agent on the host and is seen as the service IP" walk_agent_call
fi
if walk_has 6; then
    run_step "1v6. DHCPv6 lease through the relay: an address of the range, boot file URL on the service address" walk6_lease
    run_step "2v6. TFTP boot file from the URL's server, byte for byte" walk6_tftp
    run_step "3v6. HTTP boot script and image from the service address, byte for byte" walk6_http
    run_step "4v6. Ironic lookup by MAC over IPv6 returns the node; Ironic saw the host's address" walk6_lookup
    run_step "5v6. heartbeat over IPv6, callback URL on the host's IPv6 address, is accepted (202)" walk6_heartbeat
    run_step "6v6. the pod calls the agent over IPv6 and is seen as the service address" walk6_agent_call
fi
finish
