#!/usr/bin/env python3
"""Packet capture and capture checks for the DHCP/TFTP e2e tests, with a raw AF_PACKET socket (no tcpdump,
no scapy).

usage: capture.py record IFACE OUTFILE [--needle IP]...
           Records every frame seen on IFACE, in either direction, as one JSON object per line in OUTFILE:
             t       CLOCK_REALTIME seconds (float)
             dir     in | out | bcast | mcast | other   (the AF_PACKET packet type)
             src/dst Ethernet addresses, type the EtherType (int), len the frame length
             ip_src, ip_dst, proto                  for IPv4
             sport, dport, ulen (UDP payload bytes) for UDP
             dhcp    for UDP port 67/68: op, hops, xid, flags, ciaddr, yiaddr, siaddr, giaddr, chaddr,
                     file, sname, and from the options: type (53, as a name), server_id (54), router (3),
                     mask (1), lease (51); or {"truncated": N} for a payload too short for BOOTP
             tftp    for any other UDP payload that starts with a TFTP opcode (1..6): op (RRQ, WRQ,
                     DATA, ACK, ERROR, OACK), block (DATA, ACK), file (RRQ, WRQ), n (DATA bytes)
             hits    the --needle addresses whose 4 raw bytes occur anywhere in the frame (headers,
                     BOOTP fields, options, payload)
             l4csum  for TCP and UDP over IPv4 or IPv6 (ip_src/ip_dst, proto and ports also for IPv6): the
                     checksum field judged as the kernel handed the frame over: "ok" (the whole checksum,
                     right), "partial" (CHECKSUM_PARTIAL, PACKET_AUXDATA's TP_STATUS_CSUMNOTREADY: the
                     field holds the pseudo-header's sum, right), "none" (UDP over IPv4 without one), or
                     "bad" / "partial-bad"
             csum_want  with a bad one, what the field should hold
           Prints "listening" once the socket is bound, runs until SIGTERM or SIGINT, then appends
           {"stats": {"packets": N, "drops": D}} (the kernel's PACKET_STATISTICS) and exits 0.
       capture.py dhcp-check FILE --server IP --mac MAC [--need TYPE,...] [--after T]
           Checks the DHCP replies the client received (frames coming in to UDP port 68): each one came
           from IP:67 with Ethernet source MAC, named IP as server identifier (when it carries option 54),
           and every TYPE (OFFER, ACK, ...) is among them. Also checks that no frame (of any kind) has
           a needle hit. Exit 0 and a one-line summary, or 1 and the reason.
       capture.py renew-check FILE --server IP --client IP --mac MAC [--broadcast] [--after T]
           Finds the unicast DHCPREQUEST the client sent from IP CLIENT (ciaddr CLIENT) to SERVER:67 (with
           --broadcast: to 255.255.255.255:67) and the DHCPACK of the same xid that came back from SERVER:67
           (Ethernet source MAC) to CLIENT:68 and the client's MAC. Exit 0 or 1.
       capture.py tftp-ports FILE --server IP [--after T]
           Prints the server's source ports of the TFTP DATA packets that came in from IP, as
           "ports=P1,P2,... data=N bytes=B blocks_bytes=U", sorted: N packets of B bytes, U of them in
           distinct blocks (each transfer's block, by its ports, counted once: retransmissions are not).
       capture.py hits FILE [--after T]
           Prints the number of frames with a needle hit, and the first few of them.
       capture.py checksums FILE [--after T] [--min N]
           Checks that every TCP and UDP frame the interface received (not those it sent) carries a right
           checksum (l4csum ok, partial or none): a frame rewritten on its way with a wrong one is named.
           Fails with fewer than N such frames (default 1).
           Prints "ok=N partial=M none=K".
       capture.py lease-times FILE [--after T]
           For each complete transaction (xid: an outgoing DISCOVER and REQUEST, an incoming OFFER and
           ACK), one line "XID DISCOVER->OFFER REQUEST->ACK DISCOVER->ACK" in seconds, from the first
           message of each kind. The first two are the network and server round trips; the last also
           holds the client's own delay between OFFER and REQUEST.
--after T restricts a check to frames recorded at or after CLOCK_REALTIME T.

Run `record` inside the network namespace of IFACE (ip netns exec NS capture.py record ...).
"""
import argparse
import json
import select
import signal
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
SOL_PACKET = 263
PACKET_STATISTICS = 6
SO_RCVBUFFORCE = 33
ETH_P_IPV6 = 0x86DD
PACKET_AUXDATA = 8
TP_STATUS_CSUMNOTREADY = 1 << 3
SO_TIMESTAMPNS = 35  # asm-generic/socket.h (SO_TIMESTAMPNS_OLD); its control message has the same type
PKTTYPES = {0: "in", 1: "bcast", 2: "mcast", 3: "other", 4: "out"}
DHCP_TYPES = {1: "DISCOVER", 2: "OFFER", 3: "REQUEST", 4: "DECLINE", 5: "ACK", 6: "NAK", 7: "RELEASE",
              8: "INFORM"}
