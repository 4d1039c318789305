#!/bin/bash
# Builds the throwaway topology for the netlink/ARP probe (tests/e2e/netlink_probe.cpp), runs the probe and
# returns its status. Builds nothing. Only ever run inside a private sandbox:
#   unshare --net --mount --fork bash tests/e2e/netlink_probe.sh /path/to/netlink_probe
set -euo pipefail

probe=${1:?usage: netlink_probe.sh PROBE_BINARY}

# A fresh network namespace has no interface up (not even lo). The machine's own namespace always has, so
# this refuses to touch the host's interfaces when the unshare was forgotten.
if [ -n "$(ip -o link show up)" ]; then
    echo "netlink_probe.sh: not in a fresh network namespace; run it under unshare --net --mount --fork" >&2
    exit 2
fi

# The tmpfs below must never land in the machine's mount namespace, even if --mount was left out: enter a
# private one of our own (unshare makes its mounts private; nesting inside the sandbox's one is harmless).
if [ -z "${NETLINK_PROBE_PRIVATE_MOUNTS:-}" ]; then
    exec env NETLINK_PROBE_PRIVATE_MOUNTS=1 unshare --mount bash "$0" "$@"
fi

cleanup() {
    ip netns del nlh-pod 2>/dev/null || true
    ip link del vethpod 2>/dev/null || true
    ip link del vetha 2>/dev/null || true
    ip link del flannel.1 2>/dev/null || true
    umount /run/netns 2>/dev/null || true
}
trap cleanup EXIT

# Named namespaces live in a tmpfs private to this sandbox's mount namespace.
mkdir -p /run/netns
mount -t tmpfs none /run/netns
ip netns add nlh-pod

ip link set lo up
ip link add vethpod address 02:00:00:00:01:01 type veth peer name eth0 address 02:00:00:00:01:02 netns nlh-pod
ip addr add 198.18.100.1/24 dev vethpod
ip link set vethpod up
ip -n nlh-pod link set lo up
ip -n nlh-pod addr add 198.18.100.2/24 dev eth0
ip -n nlh-pod link set eth0 up

ip link add vetha type veth peer name vethb
ip addr add 198.18.101.1/24 dev vetha
ip link set vetha up
ip link set vethb up

ip route add blackhole 198.18.200.0/24

# flannel's VXLAN device, carrying another node's pods (198.18.120.0/24): a pod there has no veth on this node.
ip link add flannel.1 type vxlan id 1 dstport 8472 nolearning
ip addr add 198.18.100.0/32 dev flannel.1
ip link set flannel.1 up
ip route add 198.18.120.0/24 via 198.18.120.0 dev flannel.1 onlink

status=0
"$probe" /run/netns/nlh-pod || status=$?
exit "$status"
