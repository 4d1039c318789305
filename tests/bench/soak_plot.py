#!/usr/bin/env python3
"""The soak benchmark's plot and summary (tests/bench/soak.sh).

usage: soak_plot.py SAMPLES_CSV PNG SUMMARY_JSON

SAMPLES_CSV: one line per node and sample (t_s, node, rss_kib, fds, threads, neighbours, flows,
flows_unconfirmed, dhcp_servers, conflicts_total, events_lost_total). PNG: one panel per kind of resource
over time, a line per node. SUMMARY_JSON: per node and series, the first and last value and the peak.
"""

import csv
import json
import sys

# (column, name in the summary, panel title, scale)
SERIES = [
    ("rss_kib", "rss_mib", "resident memory (MiB)", 1 / 1024),
    ("fds", "fds", "file descriptors", 1),
    ("threads", "threads", "threads", 1),
    ("neighbours", "neighbours", "neighbours", 1),
    ("flows", "flows", "flows", 1),
    ("flows_unconfirmed", "flows_unconfirmed", "unconfirmed flows", 1),
    ("dhcp_servers", "dhcp_servers", "DHCP servers", 1),
    ("events_lost_total", "events_lost_total", "events lost (total)", 1),
]


def read(path):
    by_node = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row.get("rss_kib") in (None, "", "gone"):
                continue
            by_node.setdefault(row["node"], []).append(row)
    return by_node


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def summary(by_node):
    out = {}
    for node, rows in by_node.items():
        out[node] = {}
        for key, name, _, scale in SERIES:
            values = [number(r[key]) for r in rows if number(r[key]) is not None]
            if values:
                out[node][name] = {"first": values[0] * scale, "last": values[-1] * scale,
                                  "peak": max(values) * scale}
        out[node]["samples"] = len(rows)
        out[node]["seconds"] = number(rows[-1]["t_s"]) - number(rows[0]["t_s"]) if rows else 0
    return out


def plot(by_node, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(SERIES) // 2, 2, figsize=(12, 2.6 * len(SERIES) // 2), sharex=True)
    start = min(number(rows[0]["t_s"]) for rows in by_node.values())
    for ax, (key, _, title, scale) in zip(axes.flat, SERIES):
        for node, rows in sorted(by_node.items()):
            points = [((number(r["t_s"]) - start) / 60, number(r[key]) * scale) for r in rows
                      if number(r[key]) is not None]
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], label=node, linewidth=1)
        ax.set_title(title, fontsize=10)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("minutes")
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=90)


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    by_node = read(sys.argv[1])
    if not by_node:
        print("soak_plot: no samples in %s" % sys.argv[1], file=sys.stderr)
        return 1
    with open(sys.argv[3], "w") as f:
        json.dump(summary(by_node), f, indent=1)
    plot(by_node, sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
