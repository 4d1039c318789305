#!/usr/bin/env python3
"""ARP probing and watching for the e2e tests, with a raw AF_PACKET socket (no scapy).

usage: arp_probe.py [--timeout SECONDS] IFACE IP
           Sends one who-has IP out of IFACE (from IFACE's MAC and IPv4 address) and waits up to
           SECONDS (default 0.5) for an is-at from IP. Prints "answered MAC" or "silent".
           Exit 0: answered; 1: not answered; 2: usage or socket error.
       arp_probe.py --every SECONDS --count N IFACE IP
           N such probes, one every SECONDS; each is answered by the replies to this host that reached the
           socket after it left and before the next one left (the last: within SECONDS), by the kernel's
           time stamps of both, not by when this process read them (on a loaded machine it may read late);
           a MAC's second reply in one probe's time answers the latest earlier probe it had not answered
           (within 1 s: a late answer, not a second one). One line per probe, in order, printed 1 s after
           it left (when no reply can change it) or at the end: "MONOTONIC answered MAC[,MAC...]" (every
           distinct MAC that answered, in order) or "MONOTONIC silent", MONOTONIC being the send time in
           seconds of CLOCK_MONOTONIC (the clock of bpf_ktime_get_ns()). Exit 0 unless an error occurs.
       arp_probe.py --watch SECONDS IFACE IP
           Sends nothing. Prints "listening" once the socket is bound, then one line per ARP frame that
           concerns IP, seen on IFACE in either direction, for SECONDS:
             MONOTONIC in|out announce|request|reply sha=MAC spa=IP tpa=IP
           announce: sender and target address are both IP (RFC 5227 announcement or gratuitous ARP);
           request: a who-has for IP from someone else; reply: an is-at from IP. Exit 0.

Run it inside the network namespace of IFACE (ip netns exec NS arp_probe.py ...).
"""
import argparse
import bisect
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
LATE_ANSWER_S = 1.0
SO_TIMESTAMPNS = 35  # asm-generic/socket.h (SO_TIMESTAMPNS_OLD): struct timespec of CLOCK_REALTIME
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
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([sock], [], [], left)
        if not ready:
            return None
        try:
            frame, addr = sock.recvfrom(2048)
        except BlockingIOError:
            continue
        if addr[2] == PACKET_OUTGOING:
            continue
        arp = parse_arp(frame)
        if arp and arp[0] == ARPOP_REPLY and arp[2] == target_ip:
            return arp[1]


def stamped_frames(sock, until):
    """(frames, read_to): (monotonic seconds the kernel took the frame in, frame, packet type) of every frame
    the socket holds or receives before `until` (monotonic), however late this process reads them; every
    frame the kernel took before read_to is among them (the socket was found empty after it)."""
    frames = []
    # The kernel's stamps are CLOCK_REALTIME; the offset to CLOCK_MONOTONIC is read once per call.
    offset = time.clock_gettime(time.CLOCK_REALTIME) - time.monotonic()
    while True:
        read_to = time.monotonic()
        ready, _, _ = select.select([sock], [], [], max(0.0, until - read_to))
        if not ready:
            return frames, read_to
        try:
            frame, ancillary, _, addr = sock.recvmsg(2048, socket.CMSG_SPACE(16))
        except BlockingIOError:
            continue
        stamp = None
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
                sec, nsec = struct.unpack("qq", data[:16])
                stamp = sec + nsec / 1e9 - offset
        frames.append((stamp if stamp is not None else time.monotonic(), frame, addr[2]))


class Attribution:
    """Who answered each probe, built as probes leave and replies come in (each in time order, on one clock).
    A reply answers the last probe that left before it came in (none: it answers something sent before the
    first). A MAC answers each request once: its second reply in one probe's time is the late answer to an
    earlier probe, the latest it left unanswered within a second (an ARP client's patience), as when the
    kernel's soft interrupts ran late on a loaded machine. A request nobody answered stays so."""

    def __init__(self):
        self.sends, self.answers = [], []

    def sent(self, at):
        self.sends.append(at)
        self.answers.append([])

    def reply(self, stamp, mac):
        index = bisect.bisect_right(self.sends, stamp) - 1
        while index >= 0 and mac in self.answers[index] and stamp - self.sends[index] <= LATE_ANSWER_S:
            index -= 1
        if index >= 0 and mac not in self.answers[index] and stamp - self.sends[index] <= LATE_ANSWER_S:
            self.answers[index].append(mac)

    def settled(self, read_to):
        """How many probes, from the first, no reply the kernel takes after read_to can answer any more."""
        return bisect.bisect_left(self.sends, read_to - LATE_ANSWER_S)


def attribute(sends, replies):
    """[(send time, [MAC...])]: the probes sent at `sends` (ascending) and who answered each, from `replies`
    [(arrival time, MAC)] (all on one clock)."""
    answered = Attribution()
    for at in sends:
        answered.sent(at)
    for stamp, mac in sorted(replies):
        answered.reply(stamp, mac)
    return list(zip(answered.sends, answered.answers))


def probe_every(sock, iface, target_ip, every, count, out):
    """count who-has, one every `every` s, each line written to `out` once no reply can change it any more (a
    second after it left, or at the end). (A packet socket does not see its own frames leave: a probe's time
    is read just before it is sent.)"""
    src_mac, src_ip = interface_addresses(iface)
    request = who_has(src_mac, src_ip, target_ip)
    answered = Attribution()
    written = 0

    def write(upto):
        nonlocal written
        for index in range(written, upto):
            macs = answered.answers[index]
            out.write("%.6f %s\n" % (answered.sends[index],
                                     "answered " + ",".join(mac_text(m) for m in macs) if macs else "silent"))
        if upto > written:
            out.flush()
        written = max(written, upto)

    for _ in range(count):
        sent = time.monotonic()
        sock.send(request)
        answered.sent(sent)
        frames, read_to = stamped_frames(sock, sent + every)
        for stamp, frame, kind in sorted(frames, key=lambda f: f[0]):
            arp = parse_arp(frame)
            if kind == PACKET_OUTGOING or not arp:
                continue
            op, sha, spa, tha, tpa = arp
            # An is-at to this host (an announcement's is to the service IP itself).
            if op == ARPOP_REPLY and spa == target_ip and (tha == src_mac or tpa == src_ip):
                answered.reply(stamp, sha)
        write(answered.settled(read_to))
    write(len(answered.sends))


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
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            probe_every(sock, args.iface, target_ip, args.every, args.count, sys.stdout)
            return 0
        _, mac = probe(sock, args.iface, target_ip, args.timeout)
    except OSError as e:
        print("arp_probe: %s" % e, file=sys.stderr)
        return 2
    print("answered " + mac_text(mac) if mac else "silent")
    return 0 if mac else 1


if __name__ == "__main__":
    sys.exit(main())
