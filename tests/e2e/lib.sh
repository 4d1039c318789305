# shellcheck shell=bash
# Helpers for bpfnet's end-to-end tests. Source this file from a test script, then call
# `sandbox_reexec "$@"` before anything else: it re-runs the script inside a private sandbox and
# returns only there.
#
# The sandbox (network safety, /work/shared/testing.md): `unshare --net --mount --pid --fork` gives the
# script a network namespace with nothing but lo, a private mount namespace (private /run/netns
# tmpfs and bpffs on /sys/fs/bpf) and a pid namespace, so every process the test starts dies with it
# even when the test itself is killed. All addresses are in 198.18.0.0/15; no interface of the
# machine is ever touched.
#
# Topology (fixed addresses and MACs): the provisioning LAN is a Linux bridge with several hosts on it, as
# users' LANs are (/work/shared/testing.md, "Test worlds are users' worlds"). Every LAN device keeps its
# default offloads, no peer runs an XDP program, no neighbour entry is static: the datapath must cope.
#
#   e2e-host (bare-metal host)  eth0 198.18.0.10/24 02:00:00:00:00:10 ─┐
#   e2e-host2 (another host)    eth0 198.18.0.6/24  02:00:00:00:00:06 ─┼─ br-prov ─┐ (E2E_LAN_SHAPE=switch:
#   e2e-host3 (another host)    eth0 198.18.0.7/24  02:00:00:00:00:07 ─┘           │  the bridge in e2e-lan)
#                                                                                  │
#   e2e-node (control-plane node)  prov0 (no IP; the provisioning NIC) <── veth ───┘ lan-node, a bridge port
#                                  02:00:00:00:00:01
#                                  vethpod 198.18.100.1/24 <-- veth --> e2e-pod (Ironic pod) eth0 198.18.100.2/24
#                                  02:00:00:00:01:01                    02:00:00:00:01:02, default via .1
#
# E2E_VLAN=ID makes the LAN a VLAN on a vlan_filtering bridge, as a switch with a trunk to the node does: the
# hosts' ports carry VLAN ID untagged (access ports), the node's port carries it tagged, and the node's
# provisioning interface is the 802.1Q sub-interface prov0.ID on its veth prov0 (kernels without 802.1Q
# devices or bridge VLAN filtering skip the suite).
#
# E2E_POD_MTU=N gives the pod's veth (both ends) MTU N, as a CNI over an overlay does (VXLAN: 1450).
#
# E2E_LAN_SHAPE=devenv puts the bridge in the node's namespace instead, as metal3-dev-env does (the node's
# provisioning interface `ironicendpoint` is a veth whose peer `ironic-peer` is a port of the
# `provisioning` bridge beside it). Either way the NIC is a veth whose peer is a bridge port with no XDP
# program: XDP_TX from it is lost, and the peers' frames carry partial checksums.
#
# The node has no route to 198.18.0.0/24: only the datapath connects the pod and the LAN.

# Debian's tools, which scripts/setup.sh installs: a pyenv shim or virtualenv first in a user's PATH would give
# python3 without Debian's modules, and a shim costs about fifteen processes per call (measured: 60% of the
# processes an e2e suite started).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
E2E_REPO=$(cd "$E2E_DIR/../.." && pwd)

E2E_HOST=e2e-host
E2E_LAN=e2e-lan
E2E_LAN_SHAPE=${E2E_LAN_SHAPE:-switch} # switch: the bridge in its own namespace; devenv: in the node's
E2E_BRIDGE=br-prov
E2E_NODE=e2e-node
E2E_POD=e2e-pod
E2E_HOST_IP=198.18.0.10
E2E_HOST_MAC=02:00:00:00:00:10
# Other hosts on the LAN: namespace, address, MAC. They only live there, as the rest of a rack does.
E2E_BYSTANDERS=("e2e-host2 198.18.0.6 02:00:00:00:00:06" "e2e-host3 198.18.0.7 02:00:00:00:00:07")
# E2E_VLAN=ID: the provisioning network is VLAN ID on a vlan_filtering bridge; the node's veth (prov0)
# is a trunk port and the loader's interface is the 802.1Q sub-interface prov0.ID.
E2E_NIC_PARENT=prov0
E2E_NIC=prov0${E2E_VLAN:+.$E2E_VLAN}
E2E_NIC_MAC=02:00:00:00:00:01
E2E_SERVICE_IP=198.18.0.2
E2E_SUBNET=198.18.0.0/24
E2E_POD_IP=198.18.100.2
E2E_POD_MAC=02:00:00:00:01:02
E2E_POD_GW=198.18.100.1
E2E_VETH=vethpod
E2E_VETH_MAC=02:00:00:00:01:01
E2E_PIN_ROOT=/sys/fs/bpf/bpfnet
E2E_PIN_DIR=$E2E_PIN_ROOT/${E2E_NIC//./:} # bpffs refuses dots: maps/pin_layout.hpp
# Debian's python (bpftool JSON, probes): not a virtualenv's that may come first in PATH.
SYSTEM_PYTHON=${SYSTEM_PYTHON:-/usr/bin/python3}

E2E_PASSED=0
E2E_FAILED=0
E2E_SKIPPED=0
E2E_PIDS=()       # background processes this test started (servers, clients, loaders)
E2E_NAMESPACES=() # network namespaces a test created beyond the three of the standard topology
E2E_CGROUPS=()    # cgroups a test made (below its own), removed at exit
E2E_TMP=""
LOADER_PID=""
LOADER_LOG=""
# The loader's warnings (level=warn) a start or a stop by SIGTERM may log: only those a case provokes on
# purpose (expect_warnings); any other fails the start, or the suite at its end (E2E_STOP_WARNINGS).
E2E_EXPECTED_WARNINGS=()
E2E_STOP_WARNINGS=""
E2E_REASON=""     # why the last check failed; set by a case before it returns 1

# ---------------------------------------------------------------------------------------------------
# Logging

# The clock without a process (bash's EPOCHREALTIME): the logs and the polling loops read it thousands of
# times per suite, and every fork costs this machine kind more than the read itself.
now_us() { printf -v "$1" '%s' "${EPOCHREALTIME/[.,]/}"; }
# seconds_to VAR MICROSECONDS: VAR = the duration in seconds with two decimals.
seconds_to() { printf -v "$1" '%d.%02d' $(($2 / 1000000)) $(($2 % 1000000 / 10000)); }

now_us E2E_T0_US

# elapsed_to VAR: VAR = seconds since the script started, two decimals.
elapsed_to() {
    local now
    now_us now
    seconds_to "$1" $((now - E2E_T0_US))
}
elapsed() {
    local text
    elapsed_to text
    printf '%s' "$text"
}

# Diagnostics are TAP comments ('# ...'), so only the ok/not ok lines and the tally stand out.
log() {
    local text
    elapsed_to text
    printf '# [%6ss] %s\n' "$text" "$*"
}

die() {
    printf 'e2e: fatal: %s\n' "$*" >&2
    exit 2
}

# ---------------------------------------------------------------------------------------------------
# Script start

# loader_argument "$@": LOADER is the bpfnet-loader a test script was given as its first argument. After it,
# `--case KEY` (repeatable, or KEY,KEY) runs only the cases named, with what their entries in the suite's case
# list need (below); a suite given an unknown KEY lists its cases and exits 2. `--list` (alone, or in place of
# the loader) prints the case list and exits 0, without root and before any set-up. Anything else is a usage
# error (exit 2).
E2E_CASES=""
# bpfnetctl_argument: BPFNETCTL, or the bpfnetctl of the loader's build tree (after loader_argument); exits 2
# when there is none.
bpfnetctl_argument() {
    BPFNETCTL=$(realpath "${BPFNETCTL:-$(dirname "$LOADER")/../cli/bpfnetctl}" 2>/dev/null) || true
    if [ ! -x "$BPFNETCTL" ]; then
        echo "e2e: no bpfnetctl at ${BPFNETCTL:-?} (build it, or set BPFNETCTL)" >&2
        exit 2
    fi
    export BPFNETCTL
}

loader_argument() {
    if [ "${1:-}" = --list ] || [ "${2:-}" = --list ]; then
        case_list_check || exit 2
        case_list_print
        exit 0
    fi
    LOADER=$(realpath "${1:-}" 2>/dev/null) || true
    if [ -z "${1:-}" ] || [ ! -x "$LOADER" ]; then
        echo "usage: $0 PATH/TO/bpfnet-loader [--case KEY]... | $0 --list" >&2
        exit 2
    fi
    shift
    while [ $# -gt 0 ]; do
        case $1 in
        --case=?*) E2E_CASES+=",${1#--case=}" ;;
        --case)
            [ -n "${2:-}" ] || { echo "$0: --case needs a case name" >&2; exit 2; }
            E2E_CASES+=",$2"
            shift
            ;;
        *)
            echo "$0: unknown argument '$1' (usage: $0 PATH/TO/bpfnet-loader [--case KEY]... | $0 --list)" >&2
            exit 2
            ;;
        esac
        shift
    done
    E2E_CASES=${E2E_CASES#,}
    case_list_check || exit 2
    check_case_names
}

