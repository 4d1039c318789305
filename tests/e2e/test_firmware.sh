#!/usr/bin/env bash
# A real PXE firmware boots from the network through the service IP. A QEMU guest (TCG, SeaBIOS, Debian's
# iPXE ROM for virtio-net from ipxe-qemu) sits on a tap device in the LAN bridge, as a VM host's bare-metal
# stand-ins do in metal3-dev-env. Its firmware takes a DHCP lease (relayed), fetches an iPXE script over
# TFTP, loads a Linux kernel and ramdisk over HTTP from the image server, and the booted ramdisk calls
# Ironic's lookup and heartbeat as the agent does (tests/vm/agent-init.sh), every step to the service IP.
# Each stage is a case, reported with the seconds since the guest was started.
#
# With FIRMWARE_FAMILY=6 the LAN is IPv6 only (lan6.sh, as e2e_pxe_walk_ipv6's): the loader's router
# advertisement says "ask DHCPv6", iPXE takes a DHCPv6 lease through the relay with the boot file URL (option 59,
# tftp://[service address]/boot.ipxe), fetches the script over TFTP and the kernel and ramdisk over HTTP, all
# from the service's IPv6 address. The booted ramdisk's steps stay IPv4 only: Debian's busybox has no DHCPv6
# client (the ramdisk's IPv6 lookup and heartbeat are e2e_pxe_walk_ipv6's, with dhclient -6 and real Ironic).
#
#   usage: test_firmware.sh PATH/TO/bpfnet-loader [--case KEY]... | --list   (as root; it sandboxes itself, see lib.sh)
#   env:   FIRMWARE_FAMILY    4 (default) or 6: the LAN's family
#          FIRMWARE_BOOT_DIR  vmlinuz and initrd.img to serve (default: tests/vm/run.sh --agent-ramdisk
#                             builds them from the newest Debian 6.12 kernel, cached in /var/cache/bpfnet-vm)
#          E2E_KEEP_TMP       keep the temporary directory (console log, server logs)
#
# Cases are called through run_cases (the case list), which shellcheck cannot see.
# shellcheck disable=SC2317
set -uo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"
# shellcheck source=dhcp.sh
source "$E2E_DIR/dhcp.sh"
# shellcheck source=ironic.sh
source "$E2E_DIR/ironic.sh"
# shellcheck source=lan6.sh
source "$E2E_DIR/lan6.sh"
FIRMWARE_FAMILY=${FIRMWARE_FAMILY:-4}

# The steps of the boot, in order, from the guest started (lib.sh, "The case list"): `--case STEP` runs the
# boot up to STEP.
e2e_fixture guest firmware_guest
if [ "$FIRMWARE_FAMILY" = 6 ]; then
    e2e_step dhcp6 case_dhcp6 "firmware: DHCPv6 lease through the relay (iPXE), after the loader's router advertisement" guest
    e2e_step tftp6 case_tftp6 "firmware: iPXE script over TFTP from the service's IPv6 address" guest
    e2e_step http_kernel6 case_http_kernel6 "firmware: kernel over HTTP from the image server, over IPv6" guest
    e2e_step http_ramdisk6 case_http_ramdisk6 "firmware: ramdisk over HTTP from the image server, over IPv6" guest
else
    e2e_step dhcp case_dhcp "firmware: DHCP lease through the relay (iPXE)" guest
    e2e_step tftp case_tftp "firmware: iPXE script over TFTP from the service IP" guest
    e2e_step http_kernel case_http_kernel "firmware: kernel over HTTP from the image server" guest
    e2e_step http_ramdisk case_http_ramdisk "firmware: ramdisk over HTTP from the image server" guest
    e2e_step agent_lease case_agent_lease "booted ramdisk: DHCP lease" guest
    e2e_step agent_lookup case_agent_lookup "booted ramdisk: Ironic lookup by MAC through the service IP" guest
    e2e_step agent_heartbeat case_agent_heartbeat "booted ramdisk: heartbeat accepted, from the guest's address" guest
fi

loader_argument "$@"

# The ROM QEMU gives virtio-net-pci by default, from ipxe-qemu: iPXE with a legacy PXE (BIOS) image and an
# EFI one. Left to QEMU to load: named with romfile=, the same file (or pxe-virtio.rom) sent nothing from a
# q35 guest here.
ROM=/usr/lib/ipxe/qemu/efi-virtio.rom
# The kernel and ramdisk are made before the sandbox: the first run downloads a Debian kernel package.
if [ "${BPFNET_E2E_SANDBOX:-}" != 1 ] && [ -z "${FIRMWARE_BOOT_DIR:-}" ] && [ "$(id -u)" = 0 ]; then
    export FIRMWARE_BOOT_DIR=${BPFNET_VM_CACHE:-/var/cache/bpfnet-vm}/agent-boot
    "$E2E_REPO/tests/vm/run.sh" --agent-ramdisk "$FIRMWARE_BOOT_DIR" >&2 ||
        { echo "e2e: cannot build the agent ramdisk (tests/vm/run.sh --agent-ramdisk); skipped" >&2; exit 77; }
fi

