#!/usr/bin/env bash
# Sets up this machine (Debian packages), builds bpfnet and runs every test: unit, BPF packet tables, the
# fuzzer's quick mode (10^6 frames per program against the reference model, and its source mutants) and the
# network-namespace end-to-end suites on this machine's kernel, then the same BPF and fuzz suites and the
# end-to-end cases whose subject is the datapath on the kernel in VMs booting Debian's 6.1 and 6.12 kernels
# (tests/vm/run.sh, the kernel matrix; `tests/vm/run.sh --long` runs every case there). Needs root. The BPF
# programs are built, and their packet tables and the fuzzer run, with both supported compilers (clang-14
# and clang-16); the C++ code is built once more with clang-14, ASan and UBSan, and the unit and k8s tiers, the
# libFuzzer targets of the loader's inputs (tests/libfuzz, 10 s each) and the loader's e2e suites steering, cli
# and kubernetes run there too.
#
#   env: BPFNET_TEST_VM=0     skip the kernel matrix (a quicker run while developing; CI always runs it)
#        BPFNET_TEST_BENCH=0  skip the benchmarks' quick run (it checks that every benchmark still runs;
#                             its numbers are never judged)
#
# All root tests run inside a private sandbox (`unshare --net --mount`): its network namespace holds only
# lo, and each end-to-end script builds its own namespaces inside it. Nothing touches the machine's own
# interfaces.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)

if [ "$(id -u)" -ne 0 ]; then
  echo "test.sh: run as root (BPF programs and network namespaces need it)" >&2
  exit 1
fi

# Where the time goes: each stage's wall time and log, for the table printed at the end (also when a stage
# failed: scripts/time_table.sh).
times=$(mktemp -d /tmp/bpfnet-test-times.XXXXXX)
date +%s >"$times/started"
# A stage still running beside the others when the run stops (one failed) is waited for: nothing is left behind,
# and its output is shown if it failed too.
trap 'wait; show_failed_background_stages; bash "$top/scripts/time_table.sh" "$times"' EXIT

# cpu_ticks: the machine's CPU time so far, in clock ticks summed over its CPUs (user to steal; guest time is
# counted in user), and the idle part of it (idle and iowait).
cpu_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9, $5 + $6 }' /proc/stat; }

# stage_record T0 CPU0 RC TITLE: a stage's line for the table: its wall time counted from T0 and how busy the
# machine's CPUs were meanwhile (CPU0: cpu_ticks at T0), in percent of all of them, whoever used them (a stage
# beside it too): a stage far from 100 % leaves CPU time a stage beside it could have had.
stage_record() {
  local busy
  busy=$(echo "$2 $(cpu_ticks)" | awk '{ all = $3 - $1; if (all <= 0) all = 1; printf "%d", 100 * (all - ($4 - $2)) / all }')
  printf '%s\t%s\t%s\t%s\n' "$(($(date +%s) - $1))" "$3" "$4" "$busy" >>"$times/stages"
}

# stage SLUG TITLE CMD...: runs CMD as one stage of the run, its output shown and kept in $times/SLUG.log.
stage() {
  local slug=$1 title=$2 t0 c0 rc=0
  shift 2
  echo "== $title"
  t0=$(date +%s) c0=$(cpu_ticks)
  "$@" 2>&1 | tee "$times/$slug.log" || rc=$?
  stage_record "$t0" "$c0" "$rc" "$title"
  return "$rc"
}

# stage_in_background SLUG TITLE CMD...: starts CMD as a stage that runs beside the next ones (its output kept in
# $times/SLUG.log, shown when it is awaited); stage_await SLUG: waits for it, shows its output, fails if it did.
declare -A background_stages=()
stage_in_background() {
  local slug=$1 title=$2
  shift 2
  echo "== $title (beside the next stages)"
  (
    t0=$(date +%s) c0=$(cpu_ticks) rc=0
    "$@" >"$times/$slug.log" 2>&1 || rc=$?
    stage_record "$t0" "$c0" "$rc" "$title (beside the others)"
    echo "$rc" >"$times/$slug.rc"
    exit "$rc"
  ) &
  background_stages[$slug]=$!
}
stage_await() {
  local slug=$1 rc=0
  wait "${background_stages[$slug]}" || rc=$?
  echo "== $slug, which ran beside the stages above:"
  cat "$times/$slug.log"
  touch "$times/$slug.shown"
  return "$rc"
}
# show_failed_background_stages: the output of each background stage that failed and was not awaited (the run
# stopped at another stage's failure first).
show_failed_background_stages() {
  local slug
  for slug in "${!background_stages[@]}"; do
    if [ ! -e "$times/$slug.shown" ] && [ "$(cat "$times/$slug.rc" 2>/dev/null)" != 0 ]; then
      echo "== $slug, which ran beside the stages above, failed too:"
      cat "$times/$slug.log"
    fi
  done
}

