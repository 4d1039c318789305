#!/usr/bin/env python3
"""The docs against the code, statically (python3 alone, no build):

    python3 tests/docs/check_docs.py glossary     # the operator-facing words of the code are in the glossary
    python3 tests/docs/check_docs.py port-kinds   # every docs list of port kinds is BPFNET_PORT_KINDS
    python3 tests/docs/check_docs.py walkthrough  # every command block of docs/metal3.md is run by its test
    BPFNET_SOURCE_DIR=/tmp/copy python3 tests/docs/check_docs.py glossary   # another tree

glossary: the glossary of docs/design.md names, in backticks, every Event reason the loader emits (the literal
reason of each warning_event/normal_event call), every heartbeat state and service IP field of `bpfnetctl
status --output json` (heartbeat_name's strings, the keys of a service IP's entry in status_json) and every
`state` label of the metrics; and every word of a log line about ownership (one with a service_ip or lease
field: its message up to the first ':' or ';') is a glossary word or one of ORDINARY_WORDS.

port-kinds: in docs/*.md and README.md, every list that names `plain` and another kind (a run of backticked
words joined by commas, "or", "and" or "|", a bullet list, or a table's first column) names exactly the
spellings of BPFNET_PORT_KINDS in maps/bpfnet_maps.h.

walkthrough: every ```sh block of docs/metal3.md carries the marker by which tests/e2e/test_metal3_walkthrough.sh
runs it (tests/e2e/doc_blocks.py reads them), and the test's case list has a case running each marked step:
the check the end-to-end test also makes, here without root or podman, so that a developer who cannot run that
test still learns of a command added without it.

Each extraction also fails when it finds nothing, or a call site it cannot read, so it cannot pass by
reading nothing.
"""

import glob
import os
import re
import sys

TOP = os.environ.get("BPFNET_SOURCE_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CODE_DIRS = ("core", "k8s", "standalone", "loader", "cli")

# Words of the ownership log lines that name no state or thing of their own: plain English, kept short. A word
# here that no such line uses any more is an error too, so the list cannot grow stale.
ORDINARY_WORDS = {
    "acquired", "again", "another", "api", "applied", "by", "confirmed", "deleted", "maps", "not", "orphaned",
    "re-read", "reconciled", "refused", "server", "stopped", "taken", "unreachable", "write", "yet",
}


def read(rel):
    with open(os.path.join(TOP, rel), encoding="utf-8") as f:
        return f.read()


def code_files():
    for d in CODE_DIRS:
        for path in sorted(glob.glob(os.path.join(TOP, d, "*.[ch]pp"))):
            yield os.path.relpath(path, TOP)


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def call_text(text, open_paren):
    """The text of a call from its '(' to the matching ')', string and char literals skipped."""
    depth, i = 0, open_paren
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i += 1
            while text[i] != c:
                i += 2 if text[i] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return text[open_paren + 1:i]
        i += 1
    raise ValueError("unbalanced call")


def function_body(text, name):
    m = re.search(r"\b" + name + r"\([^)]*\)\s*(const\s*)?\{", text)
    if not m:
        return None
    depth, i = 0, m.end() - 1
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i:j + 1]
    return None


# ---- glossary ---------------------------------------------------------------------------------------------