TFTP_OPS = {1: "RRQ", 2: "WRQ", 3: "DATA", 4: "ACK", 5: "ERROR", 6: "OACK"}
DHCP_COOKIE = b"\x63\x82\x53\x63"


def mac_text(raw):
    return ":".join("%02x" % b for b in raw)


def ip_text(raw):
    return socket.inet_ntoa(raw)


def cstring(raw):
    return raw.split(b"\0", 1)[0].decode("latin-1")


def decode_dhcp(payload):
    if len(payload) < 240:
        return {"truncated": len(payload)}
    op, htype, hlen, hops, xid, secs, flags = struct.unpack("!BBBBIHH", payload[:12])
    d = {
        "op": op, "hops": hops, "xid": "%08x" % xid, "flags": flags,
        "ciaddr": ip_text(payload[12:16]), "yiaddr": ip_text(payload[16:20]),
        "siaddr": ip_text(payload[20:24]), "giaddr": ip_text(payload[24:28]),
        "chaddr": mac_text(payload[28:28 + min(hlen, 16)]),
        "sname": cstring(payload[44:108]), "file": cstring(payload[108:236]),
    }
    if payload[236:240] != DHCP_COOKIE:
        return d
    pos = 240
    while pos < len(payload):
        code = payload[pos]
        if code == 0:
            pos += 1
            continue
        if code == 255 or pos + 2 > len(payload):
            break
        n = payload[pos + 1]
        value = payload[pos + 2:pos + 2 + n]
        pos += 2 + n
        if code == 53 and n == 1:
            d["type"] = DHCP_TYPES.get(value[0], str(value[0]))
        elif code == 54 and n == 4:
            d["server_id"] = ip_text(value)
        elif code == 3 and n >= 4:
            d["router"] = ip_text(value[:4])
        elif code == 1 and n == 4:
            d["mask"] = ip_text(value)
        elif code == 51 and n == 4:
            d["lease"] = struct.unpack("!I", value)[0]
    return d


def decode_tftp(payload):
    if len(payload) < 4:
        return None
    op = struct.unpack("!H", payload[:2])[0]
    if op not in TFTP_OPS:
        return None
    t = {"op": TFTP_OPS[op]}
    if op in (3, 4):
        t["block"] = struct.unpack("!H", payload[2:4])[0]
    if op == 3:
        t["n"] = len(payload) - 4
    if op in (1, 2):
        t["file"] = cstring(payload[2:])
    return t


def ones_sum(data, start=0):
    """The 16-bit ones'-complement sum of data (padded to even length) added to start, folded."""
    if len(data) % 2:
        data += b"\0"
    total = start + sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def same_ones(a, b):
    """Equal as ones'-complement numbers (0x0000 and 0xffff are both zero)."""
    return a == b or {a, b} == {0, 0xFFFF}


def judge_l4_checksum(pseudo, segment, proto, check_off, partial):
    """l4csum and, when wrong, what the field should hold (see the usage above)."""
    field = struct.unpack("!H", segment[check_off:check_off + 2])[0]
    pseudo_sum = ones_sum(pseudo + struct.pack("!HH", proto, len(segment)))
    if partial:
        return ("partial", None) if same_ones(field, pseudo_sum) else ("partial-bad", pseudo_sum)
    if proto == socket.IPPROTO_UDP and field == 0 and len(pseudo) == 8:
        return "none", None
    zeroed = segment[:check_off] + b"\0\0" + segment[check_off + 2:]
    want = ~ones_sum(zeroed, pseudo_sum) & 0xFFFF
    if proto == socket.IPPROTO_UDP and want == 0:
        want = 0xFFFF
    return ("ok", None) if same_ones(field, want) else ("bad", want)