# check_case_names: every --case names a case of the suite, checked before any set-up.
check_case_names() {
    local wanted known
    known=" $(case_keys | tr '\n' ' ')"
    for wanted in ${E2E_CASES//,/ }; do
        if [[ $known != *" $wanted "* ]]; then
            echo "$0: no case named '$wanted'; its cases:$known" >&2
            exit 2
        fi
    done
}

# e2e_start [--needs-dhcp] LOADER [ARGS...]: how every suite starts. Takes the loader argument, skips the
# suite (exit 77) when --needs-dhcp is given and a DHCP client or server is missing, and re-executes the
# script in its own sandbox (sandbox_reexec). Afterwards CONFIG and LOGS name the suite's config file and
# log directory. A suite with more to check before the sandbox calls the three steps itself.
e2e_start() {
    local needs_dhcp=""
    if [ "${1:-}" = --needs-dhcp ]; then
        needs_dhcp=1
        shift
    fi
    loader_argument "$@"
    if [ -n "$needs_dhcp" ] && [ "$(id -u)" = 0 ] && ! dhcp_available; then
        echo "e2e: $E2E_REASON; skipped" >&2
        exit 77
    fi
    sandbox_reexec "$@"
    # shellcheck disable=SC2034 # read by the suites
    CONFIG=$E2E_TMP/conf/bpfnet.yaml
    # shellcheck disable=SC2034
    LOGS=$E2E_TMP/logs
}

# require_tools TOOL...: inside the sandbox, every tool the script uses is installed.
require_tools() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null || die "$tool is not installed (scripts/setup.sh)"
    done
}

# ---------------------------------------------------------------------------------------------------
# Sandbox

# Re-executes the calling script inside a fresh sandbox (unless already inside one) and, inside,
# prepares the private mounts and the cleanup trap.
sandbox_reexec() {
    if [ "${BPFNET_E2E_SANDBOX:-}" != 1 ]; then
        if [ "$(id -u)" != 0 ]; then
            echo "e2e: needs root (network namespaces, BPF); skipped" >&2
            exit 77
        fi
        local script
        script=$(realpath "$0")
        # --kill-child: if unshare is terminated (ctest timeout, ^C), the script inside gets SIGTERM and
        # cleans up; when it exits, the pid namespace takes every process of the test with it, and the
        # network and mount namespaces go with their last process.
        exec env BPFNET_E2E_SANDBOX=1 unshare --net --mount --pid --fork --kill-child=SIGTERM --mount-proc \
            bash "$script" "$@"
    fi
    sandbox_check
    sandbox_setup
}

# Refuses to go on unless this really is a fresh sandbox: pid 1 of a new pid namespace, whose network
# namespace holds nothing but a down lo. Protects the machine if the environment variable was set by hand.
sandbox_check() {
    if [ "$$" != 1 ]; then
        die "not pid 1 of a private pid namespace; run the script directly, it sandboxes itself"
    fi
    local links
    links=$(ip -o link show | awk -F': ' '{print $2}' | tr '\n' ' ')
    if [ "$links" != "lo " ] || [ -n "$(ip -o link show up)" ]; then
        die "network namespace is not fresh (links: $links); refusing to run"
    fi
}

sandbox_setup() {
    mount --make-rprivate / || die "mount --make-rprivate /"
    mkdir -p /run/netns
    mount -t tmpfs -o mode=0755 e2e-netns /run/netns || die "mount tmpfs on /run/netns"
    mkdir -p /sys/fs/bpf 2>/dev/null || true
    mount -t bpf bpf /sys/fs/bpf || die "mount bpffs on /sys/fs/bpf"
    # The loaders' control sockets (/run/bpfnet/<interface>.sock): private, like the pins.
    mkdir -p /run/bpfnet
    mount -t tmpfs -o mode=0700 e2e-control /run/bpfnet || die "mount tmpfs on /run/bpfnet"
    E2E_TMP=$(mktemp -d /tmp/bpfnet-e2e.XXXXXX) || die "mktemp"
    mkdir -p "$E2E_TMP/conf" "$E2E_TMP/logs"
    trap e2e_cleanup EXIT
    trap 'log "interrupted"; exit 130' INT TERM HUP
    ip link set lo up
    log "sandbox ready (tmp $E2E_TMP)"
}

# Stops what the test started (by pid), removes the namespaces and the private mounts. Runs on every
# exit; the pid namespace is the backstop if it cannot run.
e2e_cleanup() {
    local rc=$?
    set +e
    trap - EXIT INT TERM HUP
    local pid
    for pid in "${E2E_PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null
    done
    for pid in "${E2E_PIDS[@]}"; do
        wait_for 2 pid_gone "$pid" || kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    local ns cgroup
    for ns in "$E2E_POD" "$E2E_HOST" "$E2E_NODE" "$E2E_LAN" "${E2E_NAMESPACES[@]}"; do
        ip netns del "$ns" 2>/dev/null
    done
    # Cgroups a case made (under the test's own cgroup of the machine's hierarchy), once their processes ended.
    for cgroup in "${E2E_CGROUPS[@]}"; do
        rmdir "$cgroup" 2>/dev/null
    done
    umount /sys/fs/bpf 2>/dev/null
    umount /run/bpfnet 2>/dev/null
    umount /run/netns 2>/dev/null
    if [ -n "$E2E_TMP" ] && [ -d "$E2E_TMP" ]; then
        if [ -n "${E2E_KEEP_TMP:-}" ]; then
            log "kept $E2E_TMP"
        else
            rm -rf "$E2E_TMP"
        fi
    fi
    exit "$rc"
}

# ---------------------------------------------------------------------------------------------------
# Polling and processes

# wait_for [--every S] SECONDS CMD...: runs CMD every 0.1 s (every S seconds, scaled as SECONDS: for a CMD
# that is costly itself) until it succeeds (0) or SECONDS pass (1). SECONDS is multiplied by E2E_TIME_SCALE
# (default 1): the kernel matrix runs the suites under emulation (TCG), where starting a server takes several
# times longer. Only these waits scale; no check of the datapath does.
wait_for() {
    local every=0.1
    if [ "$1" = --every ]; then
        every=$(scaled_seconds "$2")
        shift 2
    fi
    local timeout=$1 window now deadline
    shift
    if [[ $timeout =~ ^[0-9]+$ && ${E2E_TIME_SCALE:-1} == 1 ]]; then
        window=$((timeout * 1000000))
    else
        window=$(awk -v t="$timeout" -v k="${E2E_TIME_SCALE:-1}" 'BEGIN { printf "%d", t * k * 1000000 }')
    fi
    now_us now
    deadline=$((now + window))
    while :; do
        if "$@"; then
            return 0
        fi
        now_us now
        if ((now >= deadline)); then
            return 1
        fi
        sleep "$every"
    done
}

# bg_in_ns NS LOGFILE CMD...: starts CMD in network namespace NS in the background; its pid is
# remembered for cleanup and left in BG_PID.
BG_PID=""
bg_in_ns() {
    local ns=$1 logfile=$2
    shift 2
    : >"$logfile" # emptied before the job starts (see loader_start)
    ip netns exec "$ns" "$@" >>"$logfile" 2>&1 &
    BG_PID=$!
    E2E_PIDS+=("$BG_PID")
}

# Stops one background process by pid and reaps it; its exit status is left in STOPPED_RC.
export STOPPED_RC=""
stop_pid() {
    local pid=$1 sig=${2:-TERM}
    kill -"$sig" "$pid" 2>/dev/null
    wait_for 5 pid_gone "$pid" || kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    STOPPED_RC=$?
    local kept=() p
    for p in "${E2E_PIDS[@]}"; do
        [ "$p" = "$pid" ] || kept+=("$p")
    done
    E2E_PIDS=("${kept[@]}")
}

