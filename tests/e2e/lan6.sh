# shellcheck shell=bash
# The IPv6 side of lib.sh's LAN (IPv6's benchmarking range, as tests/e2e/test_ipv6.sh): the service address,
# the pod's address and its gateway, the DHCPv6 range, and the servers and loader config that serve it. Used
# by the walks (pxe_walk.sh) and the firmware test. Source after lib.sh and dhcp.sh (and, for the Ironic API
# port, ironic.sh).
#
#   lan6_pod_address                  the pod's IPv6 address and default route, every address past DAD
#   lan6_write_config FILE IMAGE_PORT [dual]   the loader's config: serviceIPv6 (and serviceIP with "dual"),
#                                     DHCPv6 relay, TFTP, the Ironic API, the image server, router advertisements
#                                     every LAN6_RA_INTERVAL s (default 4)
#   lan6_dnsmasq_options              LAN6_DNSMASQ: dnsmasq's DHCPv6 range and boot file URL (option 59, TFTP
#                                     of DHCP_BOOT_FILE from the service address)
#   lan6_dnsmasq_start DIR [ARGS...]  dnsmasq in the pod for an IPv6-only LAN: DHCPv6 for relayed requests, TFTP
#
# Each function returns 0 or sets E2E_REASON and returns 1.
# shellcheck disable=SC2034

LAN6_SUBNET=2001:2::/64
LAN6_SERVICE=2001:2::2
LAN6_POD=2001:2:0:100::2
LAN6_POD_GW=2001:2:0:100::1
LAN6_RANGE_FIRST=2001:2::100
LAN6_RANGE_LAST=2001:2::1ff
LAN6_DNSMASQ=()

# The pod's IPv6 address and route (a dual-stack pod network); the hosts keep their link-local addresses.
lan6_pod_address() {
    # replace: a pod made again (walk_move) behind a bridge finds the gateway address there already.
    ip -n "$E2E_NODE" -6 addr replace "$LAN6_POD_GW/64" dev "$(pod_gateway_dev)" &&
        ip -n "$E2E_POD" -6 addr replace "$LAN6_POD/64" dev eth0 &&
        ip -n "$E2E_POD" -6 route replace default via "$LAN6_POD_GW" || {
        E2E_REASON="cannot give the pod its IPv6 address"
        return 1
    }
    local ns
    for ns in "$E2E_HOST" "$E2E_NODE" "$E2E_POD"; do
        wait_for 10 no_tentative "$ns" || {
            E2E_REASON="IPv6 addresses of $ns still tentative"
            return 1
        }
    done
}

# The loader's config for an IPv6-only or dual-stack LAN (docs/config.md): each family's service address,
# its DHCP relay, TFTP, the Ironic API and the image server; router advertisements for the IPv6 hosts.
lan6_write_config() {
    local file=$1 image_port=$2 v4="" dhcp4="" backend4=""
    if [ "${3:-}" = dual ]; then
        v4="serviceIP: $E2E_SERVICE_IP"$'\n'"subnet: $E2E_SUBNET"
        dhcp4="  - {name: dhcp, protocol: udp, port: 67, kind: dhcp}"
        backend4="  ip: $E2E_POD_IP"
    fi
    cat >"$file" <<YAML
interface: $E2E_NIC
$v4
serviceIPv6: $LAN6_SERVICE
subnetV6: $LAN6_SUBNET
pinRoot: $E2E_PIN_ROOT
ports:
$dhcp4
  - {name: dhcpv6, protocol: udp, port: 547, kind: dhcpv6}
  - {name: tftp, protocol: udp, port: 69, kind: tftp}
  - {name: ironic-api, protocol: tcp, port: ${IRONIC_PORT:-6385}}
  - {name: images, protocol: tcp, port: $image_port}
routerAdvertisements:
  enabled: true
  intervalSeconds: ${LAN6_RA_INTERVAL:-4}
backend:
$backend4
  ipv6: $LAN6_POD
  veth: auto
  delivery: $E2E_POD_DELIVERY
YAML
}

lan6_dnsmasq_options() {
    LAN6_DNSMASQ=(--dhcp-range="$LAN6_RANGE_FIRST,$LAN6_RANGE_LAST,64,10m"
        --dhcp-option="option6:bootfile-url,tftp://[$LAN6_SERVICE]/$DHCP_BOOT_FILE")
}

# dnsmasq in the pod for an IPv6-only LAN: DHCPv6 with the boot file URL for relayed requests, TFTP from
# DHCP_TFTP_ROOT; ARGS after DIR are dnsmasq's too.
lan6_dnsmasq_start() {
    lan6_dnsmasq_options
    dnsmasq_run "$E2E_POD" "$1" --log-dhcp "${LAN6_DNSMASQ[@]}" --enable-tftp --tftp-root="$DHCP_TFTP_ROOT" \
        "${@:2}" || return 1
    wait_for 5 ns_udp_listens "$E2E_POD" 547 || {
        E2E_REASON="dnsmasq does not listen on UDP 547 in the pod"
        return 1
    }
}