stage setup "setup: Debian packages (scripts/setup.sh)" "$top/scripts/setup.sh"
# The image's two base images (mmdebstrap: downloads, unpacking, dpkg; mostly one process at a time) are made
# while the lint and the compilers run: on a fresh machine they took 136 s and 78 s one after the other.
stage_in_background bases "image: the base images from Debian packages (scripts/image.sh --bases-only)" \
  "$top/scripts/image.sh" --bases-only
stage lint "lint: formatting (clang-format-14) and shellcheck" "$top/scripts/lint.sh"

# The release trees are built with the image's flags (Containerfile: RelWithDebInfo without its -g): what runs
# here is what ships, and g++ spends a fifth of its time on debug information (k8s/controller.cpp: 13.8 s with
# -g, 10.8 s without); the sanitizer trees below keep line tables for their reports. The release trees and the
# image's build stage compile the same C++ with the same g++ and flags: they share a compiler cache
# (scripts/ccache.sh), so the clang-16 tree and the image compile again only what includes the BPF skeleton.
# shellcheck source=ccache.sh
source "$top/scripts/ccache.sh"
ccache_dir=$top/build-ccache
build() { # build DIR BPF_CLANG [TARGET...]
  local dir=$1 clang=$2
  shift 2
  # shellcheck disable=SC2086 # CMake arguments
  (ccache_env "$top" "$ccache_dir" &&
    cmake -S "$top" -B "$dir" -DBPF_CLANG="$clang" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" $CCACHE_CMAKE_ARGS >/dev/null &&
    cmake --build "$dir" -j "$jobs" ${1:+--target "$@"})
}
stage build "build, BPF compiled with clang-14" build "$top/build" clang-14
# The clang-16 tree exists for the programs clang-16 compiles: only what loads them is built there (the
# packet tables and the fuzzer); the loader, CLI and control-plane tests are the clang-14 tree's.
stage build16 "build, BPF compiled with clang-16: the packet tables and the fuzzer" \
  build "$top/build-clang16" clang-16 bpf_tests bpfnet_fuzz

# The benchmarks' quick run needs only the release tree, and half its time is waiting (the failover rounds wait
# for Leases and moves): it runs beside the sanitizer trees' builds, which have no clock and are compiled at a
# lower priority (nice 10), so the benchmarks' loaders keep the CPU they ask for and the compilers take the rest.
if [ "${BPFNET_TEST_BENCH:-1}" != 0 ]; then
  stage_in_background bench "benchmarks, quick run: each one must still run (the numbers are not judged)" \
    "$top/tests/bench/run.sh" --quick --out "$top/build/bench-quick"
fi

# The C++ code once more, with clang-14, AddressSanitizer (leaks included), UndefinedBehaviorSanitizer and
# libFuzzer's coverage: the unit and k8s tiers, the loader's e2e suites and the libFuzzer targets of the
# loader's inputs (tests/libfuzz) run there (below), and any report fails. The sanitizer trees are Debug builds
# (-O0; the BPF programs are compiled with -O2 whatever the build type): clang-14 compiles a JSON-heavy file
# with ASan in half the time it takes at -O2 (k8s/controller.cpp: 10.4 s against 19.3 s; the ASan tree 241 s
# against 411 s, the TSan tree 161 s against 263 s), and nothing these tests run is CPU-bound. Their debug
# information is line tables only (-gline-tables-only): a report's stack names each frame's file and line, which
# is all a report reads; the TSan tree built in 131 s with them, 140 s with -g.
sanitizer_debug_flags=(-DCMAKE_C_FLAGS_DEBUG=-gline-tables-only -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only)
build_sanitized() { # build_sanitized DIR
  CC=clang-14 CXX=clang++-14 cmake -S "$top" -B "$1" -DBPF_CLANG=clang-14 -DCMAKE_BUILD_TYPE=Debug \
    "${sanitizer_debug_flags[@]}" -DBPFNET_SANITIZE=address,undefined -DBPFNET_LIBFUZZER=ON \
    -DBPFNET_UNITY_LIBS=ON -DBPFNET_UNITY_TESTS=OFF >/dev/null
  # cni_standin: the Kubernetes suite's no_kube_proxy case attaches its socket-LB stand-in with it
  nice -n 10 cmake --build "$1" -j "$jobs" --target unit_and_k8s_tests libfuzz_targets cni_standin
}
stage buildsan "build with clang-14, ASan, UBSan and libFuzzer: the loader, bpfnetctl, the unit and k8s tests, the input fuzzers" \
  build_sanitized "$top/build-sanitized"

