#!/usr/bin/env python3
"""ARP probing and watching for the e2e tests, with a raw AF_PACKET socket (no scapy).

usage: arp_probe.py [--timeout SECONDS] IFACE IP
           Sends one who-has IP out of IFACE (from IFACE's MAC and IPv4 address) and waits up to
           SECONDS (default 0.5) for an is-at from IP. Prints "answered MAC" or "silent".
           Exit 0: answered; 1: not answered; 2: usage or socket error.
       arp_probe.py --every SECONDS --count N IFACE IP
           N such probes, one every SECONDS; each collects answers until the next is sent. One line
           per probe: "MONOTONIC answered MAC[,MAC...]" (every distinct MAC that answered, in order) or
           "MONOTONIC silent", MONOTONIC being the send time in seconds of CLOCK_MONOTONIC (the clock of
           bpf_ktime_get_ns()). Exit 0 unless an error occurs.
       arp_probe.py --watch SECONDS IFACE IP
           Sends nothing. Prints "listening" once the socket is bound, then one line per ARP frame that
           concerns IP, seen on IFACE in either direction, for SECONDS:
             MONOTONIC in|out announce|request|reply sha=MAC spa=IP tpa=IP
           announce: sender and target address are both IP (RFC 5227 announcement or gratuitous ARP);
           request: a who-has for IP from someone else; reply: an is-at from IP. Exit 0.

Run it inside the network namespace of IFACE (ip netns exec NS arp_probe.py ...).
"""
import argparse
import fcntl
import select
import socket
import struct
import sys
import time

ETH_P_ARP = 0x0806
ARPOP_REQUEST = 1
ARPOP_REPLY = 2
PACKET_OUTGOING = 4
SIOCGIFHWADDR = 0x8927
SIOCGIFADDR = 0x8915
BROADCAST = b"\xff" * 6


def mac_text(raw):
    return ":".join("%02x" % b for b in raw)


def interface_addresses(iface):
    """IFACE's MAC and IPv4 address (0.0.0.0 when it has none), through ioctl: /sys may be another netns'."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("256s", iface.encode()[:15])
        mac = fcntl.ioctl(s.fileno(), SIOCGIFHWADDR, req)[18:24]
        try:
            ip = fcntl.ioctl(s.fileno(), SIOCGIFADDR, req)[20:24]
        except OSError:
            ip = b"\0\0\0\0"
    return mac, ip


def open_socket(iface):
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ARP))
    sock.bind((iface, ETH_P_ARP))
    # Frames from other interfaces may have queued before bind: drop them.
    sock.setblocking(False)
    try:
        while True:
            sock.recv(2048)
    except BlockingIOError:
        pass
    return sock


def parse_arp(frame):
    """(op, sha, spa, tha, tpa) of an Ethernet/IPv4 ARP frame, or None."""
    if len(frame) < 42 or frame[12:14] != b"\x08\x06":
        return None
    hrd, pro, hln, pln, op = struct.unpack("!HHBBH", frame[14:22])
    if hrd != 1 or pro != 0x0800 or hln != 6 or pln != 4:
        return None
    return op, frame[22:28], frame[28:32], frame[32:38], frame[38:42]


def who_has(src_mac, src_ip, target_ip):
    eth = BROADCAST + src_mac + struct.pack("!H", ETH_P_ARP)
    arp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, ARPOP_REQUEST) + src_mac + src_ip + b"\0" * 6 + target_ip
    return eth + arp


def wait_answer(sock, target_ip, deadline):
    """The MAC of the first is-at from target_ip that arrives before deadline (monotonic), or None."""
    answers = wait_answers(sock, target_ip, deadline, first_only=True)
    return answers[0] if answers else None


def wait_answers(sock, target_ip, deadline, first_only=False):
    """The distinct MACs of the is-at replies from target_ip that arrive before deadline (monotonic)."""
    macs = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return macs
        ready, _, _ = select.select([sock], [], [], left)
        if not ready:
            return macs
        try:
            frame, addr = sock.recvfrom(2048)
        except BlockingIOError:
            continue
        if addr[2] == PACKET_OUTGOING:
            continue
        arp = parse_arp(frame)
        if arp and arp[0] == ARPOP_REPLY and arp[2] == target_ip and arp[1] not in macs:
            macs.append(arp[1])
            if first_only:
                return macs


def probe(sock, iface, target_ip, timeout):
    src_mac, src_ip = interface_addresses(iface)
    sent = time.monotonic()
    sock.send(who_has(src_mac, src_ip, target_ip))
    return sent, wait_answer(sock, target_ip, sent + timeout)


def watch(sock, target_ip, seconds):
    print("listening", flush=True)
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        ready, _, _ = select.select([sock], [], [], left)
        if not ready:
            continue
        try:
            frame, addr = sock.recvfrom(2048)
        except BlockingIOError:
            continue
        now = time.monotonic()
        arp = parse_arp(frame)
        if not arp:
            continue
        op, sha, spa, _, tpa = arp
        if spa == target_ip and tpa == target_ip:
            kind = "announce"
        elif op == ARPOP_REQUEST and tpa == target_ip:
            kind = "request"
        elif op == ARPOP_REPLY and spa == target_ip:
            kind = "reply"
        else:
            continue
        print("%.6f %s %s sha=%s spa=%s tpa=%s" % (
            now, "out" if addr[2] == PACKET_OUTGOING else "in", kind, mac_text(sha),
            socket.inet_ntoa(spa), socket.inet_ntoa(tpa)), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=0.5)
    parser.add_argument("--every", type=float)
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--watch", type=float, metavar="SECONDS")
    parser.add_argument("iface")
    parser.add_argument("ip")
    args = parser.parse_args()
    try:
        target_ip = socket.inet_aton(args.ip)
        sock = open_socket(args.iface)
        if args.watch is not None:
            watch(sock, target_ip, args.watch)
            return 0
        if args.every is not None:
            src_mac, src_ip = interface_addresses(args.iface)
            for _ in range(args.count):
                sent = time.monotonic()
                sock.send(who_has(src_mac, src_ip, target_ip))
                macs = wait_answers(sock, target_ip, sent + args.every)
                print("%.6f %s" % (sent, "answered " + ",".join(mac_text(m) for m in macs) if macs else "silent"),
                      flush=True)
                time.sleep(max(0.0, sent + args.every - time.monotonic()))
            return 0
        _, mac = probe(sock, args.iface, target_ip, args.timeout)
    except OSError as e:
        print("arp_probe: %s" % e, file=sys.stderr)
        return 2
    print("answered " + mac_text(mac) if mac else "silent")
    return 0 if mac else 1


if __name__ == "__main__":
    sys.exit(main())
