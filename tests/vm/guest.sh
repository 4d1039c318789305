#!/bin/bash
# Runs inside a VM of the kernel matrix (tests/vm/run.sh), chrooted into the host's root (read-only, over
# 9p): the same test binaries and scripts, the same dnsmasq and clients as the host tier, on another kernel.
# Prints one line per result, which run.sh collects:
#   KERNEL <uname -r>
#   PROBE <name> <value> [detail]       what this kernel offers (the loader's choices depend on it)
#   RESULT <suite> pass|fail|skip <seconds> [reason]
#   DONE
#   usage: guest.sh REPO SUITES [BUILD [TIME_SCALE]]   SUITES: comma-separated verifier, bpf (BUILD's packet tables),
#                                         bpf_clang16 (its clang-16 twin's), fuzz, e2e (all of tests/e2e),
#                                         e2e_<name> (tests/e2e/test_<name>.sh);
#                                         BUILD: the build tree (default REPO/build)
set -u
repo=$1
suites=${2:-bpf}
build=${3:-$repo/build}
time_scale=${4:-1} # E2E_TIME_SCALE for the e2e suites (run.sh: 5 under TCG)
log=/tmp/vm-logs
mkdir -p "$log"
echo "KERNEL $(uname -r)"
ip link set lo up

now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# libxdp's multi-program dispatcher needs freplace; xdp-loader tells whether it got one on a veth.
probe_dispatcher() {
    local obj=$build/tests/e2e/xdp_pass.bpf.o
    if ! ip netns add vmprobe; then
        echo "PROBE dispatcher unknown (ip netns add failed)"
        ls -l /proc/1/ns/net /proc/self/ns/net 2>&1 | sed 's/^/# /'
        grep -E ' /(proc|run|sys) ' /proc/mounts | sed 's/^/# /'
        return
    fi
    ip -n vmprobe link add p0 type veth peer name p1
    ip -n vmprobe link set p0 up
    ip -n vmprobe link set p1 up
    local out
    out=$(nsenter --net=/run/netns/vmprobe xdp-loader load -m native p0 "$obj" 2>&1 &&
        nsenter --net=/run/netns/vmprobe xdp-loader status p0 2>&1)
    if echo "$out" | grep -q xdp_dispatcher; then
        echo "PROBE dispatcher available"
    else
        echo "PROBE dispatcher unavailable $(echo "$out" | grep -iE 'fall|error|not supp|fail' | head -n1 | tr -s ' ')"
        echo "$out" | head -n 12 | sed 's/^/# xdp-loader: /'
    fi
    ip netns del vmprobe
}

# The loader's own probe: what it will choose on this kernel (tcx or clsact, redirect_peer or veth delivery).
probe_loader() {
    local key value
    while read -r key value; do
        [ "$key" = release ] || echo "PROBE $key $value"
    done < <("$build/loader/bpfnet-loader" --probe-kernel 2>&1)
}

# twin_tree: the default tree's clang-16 twin (scripts/test.sh builds both), when the build tree is the default
# one: its programs are what clang-16 changes (the suite bpf_clang16 runs its packet tables; the self-check
# loads its object too).
twin_tree() {
    [ "$build" != "$repo/build" ] || echo "$repo/build-clang16"
}

