/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * TFTP (packet walk 3): what the trace shows of a TFTP packet, and the block size clamp.
 *
 * A PXE ROM asks for `blksize` 1468 (RFC 2348), sized for a 1500-byte LAN. A pod network with a smaller
 * MTU (VXLAN overlays: 1450) cannot carry such blocks: a server that does not cap the size itself (atftpd,
 * tftp-hpa's in.tftpd) sends datagrams the pod's kernel fragments, and the datapath never steers IPv4
 * fragments, so the transfer stalls. The read request is therefore rewritten on its way into the pod: a
 * `blksize` above what the pod's MTU carries in one datagram becomes that size, in place, with leading
 * zeros so the packet keeps its length (the option's value is decimal ASCII; servers parse it as a
 * number). The server's OACK then names the smaller size and the client uses it.
 */
#ifndef BPFNET_TFTP_H
#define BPFNET_TFTP_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "parse.h"
#include "counters.h"
#include "csum.h"
#include "trace.h"

#define TFTP_PORT	    69
#define TFTP_RRQ	    1
#define TFTP_WRQ	    2
/* IPv4 header without options, UDP header, TFTP opcode and block number: what a DATA packet adds. */
#define TFTP_DATA_OVERHEAD  (20 + 8 + 4)
#define TFTP_MIN_BLKSIZE    8 /* RFC 2348 */
/* How much of a read request is searched for the option: file name, mode and options fit in it. */
#define TFTP_REQUEST_SCAN   256
/* The longest value rewritten: digits beyond it are not a block size any server takes. */
#define TFTP_BLKSIZE_DIGITS 8

/* What a TFTP packet was, for the trace: its opcode, and for a read or write request the file name. */
static __always_inline void tftp_trace_details(struct __sk_buff *skb, struct trace_scratch *s)
{
	__u32 off = s->l4_off + sizeof(struct udphdr);
	__be16 opcode;

	if (off + sizeof(opcode) > s->l4_end || bpf_skb_load_bytes(skb, off, &opcode, sizeof(opcode)))
		return;
	s->rec.tftp_op = (__u8)bpf_ntohs(opcode);
	if (s->rec.tftp_op != TFTP_RRQ && s->rec.tftp_op != TFTP_WRQ)
		return;
	off += sizeof(opcode);
	if (off >= s->l4_end)
		return;
	__u32 len = s->l4_end - off; /* at least 1 */
	if (len > sizeof(s->rec.tftp_file))
		len = sizeof(s->rec.tftp_file);
	/* Restate 1 <= len <= 64 where the verifier sees it: clang would otherwise fold the clamp away. */
	asm volatile("%[len] += -1; %[len] &= 63; %[len] += 1" : [len] "+r"(len));
	bpf_skb_load_bytes(skb, off, s->rec.tftp_file, len);
	s->rec.tftp_file[sizeof(s->rec.tftp_file) - 1] = 0; /* the name is NUL-terminated in the packet */
}

/*
 * The start of a read request, copied out of the packet to be searched, and the state of the search. Per
 * CPU: too big for the stack. The search state lives here rather than in registers on purpose: read back
 * from a map, its values are unknown to the verifier, which then checks one path per byte of the walk
 * instead of one per combination of string count and position.
 */
struct tftp_request {
	__u8 bytes[TFTP_REQUEST_SCAN];
	__u32 n;       /* how many bytes were copied */
	__u32 strings; /* NULs seen: the string ending at the next one is number `strings` (0 file, 1 mode) */
	__u32 value_start; /* where blksize's value starts, once its name was seen; 0 before */
	__u32 value_end;   /* the NUL after it; 0 until found */
};

BPFNET_SCRATCH_MAP(tftp_request_scratch, struct tftp_request);

/* Where the value of the blksize option lies in a request: [start, end) from the start of the payload. */
struct tftp_option_value {
	__u32 start;
	__u32 end;
};

/*
 * Whether the string that ends (with its NUL) at end is exactly "blksize", without regard to case: the
 * eight bytes before end, read as one word, are the NUL that ends the string before it and the name. Setting
 * bit 5 of each letter's byte lowers it and maps no other byte onto a letter of the name. One load and one
 * compare: the verifier walks this for every byte of the request.
 */
static __always_inline int tftp_is_blksize(const struct tftp_request *req, __u32 end)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const __u64 name = 0x657a69736b6c6200ull;  /* "\0blksize" */
	const __u64 lower = 0x2020202020202000ull; /* every byte but the NUL */
#else
	const __u64 name = 0x00626c6b73697a65ull;
	const __u64 lower = 0x0020202020202020ull;
#endif
	__u64 word;

	/* end >= 10 and < TFTP_REQUEST_SCAN: the word lies inside bytes[]; the mask is for the verifier. */
	__builtin_memcpy(&word, &req->bytes[(end - 8) & (TFTP_REQUEST_SCAN - 1)], sizeof(word));
	return (word | lower) == name;
}

static __always_inline struct tftp_request *tftp_request_copy(void)
{
	return scratch_entry(&tftp_request_scratch);
}

