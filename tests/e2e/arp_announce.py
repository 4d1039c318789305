#!/usr/bin/env python3
"""Sends gratuitous ARP claiming an address for a given MAC, with a raw AF_PACKET socket (no scapy): how a
second owner of a service IP (a pivot gone wrong, another cluster) shows itself on the LAN.

usage: arp_announce.py [--count N] [--op request|reply] IFACE IP MAC

Sends N (default 1) broadcast frames from MAC whose ARP sender and target address are both IP and whose
sender hardware address is MAC. --op reply (the default) sends an unsolicited is-at; request sends an
RFC 5227 style announcement. Exit 0 when sent, 2 on a usage or socket error.

Run it inside the network namespace of IFACE (ip netns exec NS arp_announce.py ...).
"""
import argparse
import socket
import struct
import sys

ETH_P_ARP = 0x0806
OPS = {"request": 1, "reply": 2}


def frame(ip, mac, op):
    eth = b"\xff" * 6 + mac + struct.pack("!H", ETH_P_ARP)
    target_mac = b"\xff" * 6 if op == OPS["reply"] else b"\0" * 6
    return eth + struct.pack("!HHBBH", 1, 0x0800, 6, 4, op) + mac + ip + target_mac + ip


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--op", choices=sorted(OPS), default="reply")
    parser.add_argument("iface")
    parser.add_argument("ip")
    parser.add_argument("mac")
    args = parser.parse_args()
    try:
        ip = socket.inet_aton(args.ip)
        mac = bytes(int(part, 16) for part in args.mac.split(":"))
        if len(mac) != 6:
            raise ValueError("MAC must have 6 parts")
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ARP)) as sock:
            sock.bind((args.iface, ETH_P_ARP))
            for _ in range(args.count):
                sock.send(frame(ip, mac, OPS[args.op]))
    except (OSError, ValueError) as e:
        print("arp_announce: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
