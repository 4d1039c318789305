/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * ICMP errors about steered packets, either family: the reader and the rewrite of the packet's family
 * (icmp.h, icmp6.h: the headers and the checksum rules differ), and the one check that admits an error from
 * the LAN.
 */
#ifndef BPFNET_ICMP_ERROR_H
#define BPFNET_ICMP_ERROR_H

#include "family.h"
#include "icmp.h"
#include "icmp6.h"
#include "iface.h"

/* Reads the error in pkt (validated as some other protocol) and what it quotes; -1 when it is none we read.
 */
static __always_inline int icmp_error_read(void *ctx, int xdp, const struct ip_packet *pkt,
					   struct icmp_error *e, const int v6)
{
	if (v6)
		return icmp6_error_read(ctx, xdp, pkt, e);
	return icmp4_error_read(ctx, xdp, pkt, e);
}

/*
 * Translates the error like the packet it quotes: the outer address on side `outer` from -> to, in the quote
 * the opposite side's address and port. Packet pointers are invalid afterwards. Returns 0, or -1 when a
 * helper refused.
 */
static __always_inline int icmp_error_rewrite(struct __sk_buff *skb, const struct ip_packet *pkt,
					      const struct icmp_error *e, enum nat_side outer,
					      const struct bpfnet_ip *from, const struct bpfnet_ip *to,
					      __be16 from_port, __be16 to_port, const int v6)
{
	if (v6)
		return icmp6_error_rewrite(skb, pkt, e, outer, from, to, from_port, to_port);
	return icmp4_error_rewrite(skb, pkt, e, outer, from, to, from_port, to_port);
}

/*
 * Whether an ICMP packet from the LAN to service IP a->daddr (its fixed header at l3) is an error about a
 * packet the datapath sent from there (XDP decides first, TC again): from the provisioning subnet, as every
 * packet to a service IP (the datapath sends only there, and a router's errors come from its address there).
 * Fills pkt, e and target (the backend the quoted packet came from); returns BPFNET_CTR_MAX when admitted,
 * else the drop counter that says why.
 */
static __always_inline enum bpfnet_counter admit_icmp_error(void *ctx, int xdp, void *data, __u32 frame_len,
							    void *l3, const struct bpfnet_iface *cfg,
							    const struct l3_addrs *a, struct ip_packet *pkt,
							    struct icmp_error *e, struct steer_target *target,
							    const int v6)
{
	enum parse_verdict verdict = ip_validate(ctx, xdp, data, frame_len, l3, pkt, v6);

	if (verdict != PARSE_OTHER_PROTOCOL)
		return verdict == PARSE_OK ? BPFNET_CTR_DROP_PROTOCOL : drop_reason(verdict);
	if (!in_provisioning_subnet(cfg, &a->saddr, v6))
		return BPFNET_CTR_DROP_OFF_SUBNET;
	if (icmp_error_read(ctx, xdp, pkt, e, v6))
		return BPFNET_CTR_DROP_PROTOCOL; /* an echo request, or an error about nothing we send */
	if (!ip_equal(&e->inner_saddr, &a->daddr) ||
	    quote_from_service(&e->ports, &e->inner_saddr, &e->inner_daddr, target))
		return BPFNET_CTR_DROP_ICMP_UNMATCHED;
	return BPFNET_CTR_MAX;
}

#endif /* BPFNET_ICMP_ERROR_H */
