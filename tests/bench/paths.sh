# shellcheck shell=bash
# The paths the data-plane benchmarks compare, on the e2e namespace topology (host <-> node prov0 <-> pod),
# every one ending in the same pod. Sourced after tests/e2e/lib.sh, inside the sandbox.
#
#   bpfnet          host -> service IP 198.18.0.2: DNAT and bpf_redirect_peer into the pod, SNAT back out
#                   (the datapath under test)
#   plain routing   host -> 198.18.100.3, a second address of the pod, routed by the node's kernel (the
#                   floor: what any datapath adds is measured against it)
#   nftables DNAT   host -> 198.18.0.3 on the node, DNAT to the pod by nftables with conntrack (kube-proxy
#                   and MetalLB's data path)
#
# bpfnet's XDP program stays on prov0 for all of them (it passes what is not for a service IP), so the
# others are measured with that pass-through included.

PLAIN_IP=198.18.100.3
NFT_IP=198.18.0.3
NODE_IP=198.18.0.1
# shellcheck disable=SC2034 # read by the benchmarks that source this file
declare -A PATH_TARGET=([bpfnet]=$E2E_SERVICE_IP ["plain routing"]=$PLAIN_IP ["nftables DNAT"]=$NFT_IP)

# paths_create [write_config options...]: the topology, the plain route, the nftables DNAT, and the loader
# serving the service IP with the standard ports plus the given ones.
paths_create() {
    topology_create >/dev/null
    ip -n "$E2E_POD" addr add "$PLAIN_IP/24" dev eth0
    ip -n "$E2E_NODE" addr add "$NODE_IP/24" dev "$E2E_NIC"
    ip -n "$E2E_NODE" addr add "$NFT_IP/32" dev "$E2E_NIC"
    ip netns exec "$E2E_NODE" sysctl -qw net.ipv4.ip_forward=1
    ip -n "$E2E_HOST" route add 198.18.100.0/24 via "$NODE_IP"

    # To the pod's second address: its replies from the backend address would be bpfnet's (its pod hook
    # SNATs the backend's traffic to the LAN), as they are from a pod that is a bpfnet backend.
    ip netns exec "$E2E_NODE" nft -f - <<NFT || die "nftables rules"
table ip bench {
    chain prerouting {
        type nat hook prerouting priority dstnat;
        ip daddr $NFT_IP meta l4proto { tcp, udp } dnat to $PLAIN_IP
    }
}
NFT
    write_config "$@" "$E2E_TMP/conf/bpfnet.yaml"
    loader_start "$E2E_TMP/conf/bpfnet.yaml" "$E2E_TMP/logs/loader.log" >/dev/null || die "$E2E_REASON"
}

# IPv6 beside IPv4, for the benchmarks that compare the families (bulk_tcp.sh): the host, the pod (its
# backend address and a second one for plain routing), the node's address on the NIC (the plain route's
# gateway), and the loader's config made dual stack (serviceIPv6, NAT66 to the pod's IPv6 address).
SERVICE6=2001:2::2
HOST6=2001:2::10
NODE6=2001:2::1
POD6=2001:2:0:100::2
POD_GW6=2001:2:0:100::1
PLAIN6=2001:2:0:100::3
# shellcheck disable=SC2034 # read by the benchmarks that source this file
declare -A PATH_TARGET6=(["bpfnet IPv6"]=$SERVICE6 ["plain routing IPv6"]=$PLAIN6)

paths_add_ipv6() {
    ip -n "$E2E_HOST" -6 addr add "$HOST6/64" dev eth0 &&
        ip -n "$E2E_NODE" -6 addr add "$NODE6/64" dev "$E2E_NIC" &&
        ip -n "$E2E_NODE" -6 addr add "$POD_GW6/64" dev "$(pod_gateway_dev)" &&
        ip -n "$E2E_POD" -6 addr add "$POD6/64" dev eth0 &&
        ip -n "$E2E_POD" -6 addr add "$PLAIN6/64" dev eth0 &&
        ip -n "$E2E_POD" -6 route add default via "$POD_GW6" || die "IPv6 addresses"
    ip netns exec "$E2E_NODE" sysctl -qw net.ipv6.conf.all.forwarding=1
    local ns
    for ns in "$E2E_HOST" "$E2E_NODE" "$E2E_POD"; do
        wait_for 10 no_tentative "$ns" || die "IPv6 addresses of $ns still tentative"
    done
    ip -n "$E2E_HOST" -6 route add 2001:2:0:100::/64 via "$NODE6" || die "the host's IPv6 route to the pod"

    # The standard config with the IPv6 service address beside the IPv4 one, applied by the running loader.
    local config=$E2E_TMP/conf/bpfnet.yaml reloaded
    reloaded=$(loader_reloads)
    sed "s/^  veth: auto\$/  veth: auto\n  ipv6: $POD6/" "$config" >"$config.new"
    printf 'serviceIPv6: %s\nsubnetV6: 2001:2::/64\n' "$SERVICE6" >>"$config.new"
    replace_file "$config.new" "$config"
    wait_for 5 loader_reloaded_since "$reloaded" || die "the loader did not apply the dual-stack config: $(tail -n 2 "$LOADER_LOG")"
}
