#!/usr/bin/env bash
# Prints where a run of scripts/test.sh spent its time: each stage (its wall time and how it ended), and
# every suite that took a minute or more, read from the logs the stages wrote: ctest's per-test lines, the
# kernel matrix's RESULT lines (per kernel) and the benchmarks' "done in" lines.
#
#   usage: scripts/time_table.sh DIR
#          DIR holds `stages` (lines: SECONDS<TAB>STATUS<TAB>NAME<TAB>BUSY, in the order the stages ended;
#          BUSY: how much of the machine's CPU time was in use meanwhile, by anything, in percent),
#          `started` (the run's start, in seconds since the epoch) and the stages' logs, *.log, each named after
#          its stage.
set -euo pipefail

dir=${1:?usage: time_table.sh DIR}
[ -f "$dir/stages" ] || exit 0

echo "== where the time went (seconds; CI's limit is 5400, the aim 2700; how busy the CPUs were meanwhile)"
awk -F'\t' '{
    cpu = ($4 == "" ? "" : sprintf("%3d%% busy", $4))
    printf "  %-58s %6d  %-9s %s\n", $3, $1, cpu, ($2 == 0 ? "ok" : "exit " $2)
}' "$dir/stages"
# Stages may overlap (the kernel matrix runs beside the host tier): the run's own wall time is the total.
if [ -f "$dir/started" ]; then
    printf '  %-58s %6d\n' "the whole run (wall time)" "$(($(date +%s) - $(cat "$dir/started")))"
fi

echo "  suites of a minute or more:"
for log in "$dir"/*.log; do
    [ -f "$log" ] || continue
    stage=$(basename "$log" .log)
    # ctest: "  3/21 Test #163: e2e_steering ........   Passed   45.12 sec"
    sed -nE 's/^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: ([^ ]+) .* ([0-9]+)\.[0-9]+ sec$/\2\t\1/p' "$log" |
        awk -F'\t' -v s="$stage" '$1 >= 60 { printf "    %-56s %6d\n", s ": " $2, $1 }'
    # the kernel matrix: "== 6.1 (6.1.0-57-amd64)" then "  RESULT e2e_cli pass 402.1 ..."
    awk -v s="$stage" '
        /^== [0-9.]+ \(/ { kernel = $2 }
        $1 == "RESULT" && $4 + 0 >= 60 { printf "    %-56s %6d\n", s " " kernel ": " $2 " (" $3 ")", $4 }
    ' "$log"
    # the benchmarks: "== path_cost" then "   done in 51 s"
    awk -v s="$stage" '
        /^== [a-z_]+$/ { bench = $2 }
        /^   done in [0-9]+ s$/ && $3 >= 60 { printf "    %-56s %6d\n", s ": " bench, $3 }
    ' "$log"
done
