#!/usr/bin/env bash
# The LANs users really have, end to end: the pod network's MTU is smaller than the LAN's (1450, as over a
# VXLAN overlay) while the hosts on the bridge ask for what a 1500-byte LAN carries. TFTP at the block size
# PXE ROMs ask for (1468) from servers that cap it (dnsmasq) and that do not (atftpd), a large HTTP
# download, and ICMP errors about steered packets both ways (refused ports, path MTU discovery), all
# through the service IP with default offloads everywhere.
#
#   usage: test_lan.sh PATH/TO/bpfnet-loader [--case KEY]... | --list   (as root; it sandboxes itself, see lib.sh)
#   env:   E2E_LAN_SHAPE   switch (default) or devenv (lib.sh)
#          E2E_KEEP_TMP    keep the temporary directory (configs, logs) for inspection
#
# Cases are called through run_cases (the case list), which shellcheck cannot see.
# shellcheck disable=SC2317
set -uo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"
# shellcheck source=dhcp.sh
source "$E2E_DIR/dhcp.sh"
# shellcheck source=icmp_cases.sh
source "$E2E_DIR/icmp_cases.sh"

# The cases, in the order of a full run, with what each starts from (lib.sh, "The case list").
e2e_fixture topology topology_create
e2e_fixture loader files_server_loader topology
e2e_case tftp_atftpd case_tftp_atftpd "pod MTU 1450: atftpd serves blksize 1468 requests, clamped to 1418 on the way in" loader
e2e_case tftp_dnsmasq case_tftp_dnsmasq "pod MTU 1450: dnsmasq serves blksize 1468 requests through the clamp" loader
e2e_case http_download case_http_download "pod MTU 1450: 64 MiB over HTTP through the service IP" loader
e2e_case icmp_host_refuses case_icmp_host_refuses "ICMP: a host's port unreachable reaches the pod's socket" loader
e2e_case icmp_pod_refuses case_icmp_pod_refuses "ICMP: the pod's port unreachable reaches the host as the service IP's" loader
e2e_case icmp_fragmentation_needed case_icmp_fragmentation_needed "ICMP: fragmentation needed through the service IP sets the pod's path MTU" loader

e2e_start "$@"

require_tools curl atftp atftpd dnsmasq python3 bpftool nsenter sha256sum

export E2E_POD_MTU=1450
# What one unfragmented TFTP DATA packet carries through the pod's MTU: 1450 - IPv4 20 - UDP 8 - TFTP 4.
FITS_BLKSIZE=1418
ROM_BLKSIZE=1468 # what iPXE and most PXE ROMs ask for on a 1500-byte LAN
ROOT=$E2E_TMP/tftp
IMAGE_MIB=4

# ---------------------------------------------------------------------------------------------------
# Servers

TFTP_PID=""
# tftp_serve dnsmasq|atftpd: that TFTP server in the pod on port 69, serving ROOT.
tftp_serve() {
    [ -z "$TFTP_PID" ] || stop_pid "$TFTP_PID"
    if [ "$1" = dnsmasq ]; then
        dnsmasq_run "$E2E_POD" "$E2E_TMP/dnsmasq" --enable-tftp --tftp-root="$ROOT" || return 1
        TFTP_PID=$DNSMASQ_PID
    else
        bg_in_ns "$E2E_POD" "$LOGS/atftpd.log" atftpd --daemon --no-fork --user root.root --port 69 \
            --logfile - --verbose=7 "$ROOT"
        TFTP_PID=$BG_PID
    fi
    wait_for 5 ns_udp_listens "$E2E_POD" 69 || {
        E2E_REASON="$1 does not listen on UDP 69 in the pod"
        return 1
    }
}

# ---------------------------------------------------------------------------------------------------
# Cases

