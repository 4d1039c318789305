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
# With FIRMWARE_BOOT=uefi-pxe or uefi-http the guest boots UEFI firmware (EDK2's OVMF, Debian's ovmf, Metal3's
# default boot mode) with its own network stack: the NIC has no option ROM, so the firmware's own DHCP, TFTP
# and HTTP clients meet the datapath. It chains the EFI iPXE that ironic-image serves (snponly.efi, Debian's
# ipxe), which takes its own lease and goes on as above. uefi-pxe: the firmware's PXE (DHCP with client
# architecture 7, or DHCPv6 with the boot file URL; snponly.efi over TFTP); uefi-http: UEFI HTTP Boot (IPv4;
# vendor class HTTPClient, the boot file a URL, snponly.efi over HTTP from the image server). dnsmasq is set up
# as ironic-image sets it for these clients (docs/ironic-pod.md, "UEFI").
#
#   usage: test_firmware.sh PATH/TO/bpfnet-loader [--case KEY]... | --list   (as root; it sandboxes itself, see lib.sh)
#   env:   FIRMWARE_FAMILY    4 (default) or 6: the LAN's family
#          FIRMWARE_BOOT      bios (default: SeaBIOS and the NIC's iPXE ROM), uefi-pxe or uefi-http (OVMF)
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
FIRMWARE_BOOT=${FIRMWARE_BOOT:-bios}
case $FIRMWARE_FAMILY/$FIRMWARE_BOOT in
[46]/bios | [46]/uefi-pxe | [46]/uefi-http) ;;
*)
    echo "test_firmware.sh: FIRMWARE_FAMILY=$FIRMWARE_FAMILY FIRMWARE_BOOT=$FIRMWARE_BOOT is not a walk (4 or 6; bios, uefi-pxe or uefi-http)" >&2
    exit 2
    ;;
esac
e2e_fixture guest firmware_guest
# The UEFI firmware's own steps, before the iPXE it chains takes over.
if [ "$FIRMWARE_BOOT" = uefi-pxe ] && [ "$FIRMWARE_FAMILY" = 6 ]; then
    e2e_step uefi_dhcp6 case_uefi_dhcp6 "UEFI firmware: DHCPv6 lease through the relay with the boot file URL (PXEClient)" guest
    e2e_step uefi_tftp6 case_uefi_tftp "UEFI firmware: snponly.efi over TFTP from the service's IPv6 address" guest
elif [ "$FIRMWARE_BOOT" = uefi-pxe ]; then
    e2e_step uefi_dhcp case_uefi_dhcp "UEFI firmware: DHCP lease through the relay (PXEClient, architecture 7)" guest
    e2e_step uefi_tftp case_uefi_tftp "UEFI firmware: snponly.efi over TFTP from the service IP" guest
elif [ "$FIRMWARE_BOOT" = uefi-http ] && [ "$FIRMWARE_FAMILY" = 6 ]; then
    e2e_step uefi_http_dhcp6 case_uefi_http_dhcp6 "UEFI HTTP Boot: DHCPv6 lease through the relay with the boot URL (HTTPClient), from Kea" guest
    e2e_step uefi_http_nbp6 case_uefi_http_nbp "UEFI HTTP Boot: snponly.efi over HTTP from the image server, over IPv6" guest
elif [ "$FIRMWARE_BOOT" = uefi-http ]; then
    e2e_step uefi_http_dhcp case_uefi_http_dhcp "UEFI HTTP Boot: DHCP lease through the relay with the boot URL (HTTPClient)" guest
    e2e_step uefi_http_nbp case_uefi_http_nbp "UEFI HTTP Boot: snponly.efi over HTTP from the image server" guest
