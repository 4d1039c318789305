#!/usr/bin/env python3
"""What a bare-metal host sees of the service IP while its owner changes: HTTP and DHCP probes side by side.

usage: failover_probe.py probe IFACE SERVICE_IP --seconds S [--every SECONDS] [--http-threads N]
           Runs the probers for S seconds and prints one line per try. HTTP: N threads (default 8), started
           SECONDS (default 0.01) apart, each trying every N * SECONDS, so a try that hangs on a dead owner
           does not hide the first answer of the new one. DHCP likewise with 3 threads, each sending a
           DISCOVER every max(3 * SECONDS, 0.03).
             TIME http NAME     an HTTP GET of http://SERVICE_IP/who answered with body NAME
             TIME http -        no answer within 0.1 s (times E2E_TIME_SCALE; or an error)
             TIME dhcp IP       a DHCPOFFER answered a broadcast DISCOVER (from IFACE's MAC) with yiaddr IP
             TIME dhcp -        no offer within 0.1 s (times E2E_TIME_SCALE)
             TIME dhcp - late=IP  no offer within 0.1 s, but one with yiaddr IP within 1 s (times
                                E2E_TIME_SCALE): the DISCOVER was answered, later than a failover's gaps are
                                measured in (a loaded machine: the prober's threads share one interpreter)
           TIME is when the try was sent, in seconds since the epoch (the clock of bash's $EPOCHREALTIME,
           which the test reads without starting a process). Prints "started" first.
       failover_probe.py analyze PROBE_LOG MOVES_LOG [--commits COMMIT_LOG]
           MOVES_LOG has one line per move: "TIME NAME FIRST LAST": at TIME the backend moved to
           the pod NAME, whose DHCP server offers addresses FIRST..LAST. With COMMIT_LOG (the API server
           stand-in's --commit-log), a move starts instead when the stand-in committed the first
           EndpointSlice change after TIME: when the API server had the endpoint ready on the new node.
           For each move, prints the time from the move to the first HTTP answer from NAME and to the
           first offer in its range, and the longest gaps without any HTTP answer and without any DHCP
           offer after it; then medians and worst cases, and every move's figures (JSON, last line).
           Exit 1 when a move never got an answer from its new pod.

Run the probe inside the network namespace of IFACE (ip netns exec NS failover_probe.py ...).
"""
import argparse
import json
import os
import random
import select
import socket
import statistics
import struct
import sys
import threading
import time

from dhcp_send import ETH_P_IP, bootp, interface_mac, udp_frame

# A try that gets no answer gives up after this long; on this LAN an answer takes a few milliseconds. Under
# emulation (the kernel matrix's E2E_TIME_SCALE, as the suites' waits scale) an answer can take longer.
TIMEOUT = 0.1 * float(os.environ.get("E2E_TIME_SCALE", "1"))
LATE = 10 * TIMEOUT
LOCK = threading.Lock()


def emit(line):
    with LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def discover_frame(mac, xid):
    """A broadcast DHCPDISCOVER with the broadcast flag set (dhcp_send.py builds it)."""
    message, _ = bootp(mac, xid=xid, flags=0x8000)
    return udp_frame(mac, message)


def offer_yiaddr(frame, xid):
    """yiaddr of a DHCPOFFER for xid in an Ethernet frame, or None."""
    if len(frame) < 14 + 20 + 8 + 240 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return None
    ihl = (frame[14] & 0x0F) * 4
    udp = 14 + ihl
    if struct.unpack("!H", frame[udp + 2:udp + 4])[0] != 68:
        return None
    message = frame[udp + 8:]
    if len(message) < 240 or message[0] != 2 or struct.unpack("!I", message[4:8])[0] != xid:
        return None
    opts = message[240:]
    i = 0
    while i < len(opts) and opts[i] != 255:
        if opts[i] == 0:
            i += 1
            continue
        if i + 1 >= len(opts):
            break
        code, length = opts[i], opts[i + 1]
        if code == 53 and length == 1 and i + 2 < len(opts) and opts[i + 2] == 2:
            return socket.inet_ntoa(message[16:20])
        i += 2 + length
    return None


def http_prober(ip, seconds, every, delay):
    time.sleep(delay)
    end = time.time() + seconds - delay
    while time.time() < end:
        sent = time.time()
        name = "-"
        try:
            with socket.create_connection((ip, 80), timeout=TIMEOUT) as s:
                s.settimeout(TIMEOUT)
                s.sendall(b"GET /who HTTP/1.0\r\nHost: service\r\n\r\n")
                data = b""
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            if head.startswith(b"HTTP/1.") and b" 200 " in head.split(b"\r\n")[0] and body.strip():
                name = body.strip().decode(errors="replace")
        except OSError:
            pass
        emit("%.6f http %s" % (sent, name))
        time.sleep(max(0.0, sent + every - time.time()))


