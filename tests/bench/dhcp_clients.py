#!/usr/bin/env python3
"""Many DHCP clients at once, for the DHCP benchmark: CLIENTS simulated machines (distinct MACs) on IFACE
each do a full DISCOVER/OFFER/REQUEST/ACK exchange, broadcasting from 0.0.0.0:68 with the broadcast flag
set (as PXE firmware does), at most WINDOW exchanges in flight at a time (machines powered on together).
Raw AF_PACKET sockets, so the kernel on IFACE's side plays no client role (no addresses are configured).

usage: dhcp_clients.py IFACE --clients N [--exchanges E] [--window W] [--timeout S] [--mac-prefix HH:HH]
E exchanges in all (default N): the clients take turns, so each machine boots E/N times, never twice at once.
Prints one JSON object: completed, unanswered (no ACK within S seconds of the DISCOVER), seconds (first
DISCOVER to last ACK), leases_per_s, and DISCOVER -> ACK p50_ms and p99_ms over the completed exchanges.
Exit 1 if no exchange completed. Run it inside IFACE's namespace (ip netns exec NS ...).
"""
import argparse
import json
import os
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from dhcp_send import DHCP_COOKIE, udp_frame  # noqa: E402  (the e2e tests' frame builder)

DISCOVER, OFFER, REQUEST, ACK = 1, 2, 3, 5
BROADCAST_FLAG = 0x8000


def message(mac, xid, msg_type, requested=None, server=None):
    head = struct.pack("!BBBBIHH", 1, 1, 6, 0, xid, 0, BROADCAST_FLAG) + b"\0" * 16 + mac + b"\0" * 10
    head += b"\0" * 192
    options = DHCP_COOKIE + bytes([53, 1, msg_type])
    if requested:
        options += bytes([50, 4]) + requested
    if server:
        options += bytes([54, 4]) + server
    options += bytes([55, 3, 1, 3, 67, 255])
    return head + options + b"\0" * max(0, 300 - len(head) - len(options))


def reply(frame):
    """(xid, type, yiaddr, server id) of a BOOTREPLY to port 68 in an Ethernet frame, or None."""
    if len(frame) < 14 + 20 + 8 + 240 or frame[12:14] != b"\x08\x00" or frame[23] != socket.IPPROTO_UDP:
        return None
    ihl = (frame[14] & 0x0F) * 4
    udp = 14 + ihl
    if struct.unpack("!H", frame[udp + 2:udp + 4])[0] != 68:
        return None
    bootp = frame[udp + 8:]
    if bootp[0] != 2 or bootp[236:240] != DHCP_COOKIE:
        return None
    xid = struct.unpack("!I", bootp[4:8])[0]
    msg_type, server, i = None, None, 240
    while i + 1 < len(bootp) and bootp[i] != 255:
        if bootp[i] == 0:
            i += 1
            continue
        code, length = bootp[i], bootp[i + 1]
        value = bootp[i + 2:i + 2 + length]
        if code == 53 and length == 1:
            msg_type = value[0]
        elif code == 54 and length == 4:
            server = value
        i += 2 + length
    return xid, msg_type, bootp[16:20], server


def quantile(values, q):
    return values[round(q * (len(values) - 1))]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("iface")
    parser.add_argument("--clients", type=int, required=True)
    parser.add_argument("--exchanges", type=int)
    parser.add_argument("--window", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--mac-prefix", default="02:be")
    args = parser.parse_args()
    exchanges = args.exchanges or args.clients
    if args.window > args.clients:
        parser.error("--window larger than --clients would run one machine twice at once")

    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    sock.bind((args.iface, 0))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    prefix = bytes(int(h, 16) for h in args.mac_prefix.split(":"))
    base = struct.unpack("!I", os.urandom(4))[0] & 0xFFFF0000
    pending = {}  # xid -> (mac, DISCOVER time)
    times, unanswered, next_client = [], 0, 0
    start = last = time.monotonic()

    def discover():
        nonlocal next_client
        mac = prefix + struct.pack("!I", next_client % args.clients)
        xid = (base + next_client) & 0xFFFFFFFF
        next_client += 1
        pending[xid] = (mac, time.monotonic())
        sock.send(udp_frame(mac, message(mac, xid, DISCOVER)))

    while next_client < exchanges or pending:
        while next_client < exchanges and len(pending) < args.window:
            discover()
        now = time.monotonic()
        for xid in [x for x, (_, t) in pending.items() if now - t > args.timeout]:
            del pending[xid]
            unanswered += 1
        if not select.select([sock], [], [], 0.05)[0]:
            continue
        got = reply(sock.recv(2048))
        if not got or got[0] not in pending:
            continue
        xid, msg_type, yiaddr, server = got
        mac, t0 = pending[xid]
        if msg_type == OFFER:
            sock.send(udp_frame(mac, message(mac, xid, REQUEST, requested=yiaddr, server=server)))
        elif msg_type == ACK:
            last = time.monotonic()
            times.append(last - t0)
            del pending[xid]
    if not times:
        print(json.dumps({"completed": 0, "unanswered": unanswered}))
        return 1
    times.sort()
    seconds = last - start
    print(json.dumps({"completed": len(times), "unanswered": unanswered, "seconds": round(seconds, 4),
                      "leases_per_s": round(len(times) / seconds, 1), "p50_ms": round(quantile(times, 0.5) * 1000, 3),
                      "p99_ms": round(quantile(times, 0.99) * 1000, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