/*
 * One step of the search for the `blksize` option (its name compared without regard to case, RFC 2347):
 * looks at byte index + 2 of the request (opcode, file name, mode, then name/value pairs, each string
 * NUL-terminated). A bpf_loop callback: the verifier checks it apart from the program, a few times rather
 * than once per byte, and the search state is in the per-CPU copy, so each step starts from unknown values.
 */
static long tftp_blksize_step(__u32 index, void *unused)
{
	struct tftp_request *req = tftp_request_copy();
	__u32 i = index + 2;

	(void)unused;
	if (!req || i >= req->n || i >= TFTP_REQUEST_SCAN)
		return 1;
	/* Restate i < TFTP_REQUEST_SCAN on the register the load uses: clang tests a copy of it. */
	asm volatile("%[i] &= 255" : [i] "+r"(i));
	if (req->bytes[i] != 0)
		return 0;
	if (req->value_start) {
		req->value_end = i;
		return 1;
	}
	/* Option names are the strings numbered 2, 4, ...; the shortest request naming one reaches 10. */
	if (req->strings >= 2 && !(req->strings & 1) && i >= 10 && tftp_is_blksize(req, i))
		req->value_start = i + 1;
	req->strings++;
	return 0;
}

/* Finds where blksize's value lies in the copied request; returns 0 and fills value when it does. */
static __always_inline int tftp_find_blksize(struct tftp_request *req, struct tftp_option_value *value)
{
	req->strings = 0;
	req->value_start = 0;
	req->value_end = 0;
	if (bpf_loop(TFTP_REQUEST_SCAN - 2, tftp_blksize_step, NULL, 0) < 0)
		return -1;
	__u32 start = req->value_start, end = req->value_end;
	if (!end || end <= start || end >= TFTP_REQUEST_SCAN)
		return -1;
	value->start = start;
	value->end = end;
	return 0;
}

/* The decimal value of digits [start, end), or -1 when they are not 1 to TFTP_BLKSIZE_DIGITS digits. */
static __always_inline long tftp_decimal(const struct tftp_request *req,
					 const struct tftp_option_value *value)
{
	__u32 len = value->end - value->start;
	long number = 0;

	if (len < 1 || len > TFTP_BLKSIZE_DIGITS)
		return -1;
	for (__u32 i = 0; i < TFTP_BLKSIZE_DIGITS; i++) {
		if (i >= len)
			break;
		__u8 c = req->bytes[(value->start + i) & (TFTP_REQUEST_SCAN - 1)];
		if (c < '0' || c > '9')
			return -1;
		number = number * 10 + (c - '0');
	}
	return number;
}

/*
 * Lowers the blksize a read request asks for to what one unfragmented datagram through the pod's MTU
 * carries; l4_off and l4_end locate the UDP datagram in the frame. Leaves the request as it is when it asks
 * for no more, names no blksize, or cannot be read. Returns 1 when it rewrote the request.
 *
 * A global function: the verifier checks it once, on its own, instead of walking its loops again for every
 * path of the program that calls it.
 */
__noinline int tftp_clamp_blksize(struct __sk_buff *skb, __u32 l4_off, __u32 l4_end, __u32 pod_mtu)
{
	struct tftp_request *req = tftp_request_copy();
	struct ip_packet pkt = {.l4_off = l4_off, .l4_end = l4_end};
	__u32 off = l4_off + sizeof(struct udphdr);

	if (!skb || !req || pod_mtu < TFTP_DATA_OVERHEAD + TFTP_MIN_BLKSIZE || pod_mtu > 0xffff ||
	    off + 4 > l4_end || l4_end > 0xffff)
		return 0;
	__u32 n = l4_end - off; /* at least 4 */
	if (n > TFTP_REQUEST_SCAN)
		n = TFTP_REQUEST_SCAN;
	/* Restate 1 <= n <= TFTP_REQUEST_SCAN where the verifier sees it. */
	asm volatile("%[n] += -1; %[n] &= 255; %[n] += 1" : [n] "+r"(n));
	if (bpf_skb_load_bytes(skb, off, req->bytes, n))
		return 0;
	if (req->bytes[0] != 0 || req->bytes[1] != TFTP_RRQ)
		return 0;
	req->n = n;

	struct tftp_option_value value;
	if (tftp_find_blksize(req, &value))
		return 0;
	long asked = tftp_decimal(req, &value);
	long fits = pod_mtu - TFTP_DATA_OVERHEAD;
	if (asked <= fits)
		return 0; /* also -1: not a number, for the server to refuse */

	/* fits has at most 5 digits and asked as many or more: written right-aligned, zeros in front. */
	__u8 digits[TFTP_BLKSIZE_DIGITS] = {};
	__u32 len = value.end - value.start;
	for (int i = TFTP_BLKSIZE_DIGITS - 1; i >= 0; i--) {
		if ((__u32)i < len) {
			digits[i] = '0' + fits % 10;
			fits /= 10;
		}
	}
	/* One byte at a time: a constant length keeps each checksum update's window small and plain. */
	for (__u32 i = 0; i < TFTP_BLKSIZE_DIGITS; i++) {
		if (i >= len)
			break;
		if (udp_store_csum(skb, &pkt, off + value.start + i, &digits[i], 1))
			return 0;
	}
	count(BPFNET_CTR_TFTP_BLKSIZE_CLAMPED);
	return 1;
}

#endif /* BPFNET_TFTP_H */
