#!/usr/bin/env python3
"""Sends one ICMP "fragmentation needed" (RFC 1191) as a router on the LAN would, for the e2e tests.

usage: icmp_send.py --to ADDR --mtu MTU --quote SRC:SPORT-DST:DPORT [--proto udp|tcp]
The message goes to ADDR and quotes the header of a packet SRC:SPORT -> DST:DPORT (its IP header and
the first 8 bytes of its UDP or TCP header, as RFC 792 asks), with next-hop MTU MTU. Run it inside the
network namespace of the sender (ip netns exec NS icmp_send.py ...).
"""
import argparse
import socket
import struct
import sys

from dhcp_send import checksum  # the Internet checksum (RFC 1071), beside this script


def endpoint(text):
    addr, port = text.rsplit(":", 1)
    return socket.inet_aton(addr), int(port)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--to", required=True)
    parser.add_argument("--mtu", type=int, required=True)
    parser.add_argument("--quote", required=True)
    parser.add_argument("--proto", choices=("udp", "tcp"), default="udp")
    args = parser.parse_args()
    (src, sport), (dst, dport) = (endpoint(p) for p in args.quote.split("-"))
    proto = socket.IPPROTO_UDP if args.proto == "udp" else socket.IPPROTO_TCP
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