fi
if [ "$FIRMWARE_FAMILY/$FIRMWARE_BOOT" = 6/uefi-http ]; then
    # Kea's walk: iPXE is given its script as a URL on the image server, as ironic-image does over IPv6.
    e2e_step dhcp6 case_kea_dhcp6 "firmware: DHCPv6 lease through the relay (iPXE), from Kea" guest
    e2e_step http_script6 case_http_script "firmware: iPXE script over HTTP from the image server, over IPv6" guest
    e2e_step http_kernel6 case_http_kernel6 "firmware: kernel over HTTP from the image server, over IPv6" guest
    e2e_step http_ramdisk6 case_http_ramdisk6 "firmware: ramdisk over HTTP from the image server, over IPv6" guest
elif [ "$FIRMWARE_FAMILY" = 6 ]; then
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
# The UEFI walks: OVMF's code (read-only) and a copy of its variable store per guest, and the EFI iPXE that
# ironic-image chains (snponly.efi: it drives the NIC through the firmware's SNP protocol, as on hardware).
OVMF_CODE=/usr/share/OVMF/OVMF_CODE_4M.fd
OVMF_VARS=/usr/share/OVMF/OVMF_VARS_4M.fd
SNPONLY=/usr/lib/ipxe/snponly.efi
# The kernel and ramdisk are made before the sandbox: the first run downloads a Debian kernel package (a run
# with no network, as under ctest in scripts/test.sh's sandbox, needs them made beforehand: test.sh does).
# BPFNET_FIRMWARE_REQUIRED=1 (test.sh): not having them fails the suite instead of skipping it.
if [ "${BPFNET_E2E_SANDBOX:-}" != 1 ] && [ -z "${FIRMWARE_BOOT_DIR:-}" ] && [ "$(id -u)" = 0 ]; then
    export FIRMWARE_BOOT_DIR=${BPFNET_VM_CACHE:-/var/cache/bpfnet-vm}/agent-boot
    if ! "$E2E_REPO/tests/vm/run.sh" --agent-ramdisk "$FIRMWARE_BOOT_DIR" >&2; then
        echo "e2e: cannot build the agent ramdisk (tests/vm/run.sh --agent-ramdisk)" >&2
        [ "${BPFNET_FIRMWARE_REQUIRED:-0}" = 1 ] && exit 1
        echo "e2e: skipped" >&2
        exit 77
    fi
fi

sandbox_reexec "$@"

require_tools qemu-system-x86_64 dnsmasq python3 curl
skip_unless dhcp_available ironic_available
if [ "$FIRMWARE_BOOT" = bios ]; then
    [ -f "$ROM" ] || skip_suite "no iPXE ROM at $ROM (ipxe-qemu)"
else
    for f in "$OVMF_CODE" "$OVMF_VARS" "$SNPONLY"; do
        [ -f "$f" ] || skip_suite "no $f (scripts/setup.sh installs ovmf and ipxe)"
    done
fi
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
    # initrd=: under UEFI iPXE hands the kernel (started by its EFI stub) the ramdisk as a file of that name,
    # as Ironic's iPXE template does; the BIOS loader takes the same argument.
    printf '#!ipxe\nkernel http://%s:%s/vmlinuz initrd=initrd.img console=ttyS0 panic=-1 quiet bpfnet.service=%s bpfnet.agent_port=%s\ninitrd http://%s:%s/initrd.img\nboot\n' \
        "$2" "$IMAGE_PORT" "$1" "$AGENT_PORT" "$2" "$IMAGE_PORT" >"$FW/tftp/boot.ipxe"
    cp "$FIRMWARE_BOOT_DIR/vmlinuz" "$FIRMWARE_BOOT_DIR/initrd.img" "$FW/images/"
    # The chained iPXE, where each UEFI walk fetches it: by TFTP (PXE) or from the image server (HTTP Boot).
    if [ "$FIRMWARE_BOOT" != bios ]; then
        cp "$SNPONLY" "$FW/tftp/"
        cp "$SNPONLY" "$FW/images/"
    fi
    chmod -R o+rX "$FW"
    chmod o+x "$E2E_TMP"
}

