#!/usr/bin/python3
"""Turns the benchmarks' raw results into the report: Markdown for people, JSON for machines.

Each benchmark writes one JSON file into the results directory:

    {"benchmark": "tcp_bulk",
     "tables": [{"title": "Bulk TCP, host -> pod (iperf3)", "unit": "Gbit/s", "better": "higher",
                 "baseline": "plain routing",
                 "series": {"bpfnet": [9.1, 9.3, ...], "plain routing": [9.4, 9.2, ...]},
                 "paired": true,
                 "notes": "iperf3 -t 3; candidate and baseline alternate, 10 pairs"}]}

"paired" says that the values at one index were measured side by side (one round of alternating runs), so
the ratio is taken per round and its spread shows how much the machine drifted; otherwise the ratio is
that of the medians. Nothing here judges a number: the report states medians, spread and ratios.

    report.py RESULTS_DIR OUT_PREFIX      writes OUT_PREFIX.md and OUT_PREFIX.json
    report.py table FILE BENCHMARK --title T --unit U --better higher|lower --baseline NAME [--paired]
              [--notes TEXT] --series NAME=V1,V2,... [--series ...]
                                          appends one table to FILE (created if missing): what the
                                          benchmark scripts call
"""

import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys


def quantile(values, q):
    """Nearest-rank quantile of a non-empty list (the spread of 10-30 runs; no interpolation)."""
    ordered = sorted(values)
    return ordered[round(q * (len(ordered) - 1))]


def summarize(values):
    return {
        "n": len(values),
        "median": statistics.median(values),
        "p10": quantile(values, 0.1),
        "p90": quantile(values, 0.9),
        "min": min(values),
        "max": max(values),
    }


def ratios(table):
    """Per candidate: the ratio to the baseline, per round when paired, with its spread."""
    base = table["series"][table["baseline"]]
    out = {}
    for name, values in table["series"].items():
        if name == table["baseline"] or not values or not base:
            continue
        # A baseline of 0 (nothing dropped, say) has no ratio: those rounds, or the whole table, go without.
        if table.get("paired") and len(values) == len(base):
            per_round = [v / b for v, b in zip(values, base) if b]
            if per_round:
                out[name] = {"kind": "per round", **summarize(per_round)}
        elif statistics.median(base):
            out[name] = {"kind": "of medians", "median": statistics.median(values) / statistics.median(base)}
    return out


def analyse(table):
    result = dict(table)
    result["summary"] = {name: summarize(values) for name, values in table["series"].items() if values}
    result["ratios"] = ratios(table)
    return result


def command_version(argv, pattern=None):
    """First line of a tool's version output (or of the line containing pattern); None when absent."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = done.stdout + done.stderr
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    if pattern:
        lines = [l for l in lines if pattern in l]
    if not lines:
        return None
    version = re.search(r"\d+\.\d+(\.\d+)?", lines[0])
    return version.group(0) if version else lines[0]


def debian_version(package):
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def machine_facts():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), cpu)
    except OSError:
        pass
    memory_gib = None
    try:
        with open("/proc/meminfo") as f:
            kib = next(int(l.split()[1]) for l in f if l.startswith("MemTotal"))
            memory_gib = round(kib / 1024 / 1024, 1)
    except (OSError, StopIteration):
        pass
    # run.sh records the commit and the time the run started: the checkout may move on while it runs.
    commit = os.environ.get("BPFNET_BENCH_COMMIT")
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if not commit:
        try:
            commit = subprocess.run(["git", "-C", top, "describe", "--always", "--dirty"], capture_output=True,
                                    text=True, timeout=10).stdout.strip() or None
        except (OSError, subprocess.TimeoutExpired):
            commit = None
    date = os.environ.get("BPFNET_BENCH_STARTED") or \
        datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return {
        "date": date,
        "kernel": platform.release(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "memory_gib": memory_gib,
        "bpfnet_commit": commit,
        "versions": {
            "clang-14": command_version(["clang-14", "--version"], "version"),
            "clang-16": command_version(["clang-16", "--version"], "version"),
            "libbpf": debian_version("libbpf1"),
            "libxdp": debian_version("libxdp1"),
            "dnsmasq": command_version(["dnsmasq", "--version"], "version"),
            "haproxy": command_version(["haproxy", "-v"], "version"),
            "nftables": command_version(["nft", "--version"]),
            "iperf3": command_version(["iperf3", "--version"], "iperf"),
            "sockperf": debian_version("sockperf"),
            "perfdhcp (kea)": debian_version("kea-admin"),
            "atftp/atftpd": debian_version("atftpd"),
            "curl": command_version(["curl", "--version"], "curl"),
        },
    }


def fmt(value):
    if value is None:
        return "-"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def table_markdown(table):
    lines = [f"### {table['title']}", ""]
    better = "higher is better" if table.get("better") == "higher" else "lower is better"
    lines.append(f"Unit: {table['unit']} ({better}); baseline: {table['baseline']}.")
    lines.append("")
    lines.append(f"| | median {table['unit']} | p10-p90 | rounds | ratio to {table['baseline']} | ratio p10-p90 |")
    lines.append("|---|---|---|---|---|---|")
    for name, s in table["summary"].items():
        ratio = table["ratios"].get(name)
        if name == table["baseline"]:
            ratio_text, spread = "1 (baseline)", ""
        elif ratio and ratio["kind"] == "per round":
            ratio_text, spread = fmt(ratio["median"]), f"{fmt(ratio['p10'])}-{fmt(ratio['p90'])}"
        elif ratio:
            ratio_text, spread = fmt(ratio["median"]) + " (of medians)", ""
        else:
            ratio_text, spread = "-", ""
        lines.append(f"| {name} | {fmt(s['median'])} | {fmt(s['p10'])}-{fmt(s['p90'])} | {s['n']} | "
                     f"{ratio_text} | {spread} |")
    if table.get("notes"):
        lines += ["", table["notes"]]
    lines.append("")
    return lines


def summary_markdown(report):
    """One row per table: each candidate's median ratio to the baseline (per round where paired)."""
    lines = ["## Summary", "", "| benchmark | measurement | better | baseline | ratios to the baseline |",
             "|---|---|---|---|---|"]
    for bench in report["benchmarks"]:
        if bench.get("error"):
            lines.append(f"| {bench['benchmark']} | could not run | | | |")
        for table in bench["tables"]:
            ratios = "; ".join(f"{name} {fmt(r['median'])}" for name, r in table["ratios"].items()) or "-"
            baseline = table["baseline"]
            if baseline in table["summary"]:
                baseline += f" ({fmt(table['summary'][baseline]['median'])} {table['unit']})"
            lines.append(f"| {bench['benchmark']} | {table['title']} | {table.get('better', '')} | {baseline} "
                         f"| {ratios} |")
    return lines + [""]