# tftp_fetch_check SERVER CLIENT_CMD...: the image fetched through the service IP is the image, and the
# datapath clamped the request's block size (tftp_blksize_clamped rose by one).
tftp_fetch_check() {
    local server=$1 out=$E2E_TMP/dl/image before after
    shift
    tftp_serve "$server" || return 1
    mkdir -p "$E2E_TMP/dl"
    rm -f "$out"
    before=$(counter tftp_blksize_clamped)
    "$@" >"$LOGS/fetch-$server.log" 2>&1
    after=$(counter tftp_blksize_clamped)
    if ! cmp -s "$out" "$ROOT/image"; then
        E2E_REASON="$server: the image fetched with blksize $ROM_BLKSIZE through a pod MTU of $E2E_POD_MTU differs or is missing ($(tail -c 300 "$LOGS/fetch-$server.log" | tr '\n' ' '); drop_fragment $(counter drop_fragment))"
        return 1
    fi
    if [ "$((after - before))" != 1 ]; then
        E2E_REASON="$server: tftp_blksize_clamped went $before -> $after, want +1"
        return 1
    fi
    log "$server: $IMAGE_MIB MiB at blksize $ROM_BLKSIZE asked, $FITS_BLKSIZE served; tftp_blksize_clamped $before -> $after"
}

# atftpd sends blocks as large as the client asks: without the clamp, 1468-byte blocks leave the pod as
# IPv4 fragments, which are never steered.
case_tftp_atftpd() {
    tftp_fetch_check atftpd host timeout 60 atftp --option "blksize $ROM_BLKSIZE" -g -r image \
        -l "$E2E_TMP/dl/image" "$E2E_SERVICE_IP" 69 || return 1
    if ! grep -q "blksize.*$FITS_BLKSIZE\|$FITS_BLKSIZE.*blksize" "$LOGS/atftpd.log"; then
        E2E_REASON="atftpd's log does not show the clamped block size $FITS_BLKSIZE: $(grep -i blksize "$LOGS/atftpd.log" | head -3)"
        return 1
    fi
}

# dnsmasq caps the block size at its interface's MTU itself; the clamp must not disturb it.
case_tftp_dnsmasq() {
    tftp_fetch_check dnsmasq host curl -sS --max-time 60 --tftp-blksize "$ROM_BLKSIZE" \
        -o "$E2E_TMP/dl/image" "tftp://$E2E_SERVICE_IP/image"
}

# A large HTTP download: TCP segments sized by the pod's MSS, both ways, with default offloads.
case_http_download() {
    local got want
    want=$(sha256sum <"$ROOT/big" | cut -d' ' -f1)
    got=$(host curl -sS --max-time 60 "http://$E2E_SERVICE_IP/big" | sha256sum | cut -d' ' -f1)
    if [ "$got" != "$want" ]; then
        E2E_REASON="64 MiB over HTTP through a pod MTU of $E2E_POD_MTU: sha256 $got, want $want"
        return 1
    fi
}

# ICMP errors about steered packets reach the other side translated.
CLOSED_PORT=7000 # listed (udp), and nothing in the pod listens on it
POD_SPORT=41000  # the pod's own datagrams leave from here

# The ICMP cases' bodies, shared with test_ipv6.sh (icmp_cases.sh); here the IPv4 ones, the hop of the
# fragmentation needed 1300 bytes.
case_icmp_host_refuses() { icmp_host_refuses 4; }
case_icmp_pod_refuses() { icmp_pod_refuses 4; }
case_icmp_fragmentation_needed() { icmp_path_mtu 4 1300; }

# ---------------------------------------------------------------------------------------------------

# The files, the pod's HTTP server and the loader.
files_server_loader() {
    mkdir -p "$ROOT"
    head -c $((IMAGE_MIB * 1024 * 1024)) /dev/urandom >"$ROOT/image"
    head -c $((64 * 1024 * 1024)) /dev/urandom >"$ROOT/big"
    bg_in_ns "$E2E_POD" "$LOGS/http.log" python3 -m http.server --bind 0.0.0.0 --directory "$ROOT" 8080
    write_config --port tftp:udp:69::tftp --port closed:udp:$CLOSED_PORT "$CONFIG"
    loader_start "$CONFIG" "$LOGS/loader.log" || die "$E2E_REASON"
    wait_for 10 pod_listens 8080 || die "pod HTTP server did not start"
}

run_cases
finish