# And once more with ThreadSanitizer (clang-14; it cannot share a build with ASan): the loader, bpfnetctl and the
# test programs that run threads (thread_tests, tests/CMakeLists.txt; the single-threaded ones give
# ThreadSanitizer nothing to find). Both sanitizer trees compile the libraries a few files at a time as one
# (BPFNET_UNITY_LIBS: at -O0 most of a file's time is the headers); the release tree compiles each library file
# alone and the ASan tree each test file alone, so every file still compiles on its own somewhere.
build_tsan() { # build_tsan DIR
  CC=clang-14 CXX=clang++-14 cmake -S "$top" -B "$1" -DBPF_CLANG=clang-14 -DCMAKE_BUILD_TYPE=Debug \
    "${sanitizer_debug_flags[@]}" -DBPFNET_SANITIZE=thread -DBPFNET_UNITY_LIBS=ON -DBPFNET_UNITY_TESTS=ON >/dev/null
  nice -n 10 cmake --build "$1" -j "$jobs" --target thread_tests xdp_pass_bpf
}
stage buildtsan "build with clang-14 and ThreadSanitizer: the loader, bpfnetctl, the test programs that run threads" \
  build_tsan "$top/build-tsan"

if [ "${BPFNET_TEST_BENCH:-1}" != 0 ]; then
  stage_await bench
fi

# The image (Containerfile) from base images made of Debian packages: tests/e2e/test_image.sh runs the loader
# from it with the DaemonSet's security context; here a missing image fails that suite instead of skipping it.
stage_await bases
stage image "image: scripts/image.sh (podman, on the bases made above)" "$top/scripts/image.sh" --ccache "$ccache_dir"
export BPFNET_IMAGE_REQUIRED=1

# The firmware suites' guest kernel and agent ramdisk (tests/e2e/test_firmware.sh): made here, outside the
# sandboxes below, which have no network to download the Debian kernel package with; the suites find them in
# the cache. Here a missing ramdisk fails those suites instead of skipping them.
stage ramdisk "the firmware suites' kernel and agent ramdisk (tests/vm/run.sh --agent-ramdisk)" \
  "$top/tests/vm/run.sh" --agent-ramdisk "${BPFNET_VM_CACHE:-/var/cache/bpfnet-vm}/agent-boot"
export BPFNET_FIRMWARE_REQUIRED=1

# The sandbox's loopback is brought up for the tests that talk to a local stand-in (the Kubernetes API).
sandboxed() { unshare --net --mount --fork -- sh -c 'ip link set lo up && exec "$@"' sandboxed "$@"; }

# The packet tables and the fuzzer (its quick mode and its source mutants) of both compilers' programs: CPU work
# with no clock (a packet table's loader heartbeat is 5 s fresh; the fuzzer's, an hour), the host tier's longest
# (fuzz_mutants 156 s, its mutants built two at a time, fuzz_quick 43 s, 2026-12-07), run at the lowest priority
# (nice 19) beside everything that follows: it takes the CPU time the e2e suites leave idle while they wait
# (about a fifth of the sanitizer stages', the host tier's and the kernel matrix's), and gives it back whenever
# they want it. On a slow afternoon (2026-12-07: the release tree's build 436 s against 353 s that morning)
# the kernel matrix took 1457 s, 1376 s of them with the lane's mutants beside it, but its guests alone, later
# the same afternoon, were as slow (6.1's e2e_steering 425 s against 403 s beside the lane): the machine was.
cpu_lane() {
  renice -n 19 -p "$BASHPID" >/dev/null
  local rc=0
  sandboxed ctest --test-dir "$top/build-clang16" -L '^(bpf|fuzz)$' -E fuzz_mutants --output-on-failure -j "$jobs" ||
    rc=1
  sandboxed ctest --test-dir "$top/build" -L '^(bpf|fuzz)$' --output-on-failure -j "$jobs" || rc=1
  return "$rc"
}
stage_in_background cpu "BPF packet tables and the fuzzer (quick mode; mutants), programs from clang-16 and clang-14, at nice 19" \
  cpu_lane