def offer_within(sock, xid, deadline):
    """yiaddr of the first DHCPOFFER for xid that sock receives before deadline, or "-"."""
    while True:
        left = deadline - time.time()
        if left <= 0:
            return "-"
        ready, _, _ = select.select([sock], [], [], left)
        if not ready:
            return "-"
        got = offer_yiaddr(sock.recv(4096), xid)
        if got:
            return got


def dhcp_prober(iface, seconds, every, delay):
    time.sleep(delay)
    seconds -= delay
    mac = interface_mac(iface)
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
    sock.bind((iface, ETH_P_IP))
    end = time.time() + seconds
    while time.time() < end:
        xid = random.getrandbits(32)
        sent = time.time()
        sock.send(discover_frame(mac, xid))
        got = offer_within(sock, xid, sent + TIMEOUT)
        if got == "-":
            late = offer_within(sock, xid, sent + LATE)
            got = "- late=" + late if late != "-" else got
        emit("%.6f dhcp %s" % (sent, got))
        time.sleep(max(0.0, sent + every - time.time()))


def probe(args):
    emit("started")
    n = max(1, args.http_threads)
    threads = [threading.Thread(target=http_prober, args=(args.ip, args.seconds, args.every * n, args.every * i))
               for i in range(n)]
    every = max(args.every, 0.01)
    threads += [threading.Thread(target=dhcp_prober, args=(args.iface, args.seconds, every * 3, every * i))
                for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return 0


def ip_value(text):
    return struct.unpack("!I", socket.inet_aton(text))[0]


def analyze(args):
    tries = []
    for line in open(args.probe_log):
        parts = line.split()
        if len(parts) >= 3 and parts[1] in ("http", "dhcp"):  # a late offer ("- late=IP") is no answer here
            tries.append((float(parts[0]), parts[1], parts[2]))
    tries.sort()
    moves = []
    for line in open(args.moves_log):
        parts = line.split()
        if len(parts) == 4:
            moves.append((float(parts[0]), parts[1], ip_value(parts[2]), ip_value(parts[3])))
    moves.sort()
    if args.commits:
        commits = sorted(float(line.split()[0]) for line in open(args.commits)
                         if len(line.split()) == 5 and line.split()[2] == "endpointslices")
        moves = [(next((c for c in commits if c >= t0), t0),) + tuple(rest) for t0, *rest in moves]
    results = []
    ok = True
    for n, (t0, name, first, last) in enumerate(moves):
        t_end = moves[n + 1][0] if n + 1 < len(moves) else float("inf")
        window = [t for t in tries if t0 <= t[0] < t_end]
        http = next((t[0] - t0 for t in window if t[1] == "http" and t[2] == name), None)
        dhcp = next((t[0] - t0 for t in window if t[1] == "dhcp" and t[2] != "-"
                     and first <= ip_value(t[2]) <= last), None)
        # The longest run of failed tries from the move on, measured between answered tries.
        gap = longest_gap(t0, window, "http")
        dhcp_gap = longest_gap(t0, window, "dhcp")
        if http is None or dhcp is None:
            ok = False
        results.append({"move": n + 1, "to": name, "http_s": http, "dhcp_s": dhcp, "http_gap_s": gap,
                        "dhcp_gap_s": dhcp_gap})
        print("move %2d -> %s: first HTTP answer %s, first DHCP offer %s, longest HTTP gap %s, DHCP gap %s" % (
            n + 1, name, fmt(http), fmt(dhcp), fmt(gap), fmt(dhcp_gap)))

    def summary(key):
        values = [r[key] for r in results if r[key] is not None]
        if not values:
            return None
        return {"median_s": statistics.median(values), "worst_s": max(values), "count": len(values)}

    report = {"moves": len(results), "http": summary("http_s"), "dhcp": summary("dhcp_s"),
              "http_gap": summary("http_gap_s"), "dhcp_gap": summary("dhcp_gap_s"), "per_move": results}
    print(json.dumps(report))
    return 0 if ok and results else 1


def longest_gap(t0, window, kind):
    """The longest time between answered tries of KIND (an HTTP answer, a DHCP offer) from the move at t0."""
    answered = [t0] + [t[0] for t in window if t[1] == kind and t[2] != "-"]
    return max((b - a for a, b in zip(answered, answered[1:])), default=None)


def fmt(value):
    return "never" if value is None else "%.3f s" % value


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("probe")
    p.add_argument("iface")
    p.add_argument("ip")
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--every", type=float, default=0.01)
    p.add_argument("--http-threads", type=int, default=8)
    a = sub.add_parser("analyze")
    a.add_argument("probe_log")
    a.add_argument("moves_log")
    a.add_argument("--commits")
    args = parser.parse_args()
    try:
        return probe(args) if args.command == "probe" else analyze(args)
    except OSError as e:
        print("failover_probe: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
