/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A stand-in for a CNI's own TC program on a device bpfnet also hooks (Cilium's on the pod's veth and on the
 * node's NICs): it acts on every frame it sees, with a verdict that ends the device's chain, as Cilium's
 * programs do. Unless bpfnet's program runs before it, bpfnet never sees the pod's replies or the LAN's
 * requests. What it does is set before load (.rodata):
 *   pass      TC_ACT_OK: every frame to the kernel's stack (Cilium's verdict for traffic it lets through)
 *   drop      TC_ACT_SHOT for every IP frame (a policy that denies what it does not know); ARP passes
 *   redirect  every IP frame to another device (Cilium's host routing to cilium_host or a NIC); ARP passes
 * Each frame it sees is counted, so a test can tell that it still runs for what bpfnet hands on.
 *
 * socket_lb_connect4 stands in for the socket-level load balancing of a kube-proxy replacement (Cilium's
 * socket-LB, cgroup/connect4 on the cgroup root): a connect() to the Service's address and port is made to
 * the endpoint's instead, before any packet exists, so the packets carry the client pod's own address.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

enum standin_mode { STANDIN_PASS, STANDIN_DROP, STANDIN_REDIRECT };

const volatile __u32 standin_mode = STANDIN_PASS;
const volatile __u32 redirect_ifindex = 0;
/* socket_lb_connect4's translation, addresses and ports in network byte order. */
const volatile __u32 service_ip4 = 0;
const volatile __u16 service_port = 0;
const volatile __u32 backend_ip4 = 0;
const volatile __u16 backend_port = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

SEC("tc")
int cni_standin(struct __sk_buff *skb)
{
	__u32 zero = 0;
	__u64 *count = bpf_map_lookup_elem(&seen, &zero);

	if (count)
		__sync_fetch_and_add(count, 1);
	if (skb->protocol == bpf_htons(ETH_P_ARP) || standin_mode == STANDIN_PASS)
		return TC_ACT_OK;
	if (standin_mode == STANDIN_REDIRECT)
		return bpf_redirect(redirect_ifindex, 0);
	return TC_ACT_SHOT;
}

SEC("cgroup/connect4")
int socket_lb_connect4(struct bpf_sock_addr *ctx)
{
	__u32 zero = 0;
	__u64 *count;

	if (ctx->user_ip4 != service_ip4 || ctx->user_port != service_port)
		return 1;
	ctx->user_ip4 = backend_ip4;
	ctx->user_port = backend_port;
	count = bpf_map_lookup_elem(&seen, &zero);
	if (count)
		__sync_fetch_and_add(count, 1);
	return 1;
}