sandbox_reexec "$@"

require_tools qemu-system-x86_64 dnsmasq python3 curl
skip_unless dhcp_available ironic_available
[ -f "$ROM" ] || skip_suite "no iPXE ROM at $ROM (ipxe-qemu)"
for f in vmlinuz initrd.img; do
    [ -f "$FIRMWARE_BOOT_DIR/$f" ] || die "$FIRMWARE_BOOT_DIR/$f is missing"
done

GUEST_MAC=52:54:00:be:ef:01
TAP=tap-fw
IMAGE_PORT=6180
AGENT_PORT=9999
FW=$E2E_TMP/firmware
CONSOLE=$FW/console.log
GUEST_PID=""
GUEST_T0=""

# ---------------------------------------------------------------------------------------------------
# The servers of the Ironic pod and the guest

# boot_files ADDRESS HOST: the iPXE script iPXE runs (the kernel and ramdisk from the image server at HOST,
# the service ADDRESS for the agent) over TFTP, and the kernel and ramdisk for the image server.
boot_files() {
    mkdir -p "$FW/tftp" "$FW/images"
    DHCP_TFTP_ROOT=$FW/tftp
    DHCP_BOOT_FILE=boot.ipxe
    printf '#!ipxe\nkernel http://%s:%s/vmlinuz console=ttyS0 panic=-1 quiet bpfnet.service=%s bpfnet.agent_port=%s\ninitrd http://%s:%s/initrd.img\nboot\n' \
        "$2" "$IMAGE_PORT" "$1" "$AGENT_PORT" "$2" "$IMAGE_PORT" >"$FW/tftp/boot.ipxe"
    cp "$FIRMWARE_BOOT_DIR/vmlinuz" "$FIRMWARE_BOOT_DIR/initrd.img" "$FW/images/"
    chmod -R o+rX "$FW"
    chmod o+x "$E2E_TMP"
}

firmware_setup() {
    [ "$FIRMWARE_FAMILY" = 6 ] && { firmware_setup6; return; }
    boot_files "$E2E_SERVICE_IP" "$E2E_SERVICE_IP"

    dnsmasq_start "$E2E_POD" "$FW/dnsmasq" || return 1
    bg_in_ns "$E2E_POD" "$FW/images.log" setpriv --reuid=65534 --regid=65534 --clear-groups \
        /usr/bin/python3 -m http.server "$IMAGE_PORT" --bind 0.0.0.0 --directory "$FW/images"
    ironic_start "$E2E_POD" "$FW/ironic" || return 1
    write_config --port dhcp:udp:67:67:dhcp --port tftp:udp:69:69:tftp --port ironic-api:tcp:6385 \
        --port images:tcp:"$IMAGE_PORT" "$E2E_TMP/conf/firmware.yaml"
    loader_start "$E2E_TMP/conf/firmware.yaml" "$E2E_TMP/logs/loader.log" || return 1
    ironic_wait 40 || return 1
    ironic_create_node "$GUEST_MAC" firmware-host || return 1
    guest_tap
}

# The guest's NIC: a tap device, a port of the LAN bridge like every host's.
guest_tap() {
    local lan
    lan=$(lan_bridge_ns)
    ip -n "$lan" tuntap add dev "$TAP" mode tap || die "tap device"
    ip -n "$lan" link set "$TAP" master "$E2E_BRIDGE" up || die "tap into the bridge"
    lan_port_vlan "$lan" "$TAP" access
}

# The IPv6-only LAN: the pod's IPv6 address, dnsmasq's DHCPv6 with the boot file URL and TFTP, the image
# server on both families, the loader with serviceIPv6 and router advertisements. No Ironic: the ramdisk's
# steps are not run over IPv6 (above).
firmware_setup6() {
    boot_files "$LAN6_SERVICE" "[$LAN6_SERVICE]"
    lan6_pod_address || return 1
    lan6_dnsmasq_start "$FW/dnsmasq" || return 1
    bg_in_ns "$E2E_POD" "$FW/images.log" setpriv --reuid=65534 --regid=65534 --clear-groups \
        /usr/bin/python3 -m http.server "$IMAGE_PORT" --bind :: --directory "$FW/images"
    lan6_write_config "$E2E_TMP/conf/firmware.yaml" "$IMAGE_PORT"
    loader_start "$E2E_TMP/conf/firmware.yaml" "$E2E_TMP/logs/loader.log" || return 1
    guest_tap
}

guest_start() {
    local lan
    lan=$(lan_bridge_ns)
    GUEST_T0=$(date +%s.%N)
    bg_in_ns "$lan" "$FW/qemu.log" qemu-system-x86_64 -machine q35 -accel tcg -cpu max -m 512 -smp 1 \
        -display none -no-reboot -monitor none -serial "file:$CONSOLE" \
        -netdev "tap,id=lan,ifname=$TAP,script=no,downscript=no" \
        -device "virtio-net-pci,netdev=lan,mac=$GUEST_MAC" -boot n
    GUEST_PID=$BG_PID
    log "guest $GUEST_PID booting from the network (SeaBIOS, $(basename "$ROM")), MAC $GUEST_MAC"
}