# ironic-image's dnsmasq settings for UEFI clients (its dnsmasq.conf.j2): iPXE is told its script; a UEFI
# firmware that is not iPXE yet gets snponly.efi: by TFTP for PXE (client architecture 7; over IPv6 the
# vendor class of enterprise 343, "PXEClient"), as a URL on the image server for HTTP Boot (whose firmware
# takes an offer only when it names the HTTPClient vendor class in return).
UEFI_DNSMASQ=()
uefi_dnsmasq_options() {
    case $FIRMWARE_FAMILY/$FIRMWARE_BOOT in
    4/uefi-pxe)
        UEFI_DNSMASQ=("--dhcp-match=set:ipxe,175" "--dhcp-match=set:efi,option:client-arch,7"
            --dhcp-boot="tag:efi,tag:!ipxe,snponly.efi,,$E2E_SERVICE_IP") ;;
    4/uefi-http)
        UEFI_DNSMASQ=("--dhcp-match=set:ipxe,175" "--dhcp-vendorclass=set:efihttp,HTTPClient"
            "--dhcp-option-force=tag:efihttp,60,HTTPClient"
            --dhcp-boot="tag:efihttp,tag:!ipxe,http://$E2E_SERVICE_IP:$IMAGE_PORT/snponly.efi") ;;
    6/uefi-pxe)
        UEFI_DNSMASQ=("--dhcp-vendorclass=set:pxe6,enterprise:343,PXEClient" "--dhcp-userclass=set:ipxe6,iPXE"
            --dhcp-option="tag:pxe6,tag:!ipxe6,option6:bootfile-url,tftp://[$LAN6_SERVICE]/snponly.efi") ;;
    esac
}

firmware_setup() {
    uefi_dnsmasq_options
    [ "$FIRMWARE_FAMILY" = 6 ] && { firmware_setup6; return; }
    boot_files "$E2E_SERVICE_IP" "$E2E_SERVICE_IP"

    dnsmasq_start "$E2E_POD" "$FW/dnsmasq" "${UEFI_DNSMASQ[@]}" || return 1
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
    if [ "$FIRMWARE_BOOT" = uefi-http ]; then
        kea6_http_boot_start || return 1
    else
        lan6_dnsmasq_start "$FW/dnsmasq" "${UEFI_DNSMASQ[@]}" || return 1
    fi
    bg_in_ns "$E2E_POD" "$FW/images.log" setpriv --reuid=65534 --regid=65534 --clear-groups \
        /usr/bin/python3 -m http.server "$IMAGE_PORT" --bind :: --directory "$FW/images"
    lan6_write_config "$E2E_TMP/conf/firmware.yaml" "$IMAGE_PORT"
    loader_start "$E2E_TMP/conf/firmware.yaml" "$E2E_TMP/logs/loader.log" || return 1
    guest_tap
}

# UEFI HTTP Boot over IPv6 takes an offer only when it names the HTTPClient class back in a Vendor Class
# option (RFC 8415 21.16: enterprise number, then the class as a length-prefixed string; edk2's
# HttpBootDhcp6.c), which dnsmasq cannot write (it makes option 16 of strings only): so this walk's DHCPv6
# server is Kea, as a Metal3 user with Kea would set it up. Client classes by what the client sent: the
# firmware (its vendor class HTTPClient) gets snponly.efi, iPXE (its user class) the script, both as URLs on
# the image server; the subnet is selected by the relay's link-address.
kea6_http_boot_start() {
    local dir=$FW/kea6 url="http://[$LAN6_SERVICE]:$IMAGE_PORT"
    mkdir -p "$dir"
    KEA_LOG=$dir/kea.log
    : >"$KEA_LOG"
    cat >"$dir/kea-dhcp6.json" <<EOF
{
  "Dhcp6": {
    "interfaces-config": { "interfaces": [ "eth0/$LAN6_POD" ] },
    "lease-database": { "type": "memfile", "persist": false },
    "server-id": { "type": "LLT", "persist": false },
    "preferred-lifetime": 300,
    "valid-lifetime": 600,
    "client-classes": [
      {
        "name": "HTTPClient",
        "test": "substring(option[16].hex, 6, 10) == 'HTTPClient'",
        "option-data": [
          { "name": "vendor-class", "data": "343, 000a48545450436c69656e74" },
          { "name": "bootfile-url", "data": "$url/snponly.efi" }
        ]
      },
      {
        "name": "iPXE",
        "test": "substring(option[15].hex, 2, 4) == 'iPXE'",
        "option-data": [ { "name": "bootfile-url", "data": "$url/boot.ipxe" } ]
      }
    ],
    "subnet6": [
      { "id": 1, "subnet": "$LAN6_SUBNET", "pools": [ { "pool": "$LAN6_RANGE_FIRST-$LAN6_RANGE_LAST" } ] }
    ],
    "loggers": [
      { "name": "kea-dhcp6", "output_options": [ { "output": "$KEA_LOG" } ], "severity": "DEBUG", "debuglevel": 40 }
    ]
  }
}
EOF
    kea_run "$E2E_POD" "$dir" kea-dhcp6 547 || return 1
    # The script iPXE fetches by HTTP.
    cp "$FW/tftp/boot.ipxe" "$FW/images/"
}

