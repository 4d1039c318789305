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
