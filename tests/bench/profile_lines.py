#!/usr/bin/env python3
"""Charges perf samples taken in a BPF function to its source lines (tests/bench/profile.sh).

A sample whose first BPF frame is in FUNCTION is charged to the source line of that frame's address: as its
own code when the sample hit the program, as a call of the helper it hit otherwise.

usage: profile_lines.py --lines DIR --samples FILE FUNCTION
"""
import argparse
import bisect
import collections
import glob
import os
import re


def read_lines(directory):
    """The line-info entries of every lines_*.txt (bench_jit_lines): sorted (address, file:line, source)."""
    entries = []
    for path in glob.glob(os.path.join(directory, "lines_*.txt")):
        with open(path) as f:
            for line in f:
                if line.startswith("L "):
                    parts = line.rstrip("\n").split(" ", 3)
                    entries.append((int(parts[1], 16), parts[2], parts[3] if len(parts) > 3 else ""))
    entries.sort()
    return entries


def read_samples(path):
    """Each sample's frames, innermost first: (address, symbol)."""
    with open(path) as f:
        for block in f.read().split("\n\n"):
            frames = [line.split()[:2] for line in block.strip().split("\n") if len(line.split()) >= 2]
            if frames:
                yield [(int(address, 16), symbol) for address, symbol in frames]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", required=True)
    parser.add_argument("--samples", required=True)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("function")
    args = parser.parse_args()
    entries = read_lines(args.lines)
    addresses = [entry[0] for entry in entries]
    # A JITed symbol is bpf_prog_<tag>_<function>+<offset>.
    wanted = re.compile(r"^bpf_prog_[0-9a-f]+_" + re.escape(args.function) + r"(\+|$)")
    charged = collections.Counter()
    sources = {}
    total = 0
    for frames in read_samples(args.samples):
        first_bpf = next((k for k, (_, symbol) in enumerate(frames) if symbol.startswith("bpf_prog_")), None)
        if first_bpf is None or not wanted.match(frames[first_bpf][1]):
            continue
        total += 1
        at = bisect.bisect_right(addresses, frames[first_bpf][0]) - 1
        where = entries[at][1] if at >= 0 else "?"
        sources[where] = entries[at][2].strip() if at >= 0 else ""
        what = "code" if first_bpf == 0 else "calls " + re.sub(r"\+.*", "", frames[0][1])
        charged[(where, what)] += 1
    print(f"\n{args.function}: {total} samples")
    if not total:
        return
    print("| samples | share | line | charged as | source |\n|---|---|---|---|---|")
    for (where, what), count in charged.most_common(args.top):
        source = sources[where][:80].replace("|", "\\|")
        print(f"| {count} | {100 * count / total:.1f}% | {where} | {what} | `{source}` |")


if __name__ == "__main__":
    main()
