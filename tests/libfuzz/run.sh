#!/usr/bin/env bash
# Runs one libFuzzer target from its seed corpus: a copy of the corpus (the tree is never written), a new seed
# each run unless --seed is given, for --seconds (or --runs inputs). A finding (a crash, a sanitizer report, an
# escaped exception, a leak, an input slower than 10 s) fails the run and prints the input that caused it
# (hex and base64) and the command that replays it.
#
#   run.sh TARGET CORPUS_DIR [--seconds N] [--runs N] [--seed S] [--expect-finding] [-- libFuzzer options...]
#   --expect-finding: the target is a mutant (a deliberate bug, tests/libfuzz/CMakeLists.txt): the run passes
#   only when the target reports a finding.
#   the long mode, e.g. an hour with every core:  run.sh build-sanitized/tests/libfuzz/fuzz_config \
#       tests/libfuzz/corpus/config --seconds 3600 -- -fork=2
set -euo pipefail

target=$1 corpus=$2
shift 2
seconds=10 runs="" seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ') expect_finding=0
extra=()
while [ $# -gt 0 ]; do
  case $1 in
  --seconds) seconds=$2; shift 2 ;;
  --runs) runs=$2; shift 2 ;;
  --seed) seed=$2; shift 2 ;;
  --expect-finding) expect_finding=1; shift ;;
  --) shift; extra=("$@"); break ;;
  *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

work=$(mktemp -d /tmp/bpfnet-libfuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/findings"
cp -r "$corpus"/. "$work/corpus/"
limit=(-max_total_time="$seconds")
[ -n "$runs" ] && limit=(-runs="$runs")

name=$(basename "$target")
echo "$name: seed $seed, ${runs:+$runs runs}${runs:-$seconds s}, corpus $corpus ($(find "$corpus" -type f | wc -l) seeds)"
rc=0
if [ "$expect_finding" = 1 ]; then
  # A mutant's report is the point of its run: kept in its own log, never where the sanitizer tier collects
  # reports of real findings (scripts/test.sh sets log_path for those).
  export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
fi
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} "$target" "${limit[@]}" -seed="$seed" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$work/findings/" "${extra[@]}" "$work/corpus" >"$work/log" 2>&1 || rc=$?
grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ *DONE)' "$work/log" || true
if [ "$expect_finding" = 1 ]; then
  if [ "$rc" -ne 0 ] && compgen -G "$work/findings/*" >/dev/null; then
    echo "$name: the mutant was found: $(grep -m1 -E 'ERROR: |runtime error|terminate called|what\(\)' "$work/log" || true)"
    exit 0
  fi
  echo "$name: FAILED: the mutant survived ${runs:-$seconds s} (seed $seed)" >&2
  exit 1
fi
if [ "$rc" -ne 0 ]; then
  tail -60 "$work/log"
  for finding in "$work"/findings/*; do
    [ -e "$finding" ] || continue
    echo "finding $(basename "$finding") ($(stat -c %s "$finding") bytes):"
    od -An -tx1 -v "$finding" | head -20
    echo "base64: $(base64 -w0 "$finding")"
    echo "replay: echo '$(base64 -w0 "$finding")' | base64 -d > /tmp/finding && $target /tmp/finding"
  done
  echo "$name: FAILED (seed $seed)" >&2
  exit 1
fi
echo "$name: no finding"
