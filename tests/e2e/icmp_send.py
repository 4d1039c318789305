#!/usr/bin/env python3
"""Sends one ICMP "fragmentation needed" (RFC 1191) or ICMPv6 "packet too big" (RFC 4443 3.2) as a router
on the LAN would, for the e2e tests.

usage: icmp_send.py --to ADDR --mtu MTU --quote SRC:SPORT-DST:DPORT [--proto udp|tcp]
The message goes to ADDR and quotes a packet SRC:SPORT -> DST:DPORT with next-hop MTU MTU. IPv4: its IP
header and the first 8 bytes of its UDP or TCP header, as RFC 792 asks. IPv6 (addresses in brackets,
[2001:2::2]:69): its fixed header and a 1180-byte datagram or segment with correct checksums, as much as
fits in 1280 bytes. Run it inside the network namespace of the sender (ip netns exec NS icmp_send.py ...).
"""
import argparse
import socket
import struct
import sys

from dhcp_send import checksum  # the Internet checksum (RFC 1071), beside this script


def endpoint(text):
    addr, port = text.rsplit(":", 1)
    if addr.startswith("["):
        return socket.inet_pton(socket.AF_INET6, addr[1:-1]), int(port)
    return socket.inet_aton(addr), int(port)


def packet_too_big(to, mtu, src, sport, dst, dport, proto):
    """The ICMPv6 error, quoting an IPv6 packet whose L4 checksum is right; the kernel fills in the ICMPv6
    checksum of a raw ICMPv6 socket (RFC 3542 3.1)."""
    data = b"x" * 1160
    if proto == socket.IPPROTO_UDP:
        l4 = struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data
        check_at = 6
    else:
        l4 = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, 0x18, 1000, 0, 0) + data
        check_at = 16
    pseudo = src + dst + struct.pack("!IxxxB", len(l4), proto)
    l4 = l4[:check_at] + struct.pack("!H", checksum(pseudo + l4) or 0xFFFF) + l4[check_at + 2:]
    ip6 = struct.pack("!IHBB16s16s", 6 << 28, len(l4), proto, 64, src, dst)
    body = struct.pack("!BBHI", 2, 0, 0, mtu) + ip6 + l4
    sock = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
    sock.sendto(body, (to, 0))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--to", required=True)
    parser.add_argument("--mtu", type=int, required=True)
    parser.add_argument("--quote", required=True)
    parser.add_argument("--proto", choices=("udp", "tcp"), default="udp")
    args = parser.parse_args()
    (src, sport), (dst, dport) = (endpoint(p) for p in args.quote.split("-"))
    proto = socket.IPPROTO_UDP if args.proto == "udp" else socket.IPPROTO_TCP
    if ":" in args.to:
        packet_too_big(args.to, args.mtu, src, sport, dst, dport, proto)
        return 0
    total = 20 + 8 + 1400  # the quoted packet's length: it was too big for the next hop
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0x4242, 0x4000, 63, proto, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    if proto == socket.IPPROTO_UDP:
        l4 = struct.pack("!HHHH", sport, dport, total - 20, 0)
    else:
        l4 = struct.pack("!HHI", sport, dport, 1)
    body = struct.pack("!BBHHH", 3, 4, 0, 0, args.mtu) + ip + l4
    body = body[:2] + struct.pack("!H", checksum(body)) + body[4:]
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    sock.sendto(body, (args.to, 0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
