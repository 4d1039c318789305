#!/usr/bin/env python3
"""Router solicitations and advertisements on a host's interface, for the e2e tests (a raw AF_PACKET socket).

usage: ra_watch.py watch SECONDS IFACE
           Prints "listening" once bound, then for SECONDS one line per router solicitation the host sends and
           router advertisement it receives (ICMPv6 133 and 134, hop limit 255):
             MONOTONIC out rs src=ADDRESS
             MONOTONIC in ra src=ADDRESS dst=ADDRESS
           MONOTONIC: seconds of CLOCK_MONOTONIC. The interface may go down and up meanwhile.
       ra_watch.py answers LOG
           Pairs each solicitation of LOG with the first advertisement after it. Prints one line per
           solicitation, "answered SECONDS" or "unanswered" (the host solicited again, or the log ended, first),
           then "median SECONDS max SECONDS" of the answered. Exit 1 when a solicitation was unanswered.

Run it inside the network namespace of IFACE (ip netns exec NS ra_watch.py ...).
"""
import select
import socket
import statistics
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
ICMPV6 = 58


def parse(frame):
    """(type, source, destination) of an Ethernet/IPv6 ICMPv6 router solicitation or advertisement, or None."""
    if len(frame) < 14 + 40 + 4 or frame[12:14] != b"\x86\xdd":
        return None
    ip6 = frame[14:54]
    if ip6[6] != ICMPV6 or ip6[7] != 255:
        return None
    icmp_type = frame[54]
    if icmp_type not in (133, 134):
        return None
    return icmp_type, socket.inet_ntop(socket.AF_INET6, ip6[8:24]), socket.inet_ntop(socket.AF_INET6, ip6[24:40])


def watch(seconds, iface):
    # ETH_P_ALL: a socket bound to one protocol sees no outgoing frames (the kernel's taps for them are ETH_P_ALL's).
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.bind((iface, ETH_P_ALL))
    sock.setblocking(False)
    print("listening", flush=True)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([sock], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            continue
        try:
            frame, addr = sock.recvfrom(2048)
        except (BlockingIOError, OSError):  # ENETDOWN while the link is down
            continue
        now = time.monotonic()
        seen = parse(frame)
        if not seen:
            continue
        icmp_type, src, dst = seen
        outgoing = addr[2] == PACKET_OUTGOING
        if icmp_type == 133 and outgoing:
            print("%.6f out rs src=%s" % (now, src), flush=True)
        elif icmp_type == 134 and not outgoing:
            print("%.6f in ra src=%s dst=%s" % (now, src, dst), flush=True)


def answers(path):
    events = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[1] in ("out", "in"):
                events.append((float(parts[0]), parts[2]))
    delays, unanswered = [], 0
    for i, (at, kind) in enumerate(events):
        if kind != "rs":
            continue
        answer = None
        for later_at, later_kind in events[i + 1:]:
            if later_kind == "rs":
                break
            if later_kind == "ra":
                answer = later_at - at
                break
        if answer is None:
            unanswered += 1
            print("unanswered")
        else:
            delays.append(answer)
            print("answered %.3f" % answer)
    if delays:
        print("median %.3f max %.3f" % (statistics.median(delays), max(delays)))
    return 1 if unanswered or not delays else 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "watch":
        watch(float(sys.argv[2]), sys.argv[3])
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "answers":
        return answers(sys.argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