# sanitized_tiers TREE REPORTS LABELS SUITES VAR=VALUE...: a sanitizer tree's ctest labels LABELS, then its e2e
# suites SUITES (e2e_ names, |-separated), with the sanitizer options VAR=VALUE (their log_path under REPORTS).
# Reports go to files (a loader's stderr is the e2e suites' business): any report fails the stage, and is
# printed.
sanitized_tiers() {
  local tree=$1 reports=$2 labels=$3 suites=$4 rc=0
  shift 4
  mkdir -p "$reports"
  sandboxed env "$@" ctest --test-dir "$tree" -L "$labels" -LE '^script$' --output-on-failure -j "$jobs" || rc=1
  sandboxed env "$@" ctest --test-dir "$tree" -R "^e2e_($suites)\$" --output-on-failure -j "$jobs" || rc=1
  if compgen -G "$reports/report.*" >/dev/null; then
    cat "$reports"/report.*
    echo "sanitizers: the reports above ($reports)" >&2
    rc=1
  fi
  return "$rc"
}

# ASan and UBSan: the unit and k8s tiers, the input fuzzers, and the e2e suites that run the loader in both modes
# and bpfnetctl the most; of the Kubernetes suite, the cases about inputs, refusals, API shapes and the
# datapath's paths (e2e_kubernetes: every case but e2e_kubernetes_threads', tests/e2e/CMakeLists.txt).
reports=$times/sanitizer-reports
stage ctestsan "unit, k8s, the input fuzzers (10 s each) and the loader's e2e suites (steering, cli, kubernetes but its timing cases) under ASan and UBSan" \
  sanitized_tiers "$top/build-sanitized" "$reports" 'unit|k8s|libfuzz' 'steering|cli|kubernetes' \
  "ASAN_OPTIONS=detect_leaks=1:log_path=$reports/report" "UBSAN_OPTIONS=print_stacktrace=1:log_path=$reports/report"

# ThreadSanitizer: the tests that run the loader's threads: the unit and k8s tiers (the control socket, the
# Kubernetes client's watches, the Event recorder, the Lease keeper) and the e2e suites whose loaders run every
# thread of theirs: the runtime thread (heartbeat, announcements, the datapath's events), the HTTP server, the
# watches and the Event recorder (the Kubernetes suite's cases about timing and concurrency: moves, takeovers,
# outages, stalled watches, upgrades), the control socket and the link watch (lifecycle). Each Kubernetes case
# runs under one sanitizer, not both: together they took 600 s of CI's 45-minute aim.
reports=$times/tsan-reports
stage ctesttsan "unit, k8s and the loader's threads in e2e (kubernetes' timing cases, lifecycle) under ThreadSanitizer" \
  sanitized_tiers "$top/build-tsan" "$reports" 'unit|k8s' 'kubernetes_threads|lifecycle' \
  "TSAN_OPTIONS=log_path=$reports/report second_deadlock_stack=1"

# One per core at a time: every e2e suite has a sandbox of its own (tests/e2e/lib.sh), and most of their time is waits.
# The e2e suites the sanitizer trees ran above (steering, cli and half the kubernetes cases under ASan, the
# other half and lifecycle under TSan: the same cases and assertions, with a sanitized loader) are not run again
# here; the release loader's Kubernetes mode still runs in e2e_image_kubernetes (the image's loader) and in the
# benchmarks' failover rounds (test_kubernetes.sh's serve, moves, partition and upgrade cases), its standalone
# mode in every other suite.
# The packet tables and the fuzzer run in the CPU lane (labels bpf and fuzz). Both ctest runs of the release tree
# write its Testing/Temporary (the last run's log, the tests' costs): only ctest's own bookkeeping.
stage ctest "all tests (unit, k8s, e2e), programs from clang-14, one per core at a time" \
  sandboxed ctest --test-dir "$top/build" --output-on-failure -j "$jobs" -LE '^(bpf|fuzz)$' \
  -E '^e2e_(steering|cli|kubernetes|kubernetes_threads|lifecycle)$'

# After the host tier, alone on the machine (but for what is left of the CPU lane, which only takes the CPU time
# the guests leave idle): the TCG guests are CPU-bound, and slowed by a second guest one missed a wall-clock
# window of e2e_lifecycle on 6.1; beside the host tier they would share the CPUs too. QEMU guests with no
# network device: nothing there can reach the machine's interfaces. Each guest first checks that its verifier
# accepts the datapath and refuses it with a bounds check removed (the self-check).
if [ "${BPFNET_TEST_VM:-1}" = 0 ]; then
  echo "== kernel matrix skipped (BPFNET_TEST_VM=0)"
else
  stage vm "kernel matrix: the verifier self-check, bpf, fuzz and the datapath's e2e cases on Debian's 6.1 and 6.12 kernels" \
    "$top/tests/vm/run.sh"
fi
stage_await cpu