# stage_seen FILE PATTERN: PATTERN is in FILE (a server's log, the guest's console).
stage_seen() { grep -qE "$2" "$1" 2>/dev/null; }

# stage LABEL SECONDS FILE PATTERN: waits until PATTERN shows in FILE; logs when, since the guest started.
STAGE_AT=""
stage() {
    local label=$1 seconds=$2 file=$3 pattern=$4
    if ! wait_for "$seconds" stage_seen "$file" "$pattern"; then
        if pid_gone "$GUEST_PID"; then
            E2E_REASON="$label: the guest stopped first (console: $(tail -c 400 "$CONSOLE" | tr -d '\r' | tr '\n' ' '))"
        else
            E2E_REASON="$label: not seen within $seconds s (console: $(tail -c 300 "$CONSOLE" | tr -d '\r' | tr '\n' ' '))"
        fi
        return 1
    fi
    STAGE_AT=$(since "$GUEST_T0")
    log "stage $label at ${STAGE_AT} s"
}

# The agent's report line of STEP on the console: "AGENT STEP ok|fail UPTIME DETAIL".
agent_step() {
    local step=$1 seconds=$2 line
    stage "agent $step" "$seconds" "$CONSOLE" "^AGENT $step (ok|fail)" || return 1
    line=$(grep -m1 -E "^AGENT $step " "$CONSOLE" | tr -d '\r')
    if [[ $line != "AGENT $step ok"* ]]; then
        E2E_REASON="the ramdisk reported: $line"
        return 1
    fi
    log "$line"
}

# ---------------------------------------------------------------------------------------------------
# Stages

case_dhcp() {
    if ! stage "DHCP lease" 60 "$FW/dnsmasq/dnsmasq.log" "DHCPACK.*$GUEST_MAC"; then
        E2E_REASON+="; from the guest's tap: $(ip -n "$(lan_bridge_ns)" -s link show "$TAP" | awk '/RX:/ { getline; print $2 " packets" }'), dhcp_request_relayed $(counter dhcp_request_relayed), drop_not_allowed $(counter drop_not_allowed)"
        return 1
    fi
    local relayed
    relayed=$(counter dhcp_request_relayed)
    [ "$relayed" -ge 2 ] || {
        E2E_REASON="the lease was acknowledged but dhcp_request_relayed is $relayed"
        return 1
    }
}
# iPXE identifies itself by a DUID of its own, not its MAC: the guest is the only DHCPv6 client on this LAN.
case_dhcp6() {
    if ! stage "DHCPv6 lease" 120 "$FW/dnsmasq/dnsmasq.log" "DHCPREPLY\(.*${LAN6_RANGE_FIRST%??}"; then
        E2E_REASON+="; dhcp6_request_relayed $(counter dhcp6_request_relayed), dhcp6_reply_relayed $(counter dhcp6_reply_relayed)"
        return 1
    fi
    log "$(grep -m1 -E 'DHCPREPLY\(' "$FW/dnsmasq/dnsmasq.log" | sed 's/^.*dnsmasq-dhcp[^:]*: //')"
}
case_tftp() { stage "TFTP boot.ipxe" 30 "$FW/dnsmasq/dnsmasq.log" "sent .*boot\.ipxe"; }
case_http_kernel() { stage "HTTP kernel" 30 "$FW/images.log" '"GET /vmlinuz HTTP/1\.[01]" 200'; }
case_http_ramdisk() { stage "HTTP ramdisk" 60 "$FW/images.log" '"GET /initrd\.img HTTP/1\.[01]" 200'; }
# The IPv6 walk's steps (their own names: `--case` selects steps by name).
case_tftp6() { case_tftp; }
case_http_kernel6() { case_http_kernel; }
case_http_ramdisk6() { case_http_ramdisk; }
case_agent_lease() { agent_step lease 120; }
case_agent_lookup() { agent_step lookup 30; }
case_agent_heartbeat() {
    agent_step heartbeat 30 || return 1
    # Ironic took it from the guest's own address (the client address is kept through the service IP), and
    # its conductor handled it (fake hardware then says it does not act on heartbeats).
    local leased client
    leased=$(grep -m1 '^AGENT lease ok' "$CONSOLE" | grep -oE 'ip=[0-9.]+' | cut -d= -f2)
    client=$(ironic_log_client "\"POST /v1/heartbeat/$IRONIC_NODE_UUID ")
    if [ -z "$leased" ] || [ "$client" != "$leased" ]; then
        E2E_REASON="Ironic logged the heartbeat from '$client', the guest leased '$leased'"
        return 1
    fi
    if ! grep -q "heartbeat message from node $IRONIC_NODE_UUID" "$IRONIC_LOG"; then
        E2E_REASON="Ironic's conductor did not see the heartbeat of node $IRONIC_NODE_UUID"
        return 1
    fi
    log "Ironic logged the heartbeat from the guest's address $client"
}

firmware_guest() {
    topology_create
    firmware_setup || die "set-up failed: $E2E_REASON"
    guest_start
}

run_cases
log "guest console: $CONSOLE"
finish