# The guest's firmware and NIC: SeaBIOS with the NIC's iPXE ROM, or OVMF with its own network stack (the NIC
# without a ROM, the network its first boot option) offering only the walk's kind of boot: the other kinds'
# boot options are switched off through fw_cfg (edk2's OvmfPkg/RUNTIME_CONFIG.md), so the firmware does not
# spend minutes on them first. HTTP Boot keeps both families: over IPv6 it tries IPv4 first (about a minute
# without an answer). Switched off (opt/org.tianocore/IPv4Support), HTTPv6 started right at power-on and
# gave up at once ("Unexpected network error", no Solicit of its own sent) while the firmware's IPv6 stack
# was still taking its address by DHCPv6: a firmware race, seen once, which the minute avoids.
GUEST_FIRMWARE=()
guest_firmware() {
    local nic="virtio-net-pci,netdev=lan,mac=$GUEST_MAC"
    case $FIRMWARE_BOOT in
    bios)
        GUEST_FIRMWARE=(-device "$nic" -boot n)
        GUEST_DESCRIPTION="SeaBIOS, $(basename "$ROM")" ;;
    uefi-*)
        cp "$OVMF_VARS" "$FW/ovmf_vars.fd"
        GUEST_FIRMWARE=(-drive "if=pflash,format=raw,unit=0,readonly=on,file=$OVMF_CODE"
            -drive "if=pflash,format=raw,unit=1,file=$FW/ovmf_vars.fd"
            -device "$nic,romfile=,bootindex=1")
        local v4=n v6=n
        [ "$FIRMWARE_BOOT/$FIRMWARE_FAMILY" = uefi-pxe/4 ] && v4=y
        [ "$FIRMWARE_BOOT/$FIRMWARE_FAMILY" = uefi-pxe/6 ] && v6=y
        GUEST_FIRMWARE+=(-fw_cfg "name=opt/org.tianocore/IPv4PXESupport,string=$v4"
            -fw_cfg "name=opt/org.tianocore/IPv6PXESupport,string=$v6")
        GUEST_DESCRIPTION="OVMF, $FIRMWARE_BOOT" ;;
    esac
}

guest_start() {
    local lan
    lan=$(lan_bridge_ns)
    guest_firmware
    GUEST_T0=$(date +%s.%N)
    bg_in_ns "$lan" "$FW/qemu.log" qemu-system-x86_64 -machine q35 -accel tcg -cpu max -m 512 -smp 1 \
        -display none -no-reboot -monitor none -serial "file:$CONSOLE" \
        -netdev "tap,id=lan,ifname=$TAP,script=no,downscript=no" "${GUEST_FIRMWARE[@]}"
    GUEST_PID=$BG_PID
    log "guest $GUEST_PID booting from the network ($GUEST_DESCRIPTION), MAC $GUEST_MAC"
}