# A child that exited but was not reaped yet still answers kill -0; its /proc stat shows it as a zombie (the
# state follows the command name's closing parenthesis). Read without a process: loops poll it.
pid_gone() {
    local stat
    { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
    stat=${stat##*) }
    [[ $stat == Z* ]]
}

pid_alive() { ! pid_gone "$1"; }

# The TCP/UDP checksums of frames the datapath rewrote. A receiver behind a veth trusts a CHECKSUM_PARTIAL
# skb's checksum without looking, so no transfer between namespaces notices a wrong one, while a NIC, a tap
# or a host's firmware completes it wrong and drops the frame: capture.py judges every frame as the kernel
# hands it over. checksum_watch_start NS... records each namespace's eth0; checksum_watch_check MIN FAILED
# NS... (the same namespaces) stops the recordings and, unless FAILED names transfers that failed meanwhile,
# checks what each namespace received (at least MIN TCP/UDP frames each), leaving E2E_REASON or
# CHECKSUM_VERDICT ("NS: ok=N partial=M none=K; ...").
CHECKSUM_WATCH_PIDS=()
checksum_watch_file() { echo "$LOGS/checksums-$1.jsonl"; }
checksum_watch_listening() { grep -q listening "$(checksum_watch_file "$1").out" 2>/dev/null; }

checksum_watch_start() {
    local ns file
    CHECKSUM_WATCH_PIDS=()
    for ns in "$@"; do
        file=$(checksum_watch_file "$ns")
        bg_in_ns "$ns" "$file.out" python3 "$E2E_DIR/capture.py" record eth0 "$file"
        CHECKSUM_WATCH_PIDS+=("$BG_PID")
    done
    for ns in "$@"; do
        if ! wait_for 5 checksum_watch_listening "$ns"; then
            E2E_REASON="capture in $ns did not start: $(head -c 300 "$(checksum_watch_file "$ns").out")"
            checksum_watch_stop
            return 1
        fi
    done
}

checksum_watch_stop() {
    local pid
    sleep 0.3 # the last frames into the recordings
    for pid in "${CHECKSUM_WATCH_PIDS[@]}"; do
        stop_pid "$pid"
    done
    CHECKSUM_WATCH_PIDS=()
}

checksum_watch_check() {
    local min=$1 failed=$2 ns verdict
    shift 2
    checksum_watch_stop
    if [ -n "$failed" ]; then
        E2E_REASON="transfers failed:$failed"
        return 1
    fi
    CHECKSUM_VERDICT=""
    for ns in "$@"; do
        if ! verdict=$(python3 "$E2E_DIR/capture.py" checksums "$(checksum_watch_file "$ns")" --min "$min"); then
            E2E_REASON="received in $ns: $verdict"
            return 1
        fi
        CHECKSUM_VERDICT+="${CHECKSUM_VERDICT:+; }$ns: $verdict"
    done
}

# ---------------------------------------------------------------------------------------------------
# Topology

# An XDP_PASS program, the "other XDP program" of the coexistence suite (another tool's XDP program on the
# provisioning NIC itself): from XDP_PASS_OBJ, else the build tree, else compiled here.
xdp_pass_object() {
    local obj=${XDP_PASS_OBJ:-$E2E_REPO/build/tests/e2e/xdp_pass.bpf.o}
    if [ -f "$obj" ]; then
        echo "$obj"
        return 0
    fi
    if [ -n "${XDP_PASS_OBJ:-}" ]; then
        echo "e2e: XDP_PASS_OBJ=$XDP_PASS_OBJ does not exist" >&2
        return 1
    fi
    local clang
    clang=$(command -v clang-14 || command -v clang-16 || command -v clang) || {
        echo "e2e: $obj missing and no clang to build it" >&2
        return 1
    }
    obj=$E2E_TMP/xdp_pass.bpf.o
    "$clang" -O2 -g -target bpf -I"/usr/include/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)" \
        -c "$E2E_DIR/xdp_pass.bpf.c" -o "$obj" >&2 || return 1
    echo "$obj"
}

# lan_bridge_create NS: the LAN's bridge in namespace NS, as a distribution creates one (STP off, defaults);
# with E2E_VLAN, VLAN-aware.
lan_bridge_create() {
    if [ -n "${E2E_VLAN:-}" ]; then
        ip -n "$1" link add "$E2E_BRIDGE" type bridge vlan_filtering 1 2>/dev/null || skip_suite "no bridge VLAN filtering in this kernel"
    else
        ip -n "$1" link add "$E2E_BRIDGE" type bridge || die "create bridge $E2E_BRIDGE in $1"
    fi
    ip -n "$1" link set "$E2E_BRIDGE" up
}

# lan_port_vlan NS PORT tagged|access: with E2E_VLAN, PORT of the bridge in NS carries only that VLAN: tagged
# (a trunk to the node) or untagged (a host's access port).
lan_port_vlan() {
    [ -n "${E2E_VLAN:-}" ] || return 0
    local ns=$1 port=$2 how=$3
    ip netns exec "$ns" bridge vlan del dev "$port" vid 1 || die "bridge vlan del $port vid 1"
    if [ "$how" = tagged ]; then
        ip netns exec "$ns" bridge vlan add dev "$port" vid "$E2E_VLAN" || die "bridge vlan add $port (tagged)"
    else
        ip netns exec "$ns" bridge vlan add dev "$port" vid "$E2E_VLAN" pvid untagged || die "bridge vlan add $port (access)"
    fi
}

# skip_suite REASON: the kernel lacks what this variant needs: the suite is skipped (exit 77), not failed.
skip_suite() {
    echo "e2e: $1; skipped" >&2
    exit 77
}

# skip_unless CHECK...: skips the suite (skip_suite, with the check's E2E_REASON) unless every CHECK (a
# function such as dhcp_available or ironic_available) succeeds.
skip_unless() {
    local check
    for check in "$@"; do
        "$check" || skip_suite "$E2E_REASON"
    done
}

# lan_host_attach NS IP MAC BRIDGE_NS: gives host namespace NS an eth0 that is a veth into the LAN bridge
# (in BRIDGE_NS, port lan-NAME), with default offloads.
lan_host_attach() {
    local ns=$1 ip=$2 mac=$3 bridge_ns=$4
    ip -n "$bridge_ns" link add "lan-${ns#e2e-}" type veth peer name eth0 address "$mac" netns "$ns" ||
        die "LAN veth for $ns"
    ip -n "$bridge_ns" link set "lan-${ns#e2e-}" master "$E2E_BRIDGE" up
    lan_port_vlan "$bridge_ns" "lan-${ns#e2e-}" access
    ip -n "$ns" addr add "$ip/24" dev eth0
    ip -n "$ns" link set eth0 up
}

# The namespace that holds the LAN bridge in this shape.
lan_bridge_ns() {
    if [ "$E2E_LAN_SHAPE" = devenv ]; then echo "$E2E_NODE"; else echo "$E2E_LAN"; fi
}

# E2E_CNI: how the pod is wired into the node, as the CNIs users run wire theirs (docs/kubernetes.md, "CNIs and
# kube-proxy"). Every one gives the pod a veth pair; they differ in what sits between its host side and the
# node's routing:
#   routed  the veth's host side holds the pod network's gateway address: the route to the pod names the veth
#           (Calico, kube-router's routes)
#   bridge  the veth is a port of cni0, which holds the gateway address: the route names cni0 (flannel, the
#           CNI bridge plugin, kube-router's bridge); beside it flannel's VXLAN device flannel.1, which carries
#           the other nodes' pod subnets (flannel's default backend: the overlay never carries a local pod's)
#   cilium  the route to the pod goes through cilium_host (a veth whose peer, cilium_net, stays in the node),
#           the pod's veth holds no address, and a CNI program (cni_standin, E2E_CNI_STANDIN: pass, drop or
#           redirect) is on the pod's veth and on the NIC before the loader starts, attached as Cilium
#           attaches its own (per-endpoint routes off, the default). IPv4 only: Cilium's programs answer the
#           pod's neighbour solicitations for its gateway, which this stand-in does not.
#   ovs     OVN-Kubernetes' node: the veth is a port of the Open vSwitch bridge br-int (the kernel datapath,
#           its daemons run by the test in the node's namespace), and the node reaches its pods through the
#           bridge's internal port ovn-k8s-mp0, which holds the gateway address: the route names ovn-k8s-mp0.
#           OVN's logical router is not run: the bridge switches by MAC learning (OVS's NORMAL action). Needs
#           the kernel's openvswitch module (the kernel matrix's guests have it; the host kernel may not).
E2E_CNI=${E2E_CNI:-routed}
E2E_CNI_STANDIN=${E2E_CNI_STANDIN:-drop}
# E2E_POD_DELIVERY: the backend's `delivery` in the configs the suites write: auto (the default: into the pod's
# veth) or route (through the node's routing, docs/config.md).
E2E_POD_DELIVERY=${E2E_POD_DELIVERY:-auto}

# The device that holds the pod network's gateway addresses in this shape.
pod_gateway_dev() {
    case $E2E_CNI in
    bridge) echo cni0 ;;
    cilium) echo cilium_host ;;
    ovs) echo ovn-k8s-mp0 ;;
    *) echo "$E2E_VETH" ;;
    esac
}