def render_markdown(report):
    facts = report["machine"]
    lines = ["# bpfnet benchmark report", ""]
    lines.append(f"Run started {facts['date']}; kernel {facts['kernel']}; {facts['cpus']} CPUs ({facts['cpu']}); "
                 f"{facts['memory_gib']} GiB; bpfnet {facts['bpfnet_commit']}.")
    lines.append("")
    lines.append("Versions: " + "; ".join(f"{k} {v}" for k, v in facts["versions"].items() if v) + ".")
    lines += ["", "Numbers are medians with the 10th-90th percentile spread. Ratios are candidate / baseline; a "
              "paired ratio is taken per round of side-by-side runs. No number here is a pass/fail verdict.", ""]
    lines += summary_markdown(report)
    for bench in report["benchmarks"]:
        lines.append(f"## {bench['benchmark']}")
        lines.append("")
        if bench.get("error"):
            lines += [f"Could not run: {bench['error']}", ""]
        for table in bench["tables"]:
            lines += table_markdown(table)
    return "\n".join(lines) + "\n"


def build_report(results_dir):
    benchmarks = []
    for name in sorted(os.listdir(results_dir)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(results_dir, name)) as f:
            raw = json.load(f)
        if not isinstance(raw, dict) or "benchmark" not in raw:
            continue  # not a benchmark's result (an earlier report written next to them, say)
        raw["tables"] = [analyse(t) for t in raw.get("tables", [])]
        benchmarks.append(raw)
    return {"machine": machine_facts(), "benchmarks": benchmarks}


def add_table(argv):
    import argparse
    parser = argparse.ArgumentParser(prog="report.py table")
    parser.add_argument("file")
    parser.add_argument("benchmark")
    parser.add_argument("--title", required=True)
    parser.add_argument("--unit", required=True)
    parser.add_argument("--better", choices=["higher", "lower"], required=True)
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--paired", action="store_true")
    parser.add_argument("--notes", default="")
    parser.add_argument("--series", action="append", required=True, help="NAME=V1,V2,...")
    args = parser.parse_args(argv)
    series = {}
    for item in args.series:
        name, _, values = item.rpartition("=")
        series[name] = [float(v) for v in values.replace(" ", ",").split(",") if v]
    if args.baseline not in series:
        parser.error(f"the baseline {args.baseline!r} is not among the series")
    try:
        with open(args.file) as f:
            data = json.load(f)
    except FileNotFoundError:
        data = {"benchmark": args.benchmark, "tables": []}
    data["tables"].append({"title": args.title, "unit": args.unit, "better": args.better, "baseline": args.baseline,
                           "paired": args.paired, "series": series, "notes": args.notes})
    with open(args.file, "w") as f:
        json.dump(data, f, indent=1)
    return 0


def main(argv):
    if len(argv) > 1 and argv[1] == "table":
        return add_table(argv[2:])
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    report = build_report(argv[1])
    with open(argv[2] + ".json", "w") as f:
        json.dump(report, f, indent=1)
    with open(argv[2] + ".md", "w") as f:
        f.write(render_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
