#!/usr/bin/env python3
"""The command blocks of a walkthrough in a document, as scripts, so that a test runs exactly what the document
says (tests/e2e/test_metal3_walkthrough.sh).

    doc_blocks.py DOC OUTDIR [--substitute FROM=TO]...

Every ```sh block of DOC must follow a marker line `<!-- walkthrough: STEP WHERE -->` (WHERE: workstation or
node): a command block no test runs is refused (exit 2), so none can be added without being run. Each block is
written to OUTDIR/NN-STEP-WHERE.sh (NN: its order in DOC) with each FROM replaced by TO (the document's example
values by the test's), and one line "NN STEP WHERE FILE" is printed per block. A substitution that matches
nothing is refused too: the table must not outlive the values it replaces.
"""
import argparse
import os
import re
import sys

MARKER = re.compile(r"^<!-- walkthrough: (?P<step>[a-z0-9-]+) (?P<where>workstation|node) -->$")


def blocks(lines):
    """(step, where, text, line number) of each ```sh block; raises ValueError for one without a marker."""
    found, marker, i = [], None, 0
    while i < len(lines):
        line = lines[i].rstrip("\n")
        m = MARKER.match(line)
        if m:
            marker = m
        elif line.startswith("```sh"):
            if marker is None:
                raise ValueError("line %d: a command block without a walkthrough marker before it" % (i + 1))
            end = i + 1
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            found.append((marker["step"], marker["where"], "".join(lines[i + 1:end]), i + 1))
            marker, i = None, end
        elif line.strip() and marker is not None and not line.startswith("```"):
            raise ValueError("line %d: text between a walkthrough marker and its block" % (i + 1))
        i += 1
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("doc")
    parser.add_argument("outdir")
    parser.add_argument("--substitute", action="append", default=[], metavar="FROM=TO")
    a = parser.parse_args()
    with open(a.doc) as f:
        try:
            found = blocks(f.readlines())
        except ValueError as e:
            sys.exit("doc_blocks.py: %s: %s" % (a.doc, e))
    subs = [s.split("=", 1) for s in a.substitute]
    used = set()
    os.makedirs(a.outdir, exist_ok=True)
    for n, (step, where, text, _) in enumerate(found, 1):
        for old, new in subs:
            if old in text:
                used.add(old)
                text = text.replace(old, new)
        path = os.path.join(a.outdir, "%02d-%s-%s.sh" % (n, step, where))
        with open(path, "w") as f:
            f.write("set -euo pipefail\n" + text)
        print("%02d %s %s %s" % (n, step, where, path))
    unused = [old for old, _ in subs if old not in used]
    if unused:
        sys.exit("doc_blocks.py: substitutions matching nothing in %s: %s" % (a.doc, ", ".join(unused)))


if __name__ == "__main__":
    main()