# run_bpf_tree TREE: that tree's packet tables (BPF_PROG_TEST_RUN) on this kernel.
run_bpf_tree() {
    local b=$1 t0 rc name=bpf_${1##*/}
    local out=$log/bpf-${1##*/}.log
    t0=$(now)
    (cd /tmp && "$b/tests/bpf/bpf_tests" --gtest_brief=1) >"$out" 2>&1
    rc=$?
    if [ $rc = 0 ]; then
        echo "RESULT $name pass $(took "$t0") $(grep -c '^\[  SKIPPED' "$out") skipped rows"
    else
        echo "RESULT $name fail $(took "$t0") $(grep -m3 '^\[  FAILED' "$out" | tr '\n' ' ')"
        sed 's/^/# /' "$out" | grep -B2 -A12 'Failure' | head -n 60
    fi
}

# The self-check: this kernel's verifier accepts the datapath (bpf/bpfnet.bpf.o, and the clang-16 twin's when
# it is built, whose packet tables may run on another kernel of the matrix) and refuses the same datapath with
# one bounds check removed (bpf/bpfnet_broken.bpf.o), all loaded the same way (bpftool prog loadall). A guest
# whose verifier did not run, or that ran something else, cannot pass it.
run_verifier() {
    local t0 out obj objs=("$build/bpf/bpfnet.bpf.o") twin refused="" n=0 pins=/sys/fs/bpf/bpfnet-verifier
    t0=$(now)
    twin=$(twin_tree)
    if [ -n "$twin" ] && [ -f "$twin/bpf/bpfnet.bpf.o" ]; then
        objs+=("$twin/bpf/bpfnet.bpf.o")
    fi
    rm -rf "$pins" && mkdir -p "$pins/broken"
    for obj in "${objs[@]}"; do
        n=$((n + 1))
        mkdir -p "$pins/datapath$n"
        out=$(bpftool prog loadall "$obj" "$pins/datapath$n" 2>&1) || { refused=$obj; break; }
    done
    if [ -n "$refused" ]; then
        echo "RESULT verifier fail $(took "$t0") the datapath was refused ($refused): $(verifier_says "$out")"
        echo "$out" | grep -A30 'BEGIN PROG LOAD LOG' | head -n 60 | sed 's/^/# /'
    elif out=$(bpftool prog loadall "$build/bpf/bpfnet_broken.bpf.o" "$pins/broken" 2>&1); then
        echo "RESULT verifier fail $(took "$t0") the datapath with a bounds check removed was accepted"
    elif ! grep -q 'invalid access to packet' <<<"$out"; then
        echo "RESULT verifier fail $(took "$t0") the broken datapath was refused, not for its bounds: $(verifier_says "$out")"
    else
        echo "RESULT verifier pass $(took "$t0") datapath accepted (${#objs[@]} builds); without a bounds check refused ($(verifier_says "$out"))"
    fi
    rm -rf "$pins"
}
# verifier_says OUTPUT: the verifier's (or else libbpf's) first complaint in bpftool's output.
verifier_says() {
    grep -m1 -E 'invalid access|outside of the packet' <<<"$1" ||
        grep -m1 -E 'Permission denied|Invalid argument|failed' <<<"$1" | tr -s ' '
}

# The fuzzer's frames through this kernel's programs and helpers, checked against the reference model (3% of
# the host tier's quick mode, about 15 s under TCG: the packet tables run every rule on this kernel too).
run_fuzz() {
    local t0 rc fuzz=$build/tests/fuzz/bpfnet-fuzz
    [ -x "$fuzz" ] || return 0
    t0=$(now)
    (cd /tmp && "$fuzz" --frames "${BPFNET_VM_FUZZ_FRAMES:-30000}") >"$log/fuzz.log" 2>&1
    rc=$?
    if [ $rc = 0 ]; then
        echo "RESULT fuzz pass $(took "$t0") $(grep -m1 '^  all ' "$log/fuzz.log" | tr -s ' ' | cut -d' ' -f3-9)"
    else
        echo "RESULT fuzz fail $(took "$t0") $(grep -m1 'violations:' "$log/fuzz.log" | tr -s ' ')"
        sed 's/^/# /' "$log/fuzz.log" | head -n 60
    fi
}

# run_e2e e2e_NAME[@VARIANT][/CASE+CASE...]: tests/e2e/test_NAME.sh, on one of lib.sh's LAN variants: vlan
# (the provisioning network as VLAN 100 on a vlan_filtering bridge, the NIC an 802.1Q sub-interface) or devenv
# (the bridge in the node's namespace), or with the pod wired as OVN-Kubernetes wires it (ovs: E2E_CNI=ovs, the
# veth a port of an Open vSwitch bridge); with /CASE+CASE only those cases (--case).
run_e2e() {
    local name=${1%%/*} cases="" t0 rc
    [ "$name" = "$1" ] || cases=${1#*/}
    local base=${name%@*} variant=""
    [ "$base" = "$name" ] || variant=${name#*@}
    local select=()
    [ -z "$cases" ] || select=(--case "${cases//+/,}")
    local script=$repo/tests/e2e/test_${base#e2e_}.sh
    local lan=()
    case $variant in
    "") ;;
    vlan) lan=(E2E_VLAN=100) ;;
    devenv) lan=(E2E_LAN_SHAPE=devenv) ;;
    ovs) lan=(E2E_CNI=ovs) ;;
    *)
        echo "RESULT $name fail 0 unknown variant $variant"
        return
        ;;
    esac
    t0=$(now)
    # Under emulation the Kubernetes suite moves the pod 4 times instead of 20 (each move is spaced out by
    # the time scale): the same checks, in a tenth of the time.
    local moves=20
    [ "$time_scale" = 1 ] || moves=4
    env "${lan[@]}" XDP_PASS_OBJ=$build/tests/e2e/xdp_pass.bpf.o E2E_TIME_SCALE=$time_scale K8S_MOVES=$moves \
        bash "$script" "$build/loader/bpfnet-loader" "${select[@]}" >"$log/$name.log" 2>&1
    rc=$?
    case $rc in
    0) echo "RESULT $name pass $(took "$t0") $(tail -n1 "$log/$name.log")" ;;
    77) echo "RESULT $name skip $(took "$t0") $(grep -m1 -iE 'skip' "$log/$name.log" | tr -s ' ')" ;;
    *)
        echo "RESULT $name fail $(took "$t0") $(grep -m3 '^not ok' "$log/$name.log" | tr '\n' ' ')"
        tail -n 120 "$log/$name.log" | sed 's/^/# /'
        ;;
    esac
}

