#!/usr/bin/env python3
"""A host on the provisioning LAN that lies: frames with another host's source address, sent from its own NIC
(its own source MAC, as a real attacker's NIC sends them), no scapy.

usage: spoof.py syn IFACE --src-ip IP --dst-ip IP --dst-mac MAC --dport PORT
           One TCP SYN in the name of --src-ip.
       spoof.py tftp-flood IFACE --src-ip IP[,IP...] --dst-ip IP --dst-mac MAC --count N [--rate R] [--file F]
           N TFTP read requests for F (default pxelinux.0) to --dst-ip:69, in the names of the --src-ip
           addresses in turn, each from a new source port, paced at R per second (default 10000). Prints
           "sent N in S s".
       spoof.py arp-flood IFACE --src-ip FIRST --dst-ip IP --count N [--distinct D] [--rate R]
           N ARP requests who-has --dst-ip, each from the next made-up sender address from FIRST on (FIRST,
           FIRST+1, ..., FIRST+D-1, then FIRST again), with the NIC's MAC, broadcast, paced at R per second.
           A sender seen again is one the datapath's table has: an LRU keeps entries that are looked up.
       spoof.py ns-flood IFACE --src-ip FIRST --dst-ip IP6 --count N [--distinct D] [--rate R]
           The same with IPv6 neighbour solicitations for --dst-ip (to its solicited-node group), each with the
           NIC's MAC as source link-layer address.
Run it inside the namespace of IFACE (ip netns exec NS spoof.py ...).
"""
import ipaddress
import argparse
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from dhcp_send import checksum, interface_mac  # noqa: E402

ETH_P_IP = 0x0800


def ipv4(src, dst, proto, l4):
    head = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 0x4242, 0x4000, 64, proto, 0,
                       socket.inet_aton(src), socket.inet_aton(dst))
    return head[:10] + struct.pack("!H", checksum(head)) + head[12:] + l4


def pseudo(src, dst, proto, length):
    return socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, proto, length)


def tcp_syn(src, dst, sport, dport):
    seg = struct.pack("!HHIIBBHHH", sport, dport, 0x1000, 0, 5 << 4, 0x02, 0xFFFF, 0, 0)
    csum = checksum(pseudo(src, dst, socket.IPPROTO_TCP, len(seg)) + seg)
    return ipv4(src, dst, socket.IPPROTO_TCP, seg[:16] + struct.pack("!H", csum) + seg[18:])


def udp(src, dst, sport, dport, payload):
    length = 8 + len(payload)
    dgram = struct.pack("!HHHH", sport, dport, length, 0) + payload
    csum = checksum(pseudo(src, dst, socket.IPPROTO_UDP, length) + dgram) or 0xFFFF
    return ipv4(src, dst, socket.IPPROTO_UDP, dgram[:6] + struct.pack("!H", csum) + dgram[8:])


ETH_P_ARP = 0x0806
ETH_P_IPV6 = 0x86DD


def arp_request(mac, sender, target):
    return struct.pack("!HHBBH6s4s6s4s", 1, ETH_P_IP, 6, 4, 1, mac, sender.packed, b"\0" * 6, target.packed)


def solicited_node(target):
    return ipaddress.IPv6Address(b"\xff\x02" + b"\0" * 9 + b"\x01\xff" + target.packed[13:])


def neighbour_solicitation(mac, source, target):
    """Ethernet payload (IPv6 header and ICMPv6) of a solicitation for target from source (RFC 4861 4.3)."""
    group = solicited_node(target)
    body = struct.pack("!BBHI16sBB6s", 135, 0, 0, 0, target.packed, 1, 1, mac)
    pseudo = source.packed + group.packed + struct.pack("!IxxxB", len(body), 58)
    body = body[:2] + struct.pack("!H", checksum(pseudo + body)) + body[4:]
    head = struct.pack("!IHBB16s16s", 6 << 28, len(body), 58, 255, source.packed, group.packed)
    return group, head + body


def flood(s, count, rate, frame_of):
    """count frames, frame_of(i) each, paced in bursts every 10 ms; returns the seconds taken."""
    started = time.monotonic()
    burst = max(1, rate // 100)
    for i in range(count):
        s.send(frame_of(i))
        if (i + 1) % burst == 0:
            ahead = started + (i + 1) / rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
    return time.monotonic() - started


def opened(iface):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    return s


def ethernet(dst_mac, src_mac, packet):
    return bytes.fromhex(dst_mac.replace(":", "")) + src_mac + struct.pack("!H", ETH_P_IP) + packet


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["syn", "tftp-flood", "arp-flood", "ns-flood"])
    p.add_argument("iface")
    p.add_argument("--src-ip", required=True)
    p.add_argument("--dst-ip", required=True)
    p.add_argument("--dst-mac", help="syn and tftp-flood: the node's NIC")
    p.add_argument("--dport", type=int, default=22)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--distinct", type=int, default=0, help="made-up senders, in turn (default: --count)")
    p.add_argument("--rate", type=int, default=10000)
    p.add_argument("--file", default="pxelinux.0")
    a = p.parse_args()
    s = opened(a.iface)
    mac = interface_mac(a.iface)
    if a.mode in ("syn", "tftp-flood") and not a.dst_mac:
        p.error(f"{a.mode} needs --dst-mac")
    if a.mode == "syn":
        s.send(ethernet(a.dst_mac, mac, tcp_syn(a.src_ip, a.dst_ip, 40000, a.dport)))
        print(f"sent a SYN from {a.src_ip}:40000 to {a.dst_ip}:{a.dport}")
        return
    distinct = a.distinct or a.count
    if a.mode == "arp-flood":
        first, target = ipaddress.IPv4Address(a.src_ip), ipaddress.IPv4Address(a.dst_ip)
        broadcast = b"\xff" * 6
        took = flood(s, a.count, a.rate, lambda i: broadcast + mac + struct.pack("!H", ETH_P_ARP) +
                     arp_request(mac, first + i % distinct, target))
        print(f"sent {a.count} in {took:.1f} s")
        return
    if a.mode == "ns-flood":
        first, target = ipaddress.IPv6Address(a.src_ip), ipaddress.IPv6Address(a.dst_ip)
        group = solicited_node(target)
        group_mac = b"\x33\x33" + group.packed[12:]
        took = flood(s, a.count, a.rate, lambda i: group_mac + mac + struct.pack("!H", ETH_P_IPV6) +
                     neighbour_solicitation(mac, first + i % distinct, target)[1])
        print(f"sent {a.count} in {took:.1f} s")
        return
    sources = a.src_ip.split(",")
    request = b"\x00\x01" + a.file.encode() + b"\x00octet\x00"
    # Each request from a new source port, spread over the port range.
    took = flood(s, a.count, a.rate, lambda i: ethernet(a.dst_mac, mac, udp(
        sources[i % len(sources)], a.dst_ip, 1024 + (i * 7919) % 64000, 69, request)))
    print(f"sent {a.count} in {took:.1f} s")


if __name__ == "__main__":
    main()