# cni_standin_attach DEV MODE: the CNI's program on DEV's ingress in the node (tests/e2e/cni_standin.cpp).
cni_standin_attach() {
    local pin=/sys/fs/bpf/cni-standin/$1
    [ -x "${CNI_STANDIN:-}" ] || { E2E_REASON="CNI_STANDIN is not set to the cni_standin program"; return 1; }
    mkdir -p /sys/fs/bpf/cni-standin
    rm -f "${pin}_link" "${pin}_seen"
    # nsenter, not ip netns exec: that one mounts its own /sys, without the sandbox's bpffs.
    nsenter --net="/run/netns/$E2E_NODE" "$CNI_STANDIN" attach "$1" "$2" "$pin" >/dev/null ||
        { E2E_REASON="cannot attach the CNI's stand-in program to $1"; return 1; }
}

# cni_standin_seen DEV: the frames the CNI's program on DEV has seen.
cni_standin_seen() { "$CNI_STANDIN" seen "/sys/fs/bpf/cni-standin/$1"; }

# cni_available: what the E2E_CNI shape needs of the machine (skip_unless): for ovs, Open vSwitch's programs and
# the kernel's datapath (its generic netlink family, which a kernel with the module loads on this request).
cni_available() {
    [ "$E2E_CNI" = ovs ] || return 0
    command -v ovs-vswitchd >/dev/null || { E2E_REASON="Open vSwitch is not installed (openvswitch-switch)"; return 1; }
    # Listed, not asked for by name: a request by name would load the module into a machine's kernel.
    genl ctrl list 2>/dev/null | grep -qw 'Name: ovs_datapath' ||
        { E2E_REASON="this kernel has no Open vSwitch datapath (openvswitch loaded): the kernel matrix's guests run E2E_CNI=ovs"; return 1; }
}

# ovs_vsctl ARGS...: ovs-vsctl against the test's own database (ovs_start).
ovs_vsctl() { ip netns exec "$E2E_NODE" ovs-vsctl --db="unix:$E2E_TMP/ovs/db.sock" --timeout=30 "$@"; }

# ovs_start: Open vSwitch's two daemons in the node's namespace, on a database in the test's directory, with
# their sockets and logs there too (OVS_RUNDIR and the like: nothing in the machine's /run/openvswitch); the
# datapath they make, ovs-system, is the namespace's own; they end with the sandbox's pid namespace.
ovs_start() {
    local dir=$E2E_TMP/ovs
    mkdir -p "$dir"
    export OVS_RUNDIR=$dir OVS_DBDIR=$dir OVS_LOGDIR=$dir OVS_SYSCONFDIR=$dir
    ovsdb-tool create "$dir/conf.db" /usr/share/openvswitch/vswitch.ovsschema >"$dir/ovsdb-tool.log" 2>&1 ||
        { E2E_REASON="ovsdb-tool create: $(tail -n1 "$dir/ovsdb-tool.log")"; return 1; }
    bg_in_ns "$E2E_NODE" "$dir/ovsdb-server.out" ovsdb-server "$dir/conf.db" --remote="punix:$dir/db.sock" \
        --unixctl="$dir/ovsdb-server.ctl" --pidfile="$dir/ovsdb-server.pid" --log-file="$dir/ovsdb-server.log"
    wait_for 10 test -S "$dir/db.sock" || { E2E_REASON="ovsdb-server did not start: $(tail -n1 "$dir/ovsdb-server.out")"; return 1; }
    ovs_vsctl --no-wait init || { E2E_REASON="ovs-vsctl init failed"; return 1; }
    bg_in_ns "$E2E_NODE" "$dir/ovs-vswitchd.out" ovs-vswitchd "unix:$dir/db.sock" --unixctl="$dir/ovs-vswitchd.ctl" \
        --pidfile="$dir/ovs-vswitchd.pid" --log-file="$dir/ovs-vswitchd.log"
    wait_for 10 test -S "$dir/ovs-vswitchd.ctl" || { E2E_REASON="ovs-vswitchd did not start: $(tail -n1 "$dir/ovs-vswitchd.out")"; return 1; }
}

# flannel_vxlan_create: flannel's VXLAN backend on the node, as flanneld makes it: flannel.1 (VNI 1, UDP 8472, no
# learning) holding the node's pod subnet's .0 as a /32, and a route per other node to its pod subnet, onlink
# via that node's flannel.1 address (one other node here, 198.18.120.0/24). Nothing is sent through it: it is
# there because a flannel node has it, and the route to the local pod must still name cni0.
flannel_vxlan_create() {
    ip -n "$E2E_NODE" link add flannel.1 type vxlan id 1 dstport 8472 nolearning ||
        { E2E_REASON="cannot make flannel.1 (no VXLAN in this kernel?)"; return 1; }
    ip -n "$E2E_NODE" addr add "${E2E_POD_IP%.*}.0/32" dev flannel.1 &&
        ip -n "$E2E_NODE" link set flannel.1 up &&
        ip -n "$E2E_NODE" route add 198.18.120.0/24 via 198.18.120.0 dev flannel.1 onlink ||
        { E2E_REASON="cannot set up flannel.1"; return 1; }
}

# The node's side of the pod network in the bridge, cilium and ovs shapes, made once (a pod made again joins it).
pod_network_create() {
    case $E2E_CNI in
    routed) ;;
    bridge)
        ip -n "$E2E_NODE" link show cni0 >/dev/null 2>&1 && return 0
        ip -n "$E2E_NODE" link add cni0 type bridge || return 1
        ip -n "$E2E_NODE" addr add "$E2E_POD_GW/24" dev cni0 || return 1
        ip -n "$E2E_NODE" link set cni0 up
        # The bridge plugin turns on forwarding on a node whose bridge is the pods' gateway (isGateway).
        ip netns exec "$E2E_NODE" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 || return 1
        flannel_vxlan_create
        ;;
    cilium)
        ip -n "$E2E_NODE" link show cilium_host >/dev/null 2>&1 && return 0
        ip -n "$E2E_NODE" link add cilium_host type veth peer name cilium_net || return 1
        ip -n "$E2E_NODE" link set cilium_net up
        ip -n "$E2E_NODE" link set cilium_host up
        ip -n "$E2E_NODE" addr add "$E2E_POD_GW/32" dev cilium_host || return 1
        # Cilium's route to its pod CIDR: via its own address on cilium_host.
        ip -n "$E2E_NODE" route add "${E2E_POD_IP%.*}.0/24" via "$E2E_POD_GW" dev cilium_host src "$E2E_POD_GW" ||
            return 1
        cni_standin_attach "$E2E_NIC" pass
        ;;
    ovs)
        ip -n "$E2E_NODE" link show ovn-k8s-mp0 >/dev/null 2>&1 && return 0
        ovs_start || return 1
        ovs_vsctl add-br br-int -- add-port br-int ovn-k8s-mp0 -- set interface ovn-k8s-mp0 type=internal ||
            { E2E_REASON="ovs-vsctl add-br br-int failed"; return 1; }
        wait_for 10 ip -n "$E2E_NODE" link show ovn-k8s-mp0 >/dev/null 2>&1 || {
            E2E_REASON="Open vSwitch made no ovn-k8s-mp0: $(grep -m1 -iE 'err|fail' "$E2E_TMP/ovs/ovs-vswitchd.log")"
            return 1
        }
        ip -n "$E2E_NODE" addr add "$E2E_POD_GW/24" dev ovn-k8s-mp0 &&
            ip -n "$E2E_NODE" link set ovn-k8s-mp0 up || { E2E_REASON="cannot set up ovn-k8s-mp0"; return 1; }
        ;;
    *)
        E2E_REASON="E2E_CNI=$E2E_CNI: want routed, bridge, cilium or ovs"
        return 1
        ;;
    esac
}