def decode_l4_checksum(rec, pseudo, segment, proto, partial):
    check_off = {socket.IPPROTO_TCP: 16, socket.IPPROTO_UDP: 6}.get(proto)
    if check_off is None or len(segment) < check_off + 2:
        return
    rec["l4csum"], want = judge_l4_checksum(pseudo, segment, proto, check_off, partial)
    if want is not None:
        rec["csum_want"] = "%04x" % want


def decode_ipv6(rec, frame, partial):
    ip6 = frame[14:]
    if len(ip6) < 40:
        return
    proto = ip6[6]
    rec["ip_src"] = socket.inet_ntop(socket.AF_INET6, ip6[8:24])
    rec["ip_dst"] = socket.inet_ntop(socket.AF_INET6, ip6[24:40])
    rec["proto"] = proto
    segment = ip6[40:40 + struct.unpack("!H", ip6[4:6])[0]]
    if proto in (socket.IPPROTO_TCP, socket.IPPROTO_UDP) and len(segment) >= 8:
        rec["sport"], rec["dport"] = struct.unpack("!HH", segment[:4])
        decode_l4_checksum(rec, ip6[8:40], segment, proto, partial)


def decode(frame, pkttype, needles, stamp, partial=False):
    rec = {"t": stamp, "dir": PKTTYPES.get(pkttype, str(pkttype)), "len": len(frame)}
    if len(frame) < 14:
        return rec
    rec["dst"], rec["src"] = mac_text(frame[0:6]), mac_text(frame[6:12])
    etype = struct.unpack("!H", frame[12:14])[0]
    rec["type"] = etype
    hits = [text for text, raw in needles if raw in frame]
    if hits:
        rec["hits"] = hits
    if etype == ETH_P_IPV6:
        decode_ipv6(rec, frame, partial)
        return rec
    if etype != ETH_P_IP or len(frame) < 34:
        return rec
    ip = frame[14:]
    ihl = (ip[0] & 0x0F) * 4
    rec["ip_src"], rec["ip_dst"], rec["proto"] = ip_text(ip[12:16]), ip_text(ip[16:20]), ip[9]
    fragment = struct.unpack("!H", ip[6:8])[0] & 0x3FFF
    if not fragment:
        decode_l4_checksum(rec, ip[12:20], ip[ihl:struct.unpack("!H", ip[2:4])[0]], ip[9], partial)
    if ip[9] == socket.IPPROTO_TCP and len(ip) >= ihl + 4:
        rec["sport"], rec["dport"] = struct.unpack("!HH", ip[ihl:ihl + 4])
    if ip[9] != socket.IPPROTO_UDP or len(ip) < ihl + 8:
        return rec
    sport, dport, ulen = struct.unpack("!HHH", ip[ihl:ihl + 6])
    payload = ip[ihl + 8:ihl + max(ulen, 8)]
    rec.update(sport=sport, dport=dport, ulen=len(payload))
    if sport in (67, 68) or dport in (67, 68):
        rec["dhcp"] = decode_dhcp(payload)
    else:
        tftp = decode_tftp(payload)
        if tftp:
            rec["tftp"] = tftp
    return rec


