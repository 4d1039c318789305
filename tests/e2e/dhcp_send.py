#!/usr/bin/env python3
"""Crafted DHCP and UDP packets for the e2e tests (bad input through the real path), no scapy.

usage: dhcp_send.py truncated IFACE [--bytes N]
           Broadcasts a DHCP "request" whose BOOTP message is cut short: Ethernet broadcast, IP
           0.0.0.0 -> 255.255.255.255, UDP 68 -> 67, N payload bytes (default 100; a BOOTP header needs
           236 and the magic cookie 4 more). Lengths and checksums are consistent, so only the BOOTP
           layer is wrong.
       dhcp_send.py discover IFACE --hops H [--xid X]
           Broadcasts a well-formed DHCPDISCOVER from IFACE's MAC with the hops field set to H.
       dhcp_send.py udp DST_IP DST_PORT [--sport P] [--payload HEX]
           Sends one UDP datagram through an ordinary socket (the kernel picks the route and source).
           The default payload is a TFTP ACK of block 1 (00 04 00 01).
Each prints what it sent. Run it inside the namespace of IFACE (ip netns exec NS dhcp_send.py ...).
"""
import argparse
import fcntl
import os
import socket
import struct
import sys

ETH_P_IP = 0x0800
SIOCGIFHWADDR = 0x8927
DHCP_COOKIE = b"\x63\x82\x53\x63"


def interface_mac(iface):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        return fcntl.ioctl(s.fileno(), SIOCGIFHWADDR, struct.pack("256s", iface.encode()[:15]))[18:24]


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def udp_frame(src_mac, payload, src_ip="0.0.0.0", dst_ip="255.255.255.255", sport=68, dport=67):
    src, dst = socket.inet_aton(src_ip), socket.inet_aton(dst_ip)
    ulen = 8 + len(payload)
    pseudo = src + dst + struct.pack("!BBH", 0, socket.IPPROTO_UDP, ulen)
    udp = struct.pack("!HHHH", sport, dport, ulen, 0) + payload
    csum = checksum(pseudo + udp) or 0xFFFF
    udp = udp[:6] + struct.pack("!H", csum) + udp[8:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + ulen, 0, 0, 64, socket.IPPROTO_UDP, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    return b"\xff" * 6 + src_mac + struct.pack("!H", ETH_P_IP) + ip + udp


def bootp(mac, hops=0, xid=None, msg_type=1, flags=0):
    """A BOOTREQUEST with DHCP message type msg_type, and its xid (random unless given)."""
    xid = xid if xid is not None else struct.unpack("!I", os.urandom(4))[0]
    head = struct.pack("!BBBBIHH", 1, 1, 6, hops, xid, 0, flags) + b"\0" * 16 + mac + b"\0" * 10
    head += b"\0" * 64 + b"\0" * 128
    options = DHCP_COOKIE + bytes([53, 1, msg_type, 55, 3, 1, 3, 54, 255])
    return head + options + b"\0" * 8, xid


def send_frame(iface, frame):
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((iface, 0))
        s.send(frame)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("truncated")
    p.add_argument("iface")
    p.add_argument("--bytes", type=int, default=100)
    p = sub.add_parser("discover")
    p.add_argument("iface")
    p.add_argument("--hops", type=int, required=True)
    p.add_argument("--xid", type=lambda v: int(v, 0))
    p = sub.add_parser("udp")
    p.add_argument("dst_ip")
    p.add_argument("dst_port", type=int)
    p.add_argument("--sport", type=int, default=0)
    p.add_argument("--payload", default="00040001")
    args = parser.parse_args()

    if args.command == "truncated":
        mac = interface_mac(args.iface)
        message, _ = bootp(mac)
        send_frame(args.iface, udp_frame(mac, message[:args.bytes]))
        print("sent a %d-byte BOOTP message, broadcast, from %s" % (args.bytes, ":".join("%02x" % b for b in mac)))
    elif args.command == "discover":
        mac = interface_mac(args.iface)
        message, xid = bootp(mac, hops=args.hops, xid=args.xid)
        send_frame(args.iface, udp_frame(mac, message))
        print("sent DHCPDISCOVER xid %08x hops %d, broadcast" % (xid, args.hops))
    else:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("0.0.0.0", args.sport))
            s.sendto(bytes.fromhex(args.payload), (args.dst_ip, args.dst_port))
            print("sent %d bytes from port %d to %s:%d" % (len(args.payload) // 2, s.getsockname()[1],
                                                           args.dst_ip, args.dst_port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