# pod_link_create: the pod's veth, wired as E2E_CNI says, with the pod's address and default route (a pod
# recreated by its runtime gets a veth like it: the lifecycle suite deletes and makes it again). A pod network
# with a smaller MTU than the LAN's (E2E_POD_MTU), as a CNI sets up over an overlay (VXLAN: 1450), on both ends.
pod_link_create() {
    pod_network_create || return 1
    ip -n "$E2E_NODE" link add "$E2E_VETH" address "$E2E_VETH_MAC" type veth \
        peer name eth0 address "$E2E_POD_MAC" netns "$E2E_POD" || return 1
    case $E2E_CNI in
    routed) ip -n "$E2E_NODE" addr add "$E2E_POD_GW/24" dev "$E2E_VETH" || return 1 ;;
    bridge) ip -n "$E2E_NODE" link set "$E2E_VETH" master cni0 || return 1 ;;
    # A pod made again has a new veth of the same name: its old port goes first, as the CNI's delete does.
    ovs) ovs_vsctl --if-exists del-port br-int "$E2E_VETH" -- add-port br-int "$E2E_VETH" || return 1 ;;
    esac
    ip -n "$E2E_NODE" link set "$E2E_VETH" up || return 1
    if [ "$E2E_CNI" = cilium ]; then
        ip -n "$E2E_POD" addr add "$E2E_POD_IP/32" dev eth0 || return 1
        ip -n "$E2E_POD" link set eth0 up || return 1
        ip -n "$E2E_POD" route add "$E2E_POD_GW" dev eth0 scope link || return 1
        cni_standin_attach "$E2E_VETH" "$E2E_CNI_STANDIN" || return 1
    else
        ip -n "$E2E_POD" addr add "$E2E_POD_IP/24" dev eth0 || return 1
        ip -n "$E2E_POD" link set eth0 up || return 1
    fi
    ip -n "$E2E_POD" route add default via "$E2E_POD_GW" || return 1
    if [ -n "${E2E_POD_MTU:-}" ]; then
        ip -n "$E2E_NODE" link set "$E2E_VETH" mtu "$E2E_POD_MTU" || return 1
        ip -n "$E2E_POD" link set eth0 mtu "$E2E_POD_MTU" || return 1
    fi
}

topology_create() {
    case $E2E_LAN_SHAPE in
    switch | devenv) ;;
    *) die "E2E_LAN_SHAPE=$E2E_LAN_SHAPE: want switch or devenv" ;;
    esac
    local ns bridge_ns entry name ip mac
    bridge_ns=$(lan_bridge_ns)
    for ns in "$E2E_HOST" "$E2E_NODE" "$E2E_POD"; do
        ip netns add "$ns" || die "ip netns add $ns"
        ip -n "$ns" link set lo up
    done
    if [ "$E2E_LAN_SHAPE" = switch ]; then
        ip netns add "$E2E_LAN" || die "ip netns add $E2E_LAN"
        ip -n "$E2E_LAN" link set lo up
    fi
    lan_bridge_create "$bridge_ns"

    # The provisioning NIC: a veth whose peer is a port of the LAN bridge (with E2E_VLAN, the veth is a trunk
    # and the NIC its 802.1Q sub-interface).
    ip -n "$E2E_NODE" link add "$E2E_NIC_PARENT" address "$E2E_NIC_MAC" type veth peer name lan-node netns "$bridge_ns" ||
        die "create the node's LAN veth"
    ip -n "$bridge_ns" link set lan-node master "$E2E_BRIDGE" up
    lan_port_vlan "$bridge_ns" lan-node tagged
    ip -n "$E2E_NODE" link set "$E2E_NIC_PARENT" up
    if [ -n "${E2E_VLAN:-}" ]; then
        ip -n "$E2E_NODE" link add link "$E2E_NIC_PARENT" name "$E2E_NIC" address "$E2E_NIC_MAC" type vlan id "$E2E_VLAN" \
            2>/dev/null || skip_suite "no 802.1Q VLAN devices in this kernel"
        ip -n "$E2E_NODE" link set "$E2E_NIC" up
    fi

    lan_host_attach "$E2E_HOST" "$E2E_HOST_IP" "$E2E_HOST_MAC" "$bridge_ns"
    for entry in "${E2E_BYSTANDERS[@]}"; do
        read -r name ip mac <<<"$entry"
        ip netns add "$name" || die "ip netns add $name"
        E2E_NAMESPACES+=("$name")
        ip -n "$name" link set lo up
        lan_host_attach "$name" "$ip" "$mac" "$bridge_ns"
    done

    pod_link_create || die "create the pod's veth${E2E_REASON:+: $E2E_REASON}"

    if ip -n "$E2E_NODE" route get "$E2E_HOST_IP" >/dev/null 2>&1; then
        die "the node has a route to $E2E_HOST_IP; only the datapath may connect pod and LAN"
    fi
    log "topology up ($E2E_LAN_SHAPE${E2E_VLAN:+, VLAN $E2E_VLAN on $E2E_NIC}${E2E_POD_MTU:+, pod MTU $E2E_POD_MTU}): host $E2E_HOST_IP and ${#E2E_BYSTANDERS[@]} more on $E2E_BRIDGE <-> node $E2E_NIC <-> pod $E2E_POD_IP"
}

# ---------------------------------------------------------------------------------------------------
# The loader

# write_config [--xdp-mode MODE] [--tc-attach K] [--redirect-peer R] [--port NAME:PROTOCOL:PORT[:TARGETPORT[:KIND]]]...
# FILE [EXTRA_YAML]: the standard configuration of docs/config.md for this topology (tcp 80 -> pod 8080,
# tcp 5201, the pod as backend), with the loader's defaults for what is not given (xdpMode auto, as a new
# user's file has it), each --port appended to the port list (an empty TARGETPORT means the same port; KIND
# is a port kind: plain, tftp, dhcp or dhcpv6), EXTRA_YAML (top-level keys) at the end.
write_config() {
    local extra_ports="" name proto port target kind kernel_choices=""
    while [ $# -gt 0 ]; do
        case $1 in
        --xdp-mode)
            kernel_choices+="xdpMode: $2"$'\n'
            shift 2
            ;;
        --tc-attach)
            kernel_choices+="tcAttach: $2"$'\n'
            shift 2
            ;;
        --redirect-peer)
            kernel_choices+="redirectPeer: $2"$'\n'
            shift 2
            ;;
        --port)
            IFS=: read -r name proto port target kind <<<"$2"
            extra_ports+="  - name: $name"$'\n'"    protocol: $proto"$'\n'"    port: $port"$'\n'
            [ -n "$target" ] && extra_ports+="    targetPort: $target"$'\n'
            [ -n "$kind" ] && extra_ports+="    kind: $kind"$'\n'
            shift 2
            ;;
        *) break ;;
        esac
    done
    local file=$1 extra=${2:-}
    cat >"$file" <<EOF
interface: $E2E_NIC
serviceIP: $E2E_SERVICE_IP
subnet: $E2E_SUBNET
pinRoot: $E2E_PIN_ROOT
${kernel_choices}ports:
  - name: http
    protocol: tcp
    port: 80
    targetPort: 8080
  - name: iperf
    protocol: tcp
    port: 5201
${extra_ports}backend:
  ip: $E2E_POD_IP
  veth: auto
  delivery: $E2E_POD_DELIVERY
$extra
EOF
}