def record(args):
    needles = [(ip, socket.inet_aton(ip)) for ip in args.needle]
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    # TFTP in lockstep over veth outruns this loop: buffer a whole transfer (root may exceed rmem_max).
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 256 << 20)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 256 << 20)
    # The kernel's receive time stamp, not the time this loop got around to the frame.
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    # Whether the kernel hands a frame over with its checksum still to be completed (CHECKSUM_PARTIAL).
    sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    sock.bind((args.iface, ETH_P_ALL))
    stop = []

    def on_signal(signum, _frame):
        stop.append(signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # Frames are read without blocking until the socket's queue is empty, and their lines written out then;
    # the loop naps 20 ms before it waits for more, so a stream (TFTP in lockstep) is read in batches: a
    # reader of OUTFILE sees every frame taken up to 20 ms ago once this loop has caught up, and each frame
    # costs one system call, not a poll, a read and a write (2026-12-07: in a TCG guest this loop took about
    # a third of e2e_pxe's CPU time).
    sock.setblocking(False)
    readable = select.poll()
    readable.register(sock, select.POLLIN)
    out = open(args.outfile, "w")
    print("listening", flush=True)

    def take(frame, ancillary, addr):
        stamp = time.time()
        partial = False
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
                sec, nsec = struct.unpack("qq", data[:16])
                stamp = sec + nsec / 1e9
            elif level == SOL_PACKET and kind == PACKET_AUXDATA and len(data) >= 4:
                partial = bool(struct.unpack("I", data[:4])[0] & TP_STATUS_CSUMNOTREADY)
        out.write(json.dumps(decode(frame, addr[2], needles, stamp, partial)) + "\n")

    def drain(seconds):
        """Takes the queued frames, for at most SECONDS: how many."""
        taken, until = 0, time.monotonic() + seconds
        while time.monotonic() < until:
            try:
                frame, ancillary, _flags, addr = sock.recvmsg(1 << 18, 128)
            except BlockingIOError:
                break
            take(frame, ancillary, addr)
            taken += 1
        return taken

    packets = 0
    try:
        # A backlog that lasts is written out (and the stop looked at) every 0.2 s.
        while not stop:
            packets += drain(0.2)
            out.flush()
            time.sleep(0.02)
            readable.poll(200)
        # What the kernel queued before the stop is recorded too (for at most 2 s, should frames keep coming).
        packets += drain(2)
    finally:
        # The lines taken so far and the statistics line, whatever ended the loop.
        raw = sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
        _, drops = struct.unpack("II", raw)
        out.write(json.dumps({"stats": {"packets": packets, "drops": drops}}) + "\n")
        out.close()
    return 0


def load(path, after):
    records = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except ValueError:
                continue  # a line being written while we read
            if "stats" in r or r.get("t", 0) >= after:
                records.append(r)
    return records


def fail(reason):
    print(reason)
    return 1


def needle_hits(records):
    return [r for r in records if r.get("hits")]


def describe(r):
    keys = ("dir", "src", "dst", "ip_src", "ip_dst", "sport", "dport", "hits")
    text = " ".join("%s=%s" % (k, r[k]) for k in keys if k in r)
    if "dhcp" in r:
        text += " dhcp=" + r["dhcp"].get("type", "?")
    return text


def dhcp_check(args):
    records = load(args.file, args.after)
    replies = [r for r in records if r.get("dport") == 68 and r.get("dir") != "out" and "dhcp" in r]
    if not replies:
        return fail("no DHCP reply reached the client (%d frames captured)" % len(records))
    types = {}
    for r in replies:
        d = r["dhcp"]
        bad = []
        if r.get("ip_src") != args.server:
            bad.append("IP source %s" % r.get("ip_src"))
        if r.get("sport") != 67:
            bad.append("source port %s" % r.get("sport"))
        if r.get("src") != args.mac:
            bad.append("Ethernet source %s" % r.get("src"))
        if "server_id" in d and d["server_id"] != args.server:
            bad.append("server identifier %s" % d["server_id"])
        if bad:
            return fail("reply %s: %s (want %s:67 from %s)" % (d.get("type", "?"), ", ".join(bad), args.server,
                                                               args.mac))
        types[d.get("type", "?")] = types.get(d.get("type", "?"), 0) + 1
    for need in filter(None, args.need.split(",")):
        if need not in types:
            return fail("no %s among the replies (%s)" % (need, types))
    hits = needle_hits(records)
    if hits:
        return fail("%d frames carry a forbidden address, first: %s" % (len(hits), describe(hits[0])))
    summary = ", ".join("%s %d" % kv for kv in sorted(types.items()))
    print("%d replies (%s) from %s:67 eth %s; %d frames, no forbidden address" % (
        len(replies), summary, args.server, args.mac, len([r for r in records if "t" in r])))
    return 0


def renew_check(args):
    records = load(args.file, args.after)
    to = "255.255.255.255" if args.broadcast else args.server
    request = None
    for r in records:
        d = r.get("dhcp", {})
        if (r.get("dir") == "out" and d.get("type") == "REQUEST" and r.get("ip_src") == args.client and
                r.get("ip_dst") == to and r.get("dport") == 67 and d.get("ciaddr") == args.client):
            request = r
            break
    if not request:
        reqs = [describe(r) for r in records if r.get("dhcp", {}).get("type") == "REQUEST"]
        return fail("no DHCPREQUEST %s -> %s:67 with ciaddr %s (requests seen: %s)" % (
            args.client, to, args.client, reqs or "none"))
    for r in records:
        d = r.get("dhcp", {})
        if (r["t"] >= request["t"] and r.get("dir") != "out" and d.get("type") == "ACK" and
                d.get("xid") == request["dhcp"]["xid"]):
            if (r.get("ip_src"), r.get("sport"), r.get("src")) != (args.server, 67, args.mac):
                return fail("ACK from %s:%s eth %s, want %s:67 eth %s" % (
                    r.get("ip_src"), r.get("sport"), r.get("src"), args.server, args.mac))
            if (r.get("ip_dst"), r.get("dport")) != (args.client, 68):
                return fail("ACK to %s:%s, want %s:68" % (r.get("ip_dst"), r.get("dport"), args.client))
            if r.get("dst") != request["src"]:
                return fail("ACK to Ethernet %s, want the client's %s" % (r.get("dst"), request["src"]))
            print("REQUEST %s:%s -> %s:67 (xid %s, ciaddr %s) answered by ACK %s:67 -> %s:68 in %.1f ms" % (
                args.client, request.get("sport"), to, request["dhcp"]["xid"], args.client,
                args.server, args.client, (r["t"] - request["t"]) * 1000))
            return 0
    return fail("no ACK for the unicast REQUEST (xid %s)" % request["dhcp"]["xid"])


def tftp_ports(args):
    records = load(args.file, args.after)
    ports, count, size, blocks = set(), 0, 0, {}
    for r in records:
        t = r.get("tftp")
        if t and t["op"] == "DATA" and r.get("ip_src") == args.server and r.get("dir") != "out":
            ports.add(r["sport"])
            count += 1
            size += t["n"]
            blocks[(r["sport"], r["dport"], t["block"])] = t["n"]
    print("ports=%s data=%d bytes=%d blocks_bytes=%d" % (",".join(str(p) for p in sorted(ports)), count, size,
                                                         sum(blocks.values())))
    return 0


def hits(args):
    found = needle_hits(load(args.file, args.after))
    print(len(found))
    for r in found[:3]:
        print("  " + describe(r))
    return 0


def lease_times(args):
    first = {}  # (xid, type) -> time of the first such message in its direction
    for r in load(args.file, args.after):
        d = r.get("dhcp", {})
        kind = d.get("type")
        if kind in ("DISCOVER", "REQUEST") and r.get("dir") == "out" or kind in ("OFFER", "ACK") and r.get("dir") != "out":
            first.setdefault((d["xid"], kind), r["t"])
    for (xid, kind), t in first.items():
        if kind != "DISCOVER":
            continue
        offer, request, ack = (first.get((xid, k)) for k in ("OFFER", "REQUEST", "ACK"))
        if offer and request and ack:
            print("%s %.6f %.6f %.6f" % (xid, offer - t, ack - request, ack - t))
    return 0


def checksums(args):
    records = [r for r in load(args.file, args.after) if "l4csum" in r and r.get("dir") != "out"]
    kinds = {}
    for r in records:
        kinds[r["l4csum"]] = kinds.get(r["l4csum"], 0) + 1
    bad = [r for r in records if r["l4csum"] in ("bad", "partial-bad")]
    summary = "ok=%d partial=%d none=%d" % (kinds.get("ok", 0), kinds.get("partial", 0), kinds.get("none", 0))
    if bad:
        return fail("%d of %d TCP/UDP frames with a wrong checksum (%s), first: %s" % (
            len(bad), len(records), summary,
            "; ".join("%s %s (field wanted %s)" % (describe(r), r["l4csum"], r["csum_want"]) for r in bad[:3])))
    if len(records) < args.min:
        return fail("%d TCP/UDP frames captured, want at least %d" % (len(records), args.min))
    print(summary)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("record")
    p.add_argument("iface")
    p.add_argument("outfile")
    p.add_argument("--needle", action="append", default=[])
    p.set_defaults(fn=record)
    for name, fn in (("dhcp-check", dhcp_check), ("renew-check", renew_check), ("tftp-ports", tftp_ports),
                     ("hits", hits), ("lease-times", lease_times), ("checksums", checksums)):
        p = sub.add_parser(name)
        p.add_argument("file")
        p.add_argument("--after", type=float, default=0.0)
        if name in ("dhcp-check", "renew-check", "tftp-ports"):
            p.add_argument("--server", required=True)
        if name in ("dhcp-check", "renew-check"):
            p.add_argument("--mac", required=True)
        if name == "dhcp-check":
            p.add_argument("--need", default="")
        if name == "checksums":
            p.add_argument("--min", type=int, default=1)
        if name == "renew-check":
            p.add_argument("--client", required=True)
            p.add_argument("--broadcast", action="store_true")
        p.set_defaults(fn=fn)
    args = parser.parse_args()
    sys.exit(args.fn(args))


if __name__ == "__main__":
    main()