# stage_seen FILE PATTERN: PATTERN is in FILE (a server's log, the guest's console).
stage_seen() { grep -qE "$2" "$1" 2>/dev/null; }

# stage LABEL SECONDS FILE PATTERN: waits until PATTERN shows in FILE; logs when, since the guest started.
STAGE_AT=""
stage() { stage_until "$1" "$2" stage_seen "$3" "$4"; }

# stage_until LABEL SECONDS COMMAND...: waits until COMMAND succeeds; logs when, since the guest started.
stage_until() {
    local label=$1 seconds=$2
    shift 2
    if ! wait_for "$seconds" "$@"; then
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

# dhcp_transaction REPLY_RE TEXT: the id of the first transaction in dnsmasq's log with a line matching
# REPLY_RE (its lease: DHCPACK or DHCPREPLY) and an option sent that holds TEXT (the boot file it was given:
# the firmware's, iPXE's script). Under UEFI the firmware takes a lease of its own (over IPv6 its IPv6 stack
# takes one more first, with no boot file) before iPXE takes one.
# XID_OF_LINE: awk that sets xid to the transaction id of a dnsmasq-dhcp log line (the word after the tag).
XID_OF_LINE='{ for (i = 1; i < NF; i++) if ($i ~ /^dnsmasq-dhcp/) { xid = $(i + 1); break } }'
dhcp_transaction() {
    reply_re=$1 text=$2 awk "$XID_OF_LINE"'
        $0 ~ ENVIRON["reply_re"] { reply[xid] = 1 }
        / option: / && index($0, ENVIRON["text"]) { gave[xid] = 1 }
        (xid in reply) && (xid in gave) { print xid; found = 1; exit }
        END { exit !found }' "$FW/dnsmasq/dnsmasq.log" 2>/dev/null
}
dhcp_given() { dhcp_transaction "$@" >/dev/null; }

# transaction_says XID TEXT WHAT: a line of dnsmasq's log of transaction XID holds TEXT (a class the client
# sent, an option it was given); WHAT names it in the failure.
transaction_says() {
    local xid=$1 text=$2 what=$3
    xid=$xid text=$text awk "$XID_OF_LINE"'
        xid == ENVIRON["xid"] && index($0, ENVIRON["text"]) { found = 1; exit }
        END { exit !found }' "$FW/dnsmasq/dnsmasq.log" && return 0
    E2E_REASON="the lease (dnsmasq transaction $xid) shows no $what ('$text' not in its log)"
    return 1
}

# stage_lease LABEL SECONDS REPLY_RE TEXT: the stage of a lease that gave TEXT; LEASE_XID its transaction.
LEASE_XID=""
stage_lease() {
    stage_until "$1" "$2" dhcp_given "$3" "$4" || return 1
    LEASE_XID=$(dhcp_transaction "$3" "$4")
}

case_uefi_dhcp() {
    stage_lease "UEFI DHCP lease" 120 "DHCPACK.*$GUEST_MAC" snponly.efi &&
        transaction_says "$LEASE_XID" "vendor class: PXEClient:Arch:00007" "PXE client of architecture 7 (x64 UEFI)"
}
case_uefi_tftp() { stage "TFTP snponly.efi" 60 "$FW/dnsmasq/dnsmasq.log" "sent .*snponly\.efi"; }
case_uefi_dhcp6() {
    stage_lease "UEFI DHCPv6 lease" 180 "DHCPREPLY\\(" "tftp://[$LAN6_SERVICE]/snponly.efi" &&
        transaction_says "$LEASE_XID" "vendor class: 343" "PXE client (vendor class of enterprise 343)"
}
case_uefi_http_dhcp() {
    stage_lease "UEFI HTTP Boot DHCP lease" 180 "DHCPACK.*$GUEST_MAC" \
        "http://$E2E_SERVICE_IP:$IMAGE_PORT/snponly.efi" &&
        transaction_says "$LEASE_XID" "vendor class: HTTPClient" "HTTP Boot client" &&
        transaction_says "$LEASE_XID" "option: 60 vendor-class" "HTTPClient vendor class in the offer"
}
# kea_lease CLASS: the address Kea leased in a transaction whose packet was in CLASS. Kea's log (debug level
# 40) says per packet received which class tests matched (EVAL_RESULT, no transaction id), then the
# packet's transaction id (DHCP6_CLASS_ASSIGNED), then the lease (DHCP6_LEASE_ALLOC).
kea_lease() {
    class=$1 awk '{ tid = ""; if (match($0, /tid=0x[0-9a-f]+/)) tid = substr($0, RSTART, RLENGTH) }
        /DHCP6_BUFFER_RECEIVED/ { matched = 0 }
        /EVAL_RESULT/ && index($0, "Expression " ENVIRON["class"] " evaluated to 1") { matched = 1 }
        /DHCP6_CLASS_ASSIGNED/ && matched && tid != "" { in_class[tid] = 1 }
        /DHCP6_LEASE_ALLOC/ && (tid in in_class) && match($0, /address [0-9a-f:]+/) {
            print substr($0, RSTART + 8, RLENGTH - 8); found = 1; exit }
        END { exit !found }' "$KEA_LOG" 2>/dev/null
}
kea_leased() { kea_lease "$@" >/dev/null; }

case_uefi_http_dhcp6() {
    if ! stage_until "UEFI HTTP Boot DHCPv6 lease" 180 kea_leased HTTPClient; then
        E2E_REASON+="; dhcp6_request_relayed $(counter dhcp6_request_relayed), dhcp6_reply_relayed $(counter dhcp6_reply_relayed)"
        return 1
    fi
    log "Kea leased $(kea_lease HTTPClient) to the HTTP Boot client"
}
case_kea_dhcp6() {
    stage_until "DHCPv6 lease (iPXE)" 120 kea_leased iPXE || return 1
    log "Kea leased $(kea_lease iPXE) to iPXE"
}
case_http_script() { stage "HTTP boot.ipxe" 60 "$FW/images.log" '"GET /boot\.ipxe HTTP/1\.[01]" 200'; }
case_uefi_http_nbp() { stage "HTTP snponly.efi" 60 "$FW/images.log" '"GET /snponly\.efi HTTP/1\.[01]" 200'; }

case_dhcp() {
    if ! stage_lease "DHCP lease" 60 "DHCPACK.*$GUEST_MAC" boot.ipxe; then
        E2E_REASON+="; from the guest's tap: $(ip -n "$(lan_bridge_ns)" -s link show "$TAP" | awk '/RX:/ { getline; print $2 " packets" }'), dhcp_request_relayed $(counter dhcp_request_relayed), drop_not_allowed $(counter drop_not_allowed)"
        return 1
    fi
    transaction_says "$LEASE_XID" "user class: iPXE" "iPXE client" || return 1
    local relayed
    relayed=$(counter dhcp_request_relayed)
    [ "$relayed" -ge 2 ] || {
        E2E_REASON="the lease was acknowledged but dhcp_request_relayed is $relayed"
        return 1
    }
}
# iPXE identifies itself by a DUID of its own, not its MAC: the guest is the only DHCPv6 client on this LAN.
case_dhcp6() {
    if ! stage_lease "DHCPv6 lease" 120 "DHCPREPLY\\(.*${LAN6_RANGE_FIRST%??}" "/boot.ipxe"; then
        E2E_REASON+="; dhcp6_request_relayed $(counter dhcp6_request_relayed), dhcp6_reply_relayed $(counter dhcp6_reply_relayed)"
        return 1
    fi
    log "$(grep -m1 -E "dnsmasq-dhcp\[[0-9]+\]: $LEASE_XID DHCPREPLY" "$FW/dnsmasq/dnsmasq.log" | sed 's/^.*dnsmasq-dhcp[^:]*: //')"
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