# tc_hook_of DEV: bpfnet's TC program on DEV's ingress in the node namespace, read without bpfnetctl: through
# bpftool from our tcx link's pin when there is one, else from tc's filter list. Sets TC_PROG_ID (0: none)
# and TC_ATTACH (tcx, clsact or none).
TC_PROG_ID=0
TC_ATTACH=none
# shellcheck disable=SC2034 # TC_ATTACH is read by the suites (test_cli.sh)
tc_hook_of() {
    local ifindex pin
    ifindex=$(ip -n "$E2E_NODE" -o link show "$1" | cut -d: -f1)
    pin=$E2E_PIN_DIR/tcx_ingress_$ifindex
    if [ -e "$pin" ]; then
        TC_ATTACH=tcx
        TC_PROG_ID=$(bpftool -j link show pinned "$pin" | "$SYSTEM_PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["prog_id"])')
        return
    fi
    TC_PROG_ID=$(ip netns exec "$E2E_NODE" tc filter show dev "$1" ingress 2>/dev/null | grep -oE 'id [0-9]+' | head -n1 | awk '{ print $2 }')
    TC_ATTACH=clsact
    [ -n "$TC_PROG_ID" ] || { TC_ATTACH=none; TC_PROG_ID=0; }
}

# tc_prog_id DEV: prints TC_PROG_ID of tc_hook_of.
tc_prog_id() {
    tc_hook_of "$1"
    echo "$TC_PROG_ID"
}

# kernel_has_tcx: the kernel release is 6.6 or later, where the loader's probe must find tcx links.
kernel_has_tcx() {
    local major minor
    IFS=. read -r major minor _ <<<"$(uname -r)"
    [ "$major" -gt 6 ] || { [ "$major" = 6 ] && [ "${minor%%[^0-9]*}" -ge 6 ]; }
}

# tc_links_left: bpfnet TC programs still held by BPF links anywhere (a tcx link that outlived its pin).
tc_links_left() {
    bpftool -j link show | "$SYSTEM_PYTHON" -c '
import json, subprocess, sys
names = {p["id"]: p.get("name", "") for p in json.loads(subprocess.run(["bpftool", "-j", "prog", "show"],
         capture_output=True, text=True, check=True).stdout)}
left = [f"link {l['id']} runs {names.get(l.get('prog_id'))}" for l in json.load(sys.stdin)
        if names.get(l.get("prog_id"), "").startswith("tc_") and names[l["prog_id"]].endswith("_ingress")]
print("; ".join(left))'
}

# replace_file NEW FILE: renames NEW over FILE in one rename(2), as editors and ConfigMap updates do, so a
# reader sees the old file or the new one, never a half-written one. NEW must be on FILE's filesystem.
replace_file() {
    mv -f "$1" "$2"
}

# run_loader ARGS...: the loader in the node's network namespace, in the foreground. nsenter rather than
# `ip netns exec`, which would remount /sys and hide the sandbox's bpffs.
run_loader() {
    nsenter --net="/run/netns/$E2E_NODE" "$LOADER" "$@"
}

loader_serving() { grep -q 'serving' "$LOADER_LOG"; }

# expect_warnings REGEX: warnings matching REGEX (an ERE) are the case's doing, from now on in this suite.
expect_warnings() { E2E_EXPECTED_WARNINGS+=("$1"); }

# unexpected_warnings LOG [FROM_LINE]: the loader's warning lines in LOG (from line FROM_LINE on) that no
# expect_warnings pattern matches, each cut to 200 characters.
unexpected_warnings() {
    local pattern=""
    [ "${#E2E_EXPECTED_WARNINGS[@]}" = 0 ] || pattern=$(printf '%s|' "${E2E_EXPECTED_WARNINGS[@]}")
    tail -n "+${2:-1}" "$1" 2>/dev/null | grep -a 'level=warn' | { if [ -n "$pattern" ]; then
        grep -aEv "${pattern%|}"
    else cat; fi; } | cut -c1-200 || true # none found: grep's status, which set -e callers must not see
}

# start_warned LOG: a warning in LOG of a start that reached "serving" (E2E_REASON says which).
start_warned() {
    local warnings
    warnings=$(unexpected_warnings "$1")
    [ -n "$warnings" ] || return 1
    E2E_REASON="the loader warned while starting: $(echo "$warnings" | tr '\n' ' ')"
}

# stop_checked PID LOG [SIGNAL]: stop_pid, and a stop by SIGTERM that warned is kept for finish() to fail.
stop_checked() {
    local pid=$1 log=$2 sig=${3:-TERM} lines warnings
    lines=$(wc -l <"$log" 2>/dev/null || echo 0)
    stop_pid "$pid" "$sig"
    [ "$sig" = TERM ] || return 0
    warnings=$(unexpected_warnings "$log" "$((lines + 1))")
    [ -z "$warnings" ] || E2E_STOP_WARNINGS+="$(basename "$log"): $(echo "$warnings" | tr '\n' ' ') "
}

# loader_start CONFIG LOGFILE [ARGS...]: starts the loader (with ARGS added to its command line) in the
# background and waits until it serves.
loader_start() {
    local config=$1
    LOADER_LOG=$2
    shift 2
    # Emptied here, not by the background job's redirection: that runs in the child, maybe after the first
    # look for "serving", which would then find the line of the loader that wrote this log before.
    : >"$LOADER_LOG"
    nsenter --net="/run/netns/$E2E_NODE" "$LOADER" --config "$config" --log-level debug "$@" >>"$LOADER_LOG" 2>&1 &
    LOADER_PID=$!
    E2E_PIDS+=("$LOADER_PID")
    local started
    started=$(date +%s.%N)
    if ! wait_for 15 loader_up_or_dead; then
        E2E_REASON="loader did not report 'serving' within 15 s"
        return 1
    fi
    if pid_gone "$LOADER_PID"; then
        wait "$LOADER_PID"
        E2E_REASON="loader exited with status $? before serving"
        return 1
    fi
    start_warned "$LOADER_LOG" && return 1
    log "loader $LOADER_PID serving after $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s (log $LOADER_LOG)"
}

loader_up_or_dead() { loader_serving || pid_gone "$LOADER_PID"; }

# loader_reloads: how many new configs the running loader has applied (file edits, SIGHUP);
# loader_reloaded_since N: more than N, for wait_for after an edit.
loader_reloads() { grep -c 'config reloaded' "$LOADER_LOG" || true; }
loader_reloaded_since() { [ "$(loader_reloads)" -gt "$1" ]; }

# loader_stop [SIGNAL]: stops the running loader; its exit status is left in STOPPED_RC.
loader_stop() {
    [ -n "$LOADER_PID" ] || return 0
    stop_checked "$LOADER_PID" "$LOADER_LOG" "${1:-TERM}"
    LOADER_PID=""
}

dump_loader_log() {
    [ -n "$LOADER_LOG" ] && [ -f "$LOADER_LOG" ] || return 0
    echo "# --- last lines of $(basename "$LOADER_LOG") ---"
    tail -n "${1:-25}" "$LOADER_LOG" | sed 's/^/#   /'
}

# ---------------------------------------------------------------------------------------------------
# Commands in the namespaces, and checks shared by the suites

host() { ip netns exec "$E2E_HOST" "$@"; }
pod() { ip netns exec "$E2E_POD" "$@"; }

is_number() { [[ $1 =~ ^[0-9]+$ ]]; }

# since T0: seconds elapsed since T0 (a `date +%s.%N` value), two decimals.
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }

pod_listens() { pod ss -Htln "sport = :$1" | grep -q LISTEN; }
pod_udp_bound() { pod ss -Hunl "sport = :$1" | grep -q .; }

# no_tentative NS: every IPv6 address in NS is usable, duplicate address detection over (RFC 4862: the kernel
# drops "tentative" then).
no_tentative() { [ -z "$(ip -n "$1" -6 addr show tentative 2>/dev/null)" ]; }

# The host resolves the service IP (the datapath's ARP answer) and reaches the HTTP port through it: the
# standard configuration's tcp 80 -> pod 8080, where addr_server.py answers with the client's address.
# map_key IP: the 16 bytes of IP as the maps key it (struct bpfnet_ip: IPv4 as ::ffff:a.b.c.d), as bpftool
# takes them.
map_key() {
    "$SYSTEM_PYTHON" -c 'import ipaddress, sys
a = ipaddress.ip_address(sys.argv[1])
a = ipaddress.IPv6Address("::ffff:" + str(a)) if a.version == 4 else a
print(" ".join("0x%02x" % b for b in a.packed))' "$1"
}

# neighbour_learned IP: one of the datapath's neighbour tables (neighbours, or neighbours_unconfirmed for a
# host known from ARP or NDP only) holds IP, a LAN host it can send the pod's packets to.
neighbour_learned() {
    local bytes table
    read -ra bytes <<<"$(map_key "$1")"
    for table in neighbours neighbours_unconfirmed; do
        bpftool map lookup pinned "$E2E_PIN_DIR/$table" key "${bytes[@]}" >/dev/null 2>&1 && return 0
    done
    return 1
}

# forget_neighbour IP: removes IP from both neighbour tables, so that the pod's next packet to it misses.
forget_neighbour() {
    local bytes table
    read -ra bytes <<<"$(map_key "$1")"
    for table in neighbours neighbours_unconfirmed; do
        bpftool map delete pinned "$E2E_PIN_DIR/$table" key "${bytes[@]}" 2>/dev/null
    done
    ! neighbour_learned "$1"
}

# host_introduced: the host has talked to the service IP (HTTP on port 80), as an agent looks up and
# heartbeats before Ironic calls it, and the datapath has learned its MAC. A case about the pod's packets to
# the host starts from here: the datapath drops a packet to a host it has not learned yet (neighbour_miss)
# and asks for the host's MAC by ARP, so an earlier case must not be what taught it.
host_introduced() {
    host curl -s -o /dev/null --max-time 2 "http://$E2E_SERVICE_IP/"
    wait_for 5 neighbour_learned "$E2E_HOST_IP" || {
        E2E_REASON="the datapath did not learn the host $E2E_HOST_IP after it talked to the service IP"
        return 1
    }
}

