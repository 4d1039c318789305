#!/usr/bin/env python3
"""Reads one perfdhcp run's output (perfdhcp -x t) and prints "RATE DORA_P50_MS DORA_P99_MS DROP_PCT".

RATE is perfdhcp's own count of completed 4-way exchanges per second. DORA is DISCOVER sent -> ACK
received of one client: perfdhcp lists DISCOVER-OFFER and REQUEST-ACK times separately, and a client
sends its REQUEST as soon as it has the OFFER, so each REQUEST is joined to the latest OFFER received no
later than it was sent (and not yet joined). DROP_PCT: exchanges of either kind that got no answer.
Exits 1 when the output has no completed exchange.
"""
import bisect
import re
import sys


def timestamps(text, kind):
    block = re.search(r"\*\*\*Timestamps for packets: " + kind + r"\*\*\*\n((?:sent / received:.*\n?)*)", text)
    if not block:
        return []
    return [tuple(float(v) for v in line.split(":", 1)[1].split("/")) for line in block.group(1).splitlines()]


def counts(text, kind):
    block = re.search(r"\*\*\*Statistics for: " + kind + r"\*\*\*\nsent packets: (\d+)\nreceived packets: (\d+)", text)
    return (int(block.group(1)), int(block.group(2))) if block else (0, 0)


def join(offers, acks):
    """DISCOVER -> ACK times: each REQUEST-ACK joined to the OFFER that started it."""
    offers = sorted(offers, key=lambda t: t[1])
    received = [t[1] for t in offers]
    used = set()
    times = []
    for sent, acked in sorted(acks):
        i = bisect.bisect_right(received, sent + 1e-6) - 1
        while i >= 0 and i in used:
            i -= 1
        if i < 0:
            continue
        used.add(i)
        times.append(acked - offers[i][0])
    return sorted(times)


def quantile(values, q):
    return values[round(q * (len(values) - 1))]


def main():
    text = open(sys.argv[1]).read()
    rate = re.search(r"Rate: ([0-9.]+) 4-way exchanges/second", text)
    dora = join(timestamps(text, "DISCOVER-OFFER"), timestamps(text, "REQUEST-ACK"))
    if not rate or not dora:
        sys.exit(1)
    sent = sum(counts(text, k)[0] for k in ("DISCOVER-OFFER", "REQUEST-ACK"))
    received = sum(counts(text, k)[1] for k in ("DISCOVER-OFFER", "REQUEST-ACK"))
    drops = 100.0 * (sent - received) / sent if sent else 0.0
    print(f"{float(rate.group(1)):.1f} {quantile(dora, 0.5) * 1000:.3f} {quantile(dora, 0.99) * 1000:.3f} {drops:.2f}")


if __name__ == "__main__":
    main()