# The guest's work after the self-check, E2E_JOBS jobs at a time (BPFNET_VM_E2E_JOBS, default 2), as ctest -j2
# runs them on the host: the e2e suites, each tree's packet tables and the fuzzer. Each e2e suite sandboxes
# itself (its own network, mount and pid namespaces, its own bpffs), and much of a suite's time is waiting (ARP
# and DHCP retries, a loader's start, a client's timeout). The suites whose subject is timing run alone:
# lifecycle (the liveness gate: probes within the heartbeat's timeout) and kubernetes (the Lease). The packet
# tables and the fuzzer are CPU work with no clock of theirs: they join the pool after its e2e suites, where
# they fill the lane that the longest suite leaves idle (one after the other before they ran first, alone: 54 s
# of each guest's run on 2026-12-06).
E2E_JOBS=${BPFNET_VM_E2E_JOBS:-2}
E2E_ALONE=" e2e_lifecycle e2e_kubernetes "
runs_alone() {
    local base=${1%%/*}
    [[ $E2E_ALONE == *" ${base%@*} "* ]]
}
run_job() {
    case $1 in
    bpf:*) run_bpf_tree "${1#bpf:}" ;;
    fuzz) run_fuzz ;;
    *) run_e2e "$1" ;;
    esac
}
run_jobs() {
    local job
    for job in "$@"; do
        if runs_alone "$job"; then
            wait
            run_job "$job"
            continue
        fi
        while [ "$(jobs -rp | wc -l)" -ge "$E2E_JOBS" ]; do
            wait -n
        done
        run_job "$job" &
    done
    wait
}

probe_dispatcher
probe_loader
IFS=, read -ra list <<<"$suites"
e2e_suites=()
cpu_jobs=() # the packet tables and the fuzzer
for suite in "${list[@]}"; do
    case $suite in
    verifier) run_verifier ;;
    bpf | bpf_clang16)
        tree=$build
        [ "$suite" = bpf ] || tree=$(twin_tree)
        if [ -z "$tree" ]; then
            echo "RESULT $suite skip 0 no clang-16 twin of $build"
        elif [ -x "$tree/tests/bpf/bpf_tests" ]; then
            cpu_jobs+=("bpf:$tree")
        else
            echo "RESULT bpf_${tree##*/} skip 0 $tree/tests/bpf/bpf_tests is not built"
        fi
        ;;
    fuzz) cpu_jobs+=(fuzz) ;;
    e2e)
        for script in "$repo"/tests/e2e/test_*.sh; do
            name=${script##*/test_}
            e2e_suites+=("e2e_${name%.sh}")
        done
        ;;
    e2e_*) e2e_suites+=("$suite") ;;
    *) echo "RESULT $suite fail 0 unknown suite" ;;
    esac
done
# The CPU jobs go after the last e2e suite of the pool, before the alone suites that follow it.
last_pooled=-1
for i in "${!e2e_suites[@]}"; do
    runs_alone "${e2e_suites[i]}" || last_pooled=$i
done
run_jobs "${e2e_suites[@]:0:last_pooled+1}" "${cpu_jobs[@]}" "${e2e_suites[@]:last_pooled+1}"
echo DONE