service_reachable() {
    [ "$(host curl -s --max-time 1 "http://$E2E_SERVICE_IP/")" = "$E2E_HOST_IP" ]
}

# every_who_has_answered FILE SECONDS: arp_probe.py's record (--every 0.01 over SECONDS) shows every request
# answered, by the NIC's MAC only (an upgrade's test); logs the counts, sets E2E_REASON when not.
every_who_has_answered() {
    local file=$1 seconds=$2 probes silent other
    probes=$(grep -c . "$file")
    silent=$(grep -c silent "$file")
    other=$(grep -v silent "$file" | grep -vc "answered $E2E_NIC_MAC\$")
    log "upgrade: $probes who-has every 10 ms over $seconds s, $silent unanswered, $other answered by another MAC than the NIC's"
    [ "$probes" -gt $((seconds * 50)) ] || { E2E_REASON="the prober sent only $probes requests"; return 1; }
    if [ "$silent" != 0 ] || [ "$other" != 0 ]; then
        E2E_REASON="$silent who-has unanswered and $other answered otherwise during the upgrade"
        return 1
    fi
}

# iperf_check JSONFILE LABEL: the run finished without error and moved data; sets IPERF_SUMMARY.
IPERF_SUMMARY=""
iperf_check() {
    local json=$1 label=$2
    local verdict
    verdict=$(python3 - "$json" <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("FAIL unreadable iperf3 output: %s" % e); sys.exit()
if "error" in r:
    print("FAIL iperf3 error: %s" % r["error"]); sys.exit()
end = r.get("end", {})
recv = end.get("sum_received", {}).get("bits_per_second", 0)
sent = end.get("sum_sent", {})
intervals = [i["sum"]["bytes"] for i in r.get("intervals", [])]
stalled = [n for n, b in enumerate(intervals) if b == 0]
summary = "%.0f Mbit/s received, %d retransmits, %d intervals" % (
    recv / 1e6, sent.get("retransmits", -1), len(intervals))
if recv <= 0:
    print("FAIL no throughput (%s)" % summary)
elif stalled:
    print("FAIL intervals %s moved no data (%s)" % (stalled, summary))
else:
    print("OK " + summary)
EOF
)
    # shellcheck disable=SC2034 # read by the calling script
    IPERF_SUMMARY="$label: ${verdict#* }"
    [[ $verdict == OK* ]]
}

# ---------------------------------------------------------------------------------------------------
# Datapath state (read from this mount namespace, which holds the bpffs)

# scaled_seconds S: S times E2E_TIME_SCALE (as wait_for scales its waits), for a window a test gives a client
# or a probe: under emulation a slowed guest's clients start and answer several times slower.
scaled_seconds() {
    if [ "${E2E_TIME_SCALE:-1}" = 1 ]; then
        echo "$1"
    else
        awk -v s="$1" -v k="$E2E_TIME_SCALE" 'BEGIN { print s * k }'
    fi
}

# port_dropped PORT [SECONDS]: a connection to service IP:PORT times out (no RST, no answer) and
# drop_not_allowed counts it; DROPPED_DETAIL says by how much.
port_dropped() {
    local port=$1 seconds before after rc out
    # Under emulation (E2E_TIME_SCALE) curl may need longer than the timeout just to start and send.
    seconds=$(scaled_seconds "${2:-1}")
    before=$(counter drop_not_allowed)
    is_number "$before" || { E2E_REASON="cannot read counters from $E2E_PIN_DIR/counters"; return 1; }
    out=$(host curl -sS --max-time "$seconds" "http://$E2E_SERVICE_IP:$port/" 2>&1)
    rc=$?
    after=$(counter drop_not_allowed)
    if [ "$rc" != 28 ]; then
        E2E_REASON="curl to unlisted port $port exit $rc (want 28, a timeout): $out"
        return 1
    fi
    if ! is_number "$after" || [ "$after" -le "$before" ]; then
        E2E_REASON="port $port timed out but drop_not_allowed did not increase ($before -> $after)"
        return 1
    fi
    DROPPED_DETAIL="drop_not_allowed $before -> $after"
}
# shellcheck disable=SC2034 # read by the suites after expect_dropped
DROPPED_DETAIL=""

# counter NAME: the sum over CPUs of one slot of the counters map; NAME is a counter's name in
# BPFNET_COUNTERS (maps/bpfnet_maps.h, e.g. drop_not_allowed), whose order gives the slots: the tests follow
# the one declaration.
counter() {
    local json
    json=$(bpftool -j map dump pinned "$E2E_PIN_DIR/counters" 2>/dev/null) || return 1
    python3 -c "$E2E_COUNTER_PY" "$E2E_REPO/maps/bpfnet_maps.h" "$1" <<<"$json"
}

E2E_COUNTER_PY='
import json, re, sys
header, name = sys.argv[1], sys.argv[2]
text = open(header).read()
body = re.search(r"#define BPFNET_COUNTERS\(X\)(.*?)\n\n", text, re.S).group(1)
names = re.findall(r"X\(\s*\w+,\s*\"(\w+)\"", body)  # the slots, in order
if name not in names:
    sys.exit("unknown counter " + name)
slot = names.index(name)

def number(v):
    if isinstance(v, list):  # raw bytes, host (little endian) order
        return int.from_bytes(bytes(int(b, 16) for b in v), "little")
    return int(v)

total = 0
for entry in json.load(sys.stdin):
    if number(entry["key"]) != slot:
        continue
    total += sum(number(v["value"]) for v in entry.get("values", []))
print(total)
'

# ---------------------------------------------------------------------------------------------------
# Results

# The case list: each suite declares, in one place before e2e_start, what a full run does, in order:
#
#   e2e_fixture NAME FUNCTION [--fails-as TITLE] [NEED...]   a set-up step (the topology, servers, a loader)
#   e2e_case KEY FUNCTION TITLE [NEED...]                   a case: one `ok - TITLE` / `not ok - TITLE: REASON`
#   e2e_step KEY FUNCTION TITLE [NEED...]                   a step of a walk (a boot): needs every earlier step
#
# A NEED is a fixture's NAME, or `case:KEY`: that case's end state (a pod already moved, a second cluster).
# Every NEED names an entry declared before. run_cases walks the list: in a full run every entry runs, in order;
# with --case, only the selected cases and what they need, recursively, each at its place in the list, so a
# case alone starts from exactly the world its entry declares. A needed case that was not selected runs
# silently; if it fails, the case that needs it is `not ok` without running. A walk's step after a failed step
# is `not ok` without running, and `--case STEP` runs the walk up to STEP, since a step alone has nothing to
# start from (no lease, no token). A fixture FUNCTION returns non-zero with E2E_REASON set when it fails: the
# suite stops there, with a `not ok - TITLE` line when --fails-as gives one (a check of its own), else as a
# fatal set-up error (exit 2).
E2E_LIST_KIND=()  # fixture, case or step
E2E_LIST_NAME=()  # the fixture's name or the case's key
E2E_LIST_FN=()
E2E_LIST_TITLE=() # the case's title; a fixture's --fails-as
E2E_LIST_NEEDS=() # space separated: fixture names and case:KEY
E2E_LIST_ERRORS=""
E2E_AFTER_CASE="" # a suite's function run after each case it ran, with E2E_CASE_KEY and E2E_CASE_FAILED (0 or 1)
# shellcheck disable=SC2034 # read by the suites' E2E_AFTER_CASE
E2E_CASE_KEY=""
# shellcheck disable=SC2034
E2E_CASE_FAILED=0

case_list_add() {
    local kind=$1 name=$2 fn=$3 title=$4
    shift 4
    local need prev="" i
    # A step needs the walk's step before it, and through it every earlier one.
    if [ "$kind" = step ]; then
        for ((i = ${#E2E_LIST_KIND[@]} - 1; i >= 0; i--)); do
            if [ "${E2E_LIST_KIND[i]}" = step ]; then
                prev="case:${E2E_LIST_NAME[i]}"
                break
            fi
        done
    fi
    for need in "$@"; do
        case_list_find "$need" >/dev/null ||
            E2E_LIST_ERRORS+="$kind $name needs '$need', which no entry before it declares"$'\n'
    done
    local self=case:$name
    [ "$kind" = fixture ] && self=$name
    case_list_find "$self" >/dev/null && E2E_LIST_ERRORS+="$kind $name is declared twice"$'\n'
    [[ $name =~ ^[a-z0-9_]+$ ]] || E2E_LIST_ERRORS+="$kind '$name': not a key of [a-z0-9_]"$'\n'
    E2E_LIST_KIND+=("$kind")
    E2E_LIST_NAME+=("$name")
    E2E_LIST_FN+=("$fn")
    E2E_LIST_TITLE+=("$title")
    local needs="$prev $*"
    needs=${needs# }
    E2E_LIST_NEEDS+=("${needs% }")
}

e2e_fixture() {
    local name=$1 fn=$2 title=""
    shift 2
    if [ "${1:-}" = --fails-as ]; then
        title=$2
        shift 2
    fi
    case_list_add fixture "$name" "$fn" "$title" "$@"
}
e2e_case() { case_list_add case "$@"; }
e2e_step() { case_list_add step "$@"; }

# case_list_find NEED: the index of the entry NEED (a fixture name or case:KEY) names.
case_list_find() {
    local i kind=fixture name=$1
    if [[ $1 == case:* ]]; then
        kind=case
        name=${1#case:}
    fi
    for i in "${!E2E_LIST_KIND[@]}"; do
        [ "${E2E_LIST_NAME[i]}" = "$name" ] || continue
        if { [ "${E2E_LIST_KIND[i]}" = fixture ] && [ $kind = fixture ]; } ||
            { [ "${E2E_LIST_KIND[i]}" != fixture ] && [ $kind = case ]; }; then
            echo "$i"
            return 0
        fi
    done
    return 1
}

# case_list_check: the list names at least one case, every need an entry before it, no key twice.
case_list_check() {
    [ -n "$(case_keys)" ] || E2E_LIST_ERRORS+="no case declared"$'\n'
    [ -z "$E2E_LIST_ERRORS" ] && return 0
    printf '%s: case list: %s' "$0" "$E2E_LIST_ERRORS" >&2
    return 1
}

# case_keys: the keys of the suite's cases and steps, in order.
case_keys() {
    local i
    for i in "${!E2E_LIST_KIND[@]}"; do
        [ "${E2E_LIST_KIND[i]}" = fixture ] || echo "${E2E_LIST_NAME[i]}"
    done
}

# case_list_print: the list as --list prints it, one entry a line: KIND<TAB>KEY<TAB>NEEDS<TAB>TITLE.
case_list_print() {
    local i
    for i in "${!E2E_LIST_KIND[@]}"; do
        printf '%s\t%s\t%s\t%s\n' "${E2E_LIST_KIND[i]}" "${E2E_LIST_NAME[i]}" "${E2E_LIST_NEEDS[i]}" "${E2E_LIST_TITLE[i]}"
    done
}

# case_selected KEY: true when no --case was given or KEY was.
case_selected() {
    [ -z "$E2E_CASES" ] || [[ ",$E2E_CASES," == *",$1,"* ]]
}

# The entries a run needs (indices in the list, as " I J ... "): with --case, the selected cases and their
# needs, recursively; else all of them.
E2E_NEEDED=""
case_list_needed() {
    local i need j
    E2E_NEEDED=" "
    for i in "${!E2E_LIST_KIND[@]}"; do
        [ "${E2E_LIST_KIND[i]}" = fixture ] && [ -n "$E2E_CASES" ] && continue
        case_selected "${E2E_LIST_NAME[i]}" && E2E_NEEDED+="$i "
    done
    # Needs always point backwards in the list: one pass from the end collects them all.
    for ((i = ${#E2E_LIST_KIND[@]} - 1; i >= 0; i--)); do
        [[ $E2E_NEEDED == *" $i "* ]] || continue
        for need in ${E2E_LIST_NEEDS[i]}; do
            j=$(case_list_find "$need")
            [[ $E2E_NEEDED == *" $j "* ]] || E2E_NEEDED+="$j "
        done
    done
}

# run_cases: runs the suite's case list (see above).
E2E_CHAIN_FAILED=() # KEY=REASON of needed cases that failed, run without being selected
E2E_STEP_FAILED=0
run_cases() {
    local i kind name fn need reason before
    case_list_needed
    for i in "${!E2E_LIST_KIND[@]}"; do
        [[ $E2E_NEEDED == *" $i "* ]] || continue
        kind=${E2E_LIST_KIND[i]} name=${E2E_LIST_NAME[i]} fn=${E2E_LIST_FN[i]}
        if [ "$kind" = fixture ]; then
            E2E_REASON=""
            "$fn" && continue
            if [ -n "${E2E_LIST_TITLE[i]}" ]; then
                echo "not ok - ${E2E_LIST_TITLE[i]}: ${E2E_REASON:-failed}"
                E2E_FAILED=$((E2E_FAILED + 1))
                dump_loader_log 40
                finish
            fi
            die "set-up '$name': ${E2E_REASON:-failed}"
        fi
        E2E_CASES_RAN+=" $name"
        before=$E2E_FAILED
        if [ "$kind" = step ]; then
            run_step_entry "$i"
        else
            reason=""
            for need in ${E2E_LIST_NEEDS[i]}; do
                [[ $need == case:* ]] && reason=$(chain_failure "${need#case:}") && break
            done
            if ! case_selected "$name"; then
                # Needed by a selected case: its end state is what that case starts from.
                if [ -n "$reason" ]; then
                    E2E_CHAIN_FAILED+=("$name=$reason")
                    continue
                fi
                log "case $name first: a selected case starts from its end state"
                E2E_REASON=""
                "$fn" || E2E_CHAIN_FAILED+=("$name=case $name, run first: ${E2E_REASON:-failed}")
                continue
            fi
            if [ -n "$reason" ]; then
                CHAIN_REASON=$reason
                fn=chain_failed
            fi
            run_selected_case "${E2E_LIST_TITLE[i]}" "$fn"
        fi
        if [ -n "$E2E_AFTER_CASE" ]; then
            # shellcheck disable=SC2034 # read by the suite's E2E_AFTER_CASE
            E2E_CASE_KEY=$name
            E2E_CASE_FAILED=0
            # shellcheck disable=SC2034
            [ "$E2E_FAILED" = "$before" ] || E2E_CASE_FAILED=1
            "$E2E_AFTER_CASE"
        fi
    done
}

# chain_failure KEY: the reason a needed case KEY failed when run unselected (fails when it did not).
chain_failure() {
    local entry
    for entry in "${E2E_CHAIN_FAILED[@]}"; do
        [ "${entry%%=*}" = "$1" ] && { echo "${entry#*=}"; return 0; }
    done
    return 1
}
CHAIN_REASON=""
chain_failed() {
    E2E_REASON=$CHAIN_REASON
    return 1
}

# run_step_entry I: a step of a walk: once a step failed, the later ones are `not ok` without running. A
# step run because a later one is selected is reported all the same: the walk's output up to the selected
# step is the full run's.
run_step_entry() {
    local i=$1 fn=${E2E_LIST_FN[$1]} before=$E2E_FAILED
    if [ "$E2E_STEP_FAILED" = 1 ]; then
        run_selected_case "${E2E_LIST_TITLE[i]}" step_after_failure
        return
    fi
    run_selected_case "${E2E_LIST_TITLE[i]}" "$fn"
    [ "$E2E_FAILED" = "$before" ] || E2E_STEP_FAILED=1
}
step_after_failure() {
    E2E_REASON="an earlier step failed"
    return 1
}

# case_ran KEY: the case KEY has run in this suite (passed or not).
E2E_CASES_RAN=""
case_ran() { [[ "$E2E_CASES_RAN " == *" $1 "* ]]; }

# run_selected_case TITLE FUNCTION: runs one case; FUNCTION returns 0 for a pass, or sets E2E_REASON and
# returns 1.
run_selected_case() {
    local name=$1 fn=$2
    local started
    started=$(date +%s.%N)
    E2E_REASON=""
    log "case: $name"
    local rc=0
    "$fn" || rc=$?
    if [ "$rc" = 0 ]; then
        echo "ok - $name"
        E2E_PASSED=$((E2E_PASSED + 1))
    elif [ "$rc" = 77 ]; then
        # The kernel lacks what the case's world needs (E2E_REASON says what): the kernel matrix runs it.
        echo "ok - $name # SKIP ${E2E_REASON:-the kernel lacks what it needs}"
        E2E_SKIPPED=$((E2E_SKIPPED + 1))
    else
        echo "not ok - $name: ${E2E_REASON:-failed}"
        E2E_FAILED=$((E2E_FAILED + 1))
        dump_loader_log 25
    fi
    log "case $name took $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s"
}

# Prints the tally and exits: non-zero when anything failed (or nothing ran); 77 when every case that ran
# was skipped (a case returns 77 when the kernel lacks what its world needs), as a suite that is skipped.
finish() {
    local skipped=""
    if [ -n "$E2E_STOP_WARNINGS" ]; then
        echo "not ok - the loader stopped (SIGTERM) without a warning: $E2E_STOP_WARNINGS"
        E2E_FAILED=$((E2E_FAILED + 1))
    fi
    [ "$E2E_SKIPPED" = 0 ] || skipped=", $E2E_SKIPPED skipped"
    echo "$E2E_PASSED passed, $E2E_FAILED failed$skipped"
    [ "$E2E_FAILED" -eq 0 ] || exit 1
    [ "$E2E_PASSED" -gt 0 ] && exit 0
    [ "$E2E_SKIPPED" -gt 0 ] && exit 77
    exit 1
}