def glossary_rows():
    design = read("docs/design.md")
    start = design.index("\n## Glossary\n")
    end = design.find("\n## ", start + 1)
    rows = []
    for line in design[start:end].splitlines():
        if line.startswith("|") and not line.startswith("|---") and not line.startswith("| word |"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def headwords(rows):
    """The words a row defines: its first cell split at commas and slashes, parenthesised alternatives
    included, backticks dropped; lower-case."""
    words = set()
    for row in rows:
        cell = row[0].replace("`", "")
        for part in re.split(r"[,/()]", cell):
            part = part.strip().lower()
            if part:
                words.add(part)
    return words


SUFFIXES = ("ing", "ed", "es", "e", "s", "d", "er", "ers")


def stem(word):
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def is_glossary_word(token, words):
    """token is a glossary word or one of its forms ("yielded" of "yield", "claimed" of "claim")."""
    return any(token.startswith(base) and token[len(base):] in SUFFIXES + ("",) for w in words for base in (w, stem(w)))


def event_reasons(problems):
    reasons = {}
    for rel in code_files():
        text = read(rel)
        for m in re.finditer(r"\b(warning|normal)_event\(", text):
            if re.search(r"ServiceEvent\s+$", text[: m.start()]):
                continue  # the declaration or definition
            literal = re.match(r'\s*"([A-Za-z]+)"', text[m.end():])
            if not literal:
                problems.append(f"{rel}:{line_of(text, m.start())}: an Event whose reason is not a literal")
                continue
            reasons.setdefault(literal.group(1), f"{rel}:{line_of(text, m.start())}")
    return reasons


def status_words(problems):
    text = read("cli/commands_status.cpp")
    words = {}
    body = function_body(text, "heartbeat_name")
    states = re.findall(r'return\s+"([a-z_]+)"', body or "")
    if len(states) < 2:
        problems.append("cli/commands_status.cpp: heartbeat_name's states not found")
    for s in states:
        words[s] = "bpfnetctl status: heartbeat state"
    m = re.search(r'json\["service_ips"\]\.push_back\(', text)
    keys = re.findall(r'\{"([a-z_]+)",', call_text(text, m.end() - 1)) if m else []
    if not keys:
        problems.append("cli/commands_status.cpp: the keys of a service IP's JSON entry not found")
    for k in keys:
        words[k] = "bpfnetctl status: service IP field"
    return words


def metric_states(problems):
    words = {}
    for rel in code_files():
        for s in re.findall(r'\{"state",\s*"([a-z_]+)"\}', read(rel)):
            words[s] = f"{rel}: metric label state"
    if not words:
        problems.append("no metric sample with a state label found")
    return words


def ownership_log_heads(problems):
    """(where, head) of every log line with a service_ip or lease field."""
    heads = []
    for rel in code_files():
        text = read(rel)
        for m in re.finditer(r"\blog_(debug|info|warn|error)\(", text):
            call = call_text(text, m.end() - 1)
            fields = re.findall(r'\{"([a-z_]+)",', call)
            if "service_ip" not in fields and "lease" not in fields:
                continue
            before_fields = call.split("{", 1)[0]
            messages = re.findall(r'"((?:[^"\\]|\\.)*)"', before_fields)
            if not messages:
                problems.append(f"{rel}:{line_of(text, m.start())}: a log line whose message is not a literal")
            for message in messages:
                heads.append((f"{rel}:{line_of(text, m.start())}", re.split(r"[:;]", message, maxsplit=1)[0]))
    if not heads:
        problems.append("no log line about ownership found")
    return heads


def check_glossary():
    problems = []
    rows = glossary_rows()
    if len(rows) < 10:
        problems.append(f"docs/design.md: the glossary has {len(rows)} rows; not found?")
    glossary = "\n".join(" | ".join(r) for r in rows)
    words = headwords(rows)

    wanted = {}
    for reason, where in event_reasons(problems).items():
        wanted[reason] = f"Event reason ({where})"
    if not wanted:
        problems.append("no Event reason found")
    wanted.update(status_words(problems))
    wanted.update(metric_states(problems))
    for word, where in sorted(wanted.items()):
        if f"`{word}`" not in glossary:
            problems.append(f"`{word}` ({where}) is not in the glossary of docs/design.md")

    used_ordinary = set()
    for where, head in ownership_log_heads(problems):
        for token in re.findall(r"[A-Za-z0-9][A-Za-z0-9-]*", head):
            token = token.lower()
            if token in ORDINARY_WORDS:
                used_ordinary.add(token)
            elif not is_glossary_word(token, words):
                problems.append(f"{where}: '{token}' of the log line \"{head}\" is no glossary word of "
                                "docs/design.md (nor in ORDINARY_WORDS)")
    for token in sorted(ORDINARY_WORDS - used_ordinary):
        problems.append(f"ORDINARY_WORDS: '{token}' is in no log line about ownership any more")
    return problems, f"{len(wanted)} words and the ownership log lines in the glossary"


# ---- port kinds -------------------------------------------------------------------------------------------


def port_kinds():
    header = read("maps/bpfnet_maps.h")
    m = re.search(r"#define BPFNET_PORT_KINDS\(X\)((?:.*\\\n)*.*)", header)
    return re.findall(r"X\(\s*\w+\s*,\s*\w+\s*,\s*(\w+)\s*,", m.group(1)) if m else []


def kind_lists(text, kinds):
    """(line, set of kinds) of every list in a Markdown text that names `plain` and another kind."""
    found = []
    known = set(kinds)
    sep = r"(?:\s*,\s*(?:or\s+|and\s+)?|\s+or\s+|\s+and\s+|\s*\\?\|\s*)"
    for m in re.finditer(r"`([a-z0-9]+)`(?:" + sep + r"`([a-z0-9]+)`)+", text):
        names = re.findall(r"`([a-z0-9]+)`", m.group(0))
        found.append((line_of(text, m.start()), names))
    lines = text.splitlines()
    # Bullet lists and tables: lines that start with a backticked word at one indentation, a bullet's
    # continuation and nested lines (deeper) between them.
    for pattern, deeper_continues in ((r"^(\s*)- `([a-z0-9]+)`", True), (r"^(\s*)\| `([a-z0-9]+)` \|", False)):
        taken = set()
        for i, line in enumerate(lines):
            m = re.match(pattern, line)
            if not m or i in taken:
                continue
            indent, names = m.group(1), []
            for j in range(i, len(lines)):
                m = re.match(pattern, lines[j])
                if m and m.group(1) == indent:
                    names.append(m.group(2))
                    taken.add(j)
                elif not (deeper_continues and lines[j].startswith(indent + " ")):
                    break
            found.append((i + 1, names))
    return [(line, set(names)) for line, names in found if "plain" in names and len(set(names) & known) >= 2]


def check_port_kinds():
    problems = []
    kinds = port_kinds()
    if len(kinds) < 2:
        return ["maps/bpfnet_maps.h: BPFNET_PORT_KINDS not found"], ""
    docs = sorted(glob.glob(os.path.join(TOP, "docs", "*.md"))) + [os.path.join(TOP, "README.md")]
    count = 0
    for path in docs:
        rel = os.path.relpath(path, TOP)
        for line, names in kind_lists(read(rel), kinds):
            count += 1
            if names != set(kinds):
                missing = ", ".join(k for k in kinds if k not in names) or "none"
                extra = ", ".join(sorted(names - set(kinds))) or "none"
                problems.append(f"{rel}:{line}: a list of port kinds that is not BPFNET_PORT_KINDS "
                                f"({', '.join(kinds)}): missing {missing}, not a kind {extra}")
    if count == 0:
        problems.append("no list of port kinds found in the docs")
    return problems, f"{count} lists of port kinds in the docs name {', '.join(kinds)}"


def check_walkthrough():
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    sys.path.insert(0, os.path.join(TOP, "tests", "e2e"))
    import doc_blocks

    try:
        found = doc_blocks.blocks(read("docs/metal3.md").splitlines(keepends=True))
    except ValueError as e:
        return [f"docs/metal3.md: {e}"], ""
    if not found:
        return ["docs/metal3.md: no walkthrough block found"], ""
    suite = read("tests/e2e/test_metal3_walkthrough.sh")
    problems = [f"docs/metal3.md:{line}: step {step} is run by no case of test_metal3_walkthrough.sh (run_step {step})"
                for step, _, _, line in found if not re.search(rf"^\s*run_step {step} ", suite, re.M)]
    return problems, f"{len(found)} command blocks of docs/metal3.md, each run by test_metal3_walkthrough.sh"


def main():
    checks = {"glossary": check_glossary, "port-kinds": check_port_kinds, "walkthrough": check_walkthrough}
    if len(sys.argv) != 2 or sys.argv[1] not in checks:
        print(f"usage: check_docs.py {'|'.join(checks)}", file=sys.stderr)
        return 2
    problems, summary = checks[sys.argv[1]]()
    for p in problems:
        print(f"not ok - {p}")
    if problems:
        return 1
    print(f"ok - {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
