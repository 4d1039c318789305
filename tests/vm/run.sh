#!/bin/bash
# The kernel matrix: boots each kernel of the matrix in QEMU (TCG; KVM with BPFNET_VM_ACCEL=kvm) with the
# host's root shared read-only, and runs the project's suites inside (tests/vm/guest.sh): the same test
# binaries, scripts and real software as the host tier, on another kernel. Reports per kernel what passed,
# failed or was skipped (with the reason) and what the kernel offers; exits 1 if anything failed on any
# kernel, 2 on a usage or set-up error.
#
#   usage: tests/vm/run.sh [--kernels "6.1 6.12"] [--suites bpf,e2e | --long] [--build DIR] [--jobs N]
#            --suites  comma-separated: verifier (the self-check below), bpf (the BPF_PROG_TEST_RUN tables of the
#                      build tree), bpf_clang16 (those of its clang-16 twin, build-clang16), fuzz (bpfnet-fuzz,
#                      3x10^4 frames per program), e2e (every tests/e2e/test_*.sh,
#                      every case), or single e2e_NAME suites (e2e_NAME@vlan, e2e_NAME@devenv: on that LAN variant
#                      of tests/e2e/lib.sh; e2e_NAME/CASE+CASE: only those cases, as --case selects them);
#                      SUITE:SERIES runs SUITE on that kernel series only. Default: verifier, bpf, fuzz,
#                      bpf_clang16 on 6.12 (below) and the
#                      e2e cases whose subject is the datapath on the kernel ($MATRIX below); the control-plane
#                      suites (Ironic, the PXE walk, Kubernetes mode) exercise the same datapath paths and take
#                      5-10 min each under emulation: --suites bpf,e2e runs them too.
#            --long    every case of the datapath suites ($LONG_SUITES) on every kernel: CI's selection's long mode
#            --jobs    kernels booted at once (default 2: each guest is one host thread, below). Inside a guest
#                      the e2e suites run two at a time (BPFNET_VM_E2E_JOBS, tests/vm/guest.sh), but for
#                      lifecycle and kubernetes, which run alone.
#          tests/vm/run.sh --check-suites [--suites ...]
#            checks that every suite and case named exists, boots nothing (ctest vm_matrix_cases; every run checks
#            this first).
#          tests/vm/run.sh --self-check [--kernels ...]
#            runs only the verifier suite, which every matrix runs first: each kernel's verifier must accept the
#            datapath and refuse the same datapath with one bounds check removed (bpf/bpfnet_broken.bpf.o), which
#            shows that each guest really verifies the project's programs.
#          tests/vm/run.sh --agent-ramdisk DIR
#            writes DIR/vmlinuz (the newest Debian 6.12 kernel) and DIR/initrd.img, a ramdisk whose /init
#            (tests/vm/agent-init.sh) brings up a virtio NIC and calls Ironic as the ramdisk agent does: what
#            tests/e2e/test_firmware.sh serves to a PXE-booting QEMU guest.
#   env:   BPFNET_VM_CACHE  where kernel packages, unpacked kernels and initramfs images are kept
#                           (default /var/cache/bpfnet-vm); a warm cache downloads nothing
#          BPFNET_VM_TIMEOUT seconds one guest may run (default 2400)
#          BPFNET_VM_ACCEL   tcg (default) or kvm
#          BPFNET_VM_CPU     the CPU TCG emulates (default qemu64; see accel below)
#
# Kernels are Debian packages: "6.1" is the newest linux-image-6.1.0-N-amd64-unsigned, "6.12" the newest
# linux-image-6.12.N+deb12-amd64-unsigned that apt knows. The build tree must have been built (scripts/test.sh
# or cmake) before; the guest only runs it.
set -uo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
kernels="6.1 6.12"
# The matrix's e2e work: SUITE[@VARIANT][/CASE+CASE...][:SERIES]. The matrix is there for what depends on
# the kernel (the verifier, the packet programs' helpers, attach modes, redirects into real veths and out of the
# NIC, GSO/GRO and checksum state of real skbs, the ring buffer, pinning and adoption, the heartbeat's clock):
# the packet tables and the fuzzer run every program's logic on each kernel, and each e2e path below crosses
# one kernel path once. The cases left out (listed in README.md, "Where CI's time goes") test the loader, the
# CLI or the servers in user space over paths the kept cases already cross; the host tier runs every case.
# A :SERIES entry runs on that kernel only: the programs it crosses run on the other kernel in another entry.
# `--check-suites` (ctest vm_matrix_cases, and every run before it boots) checks that every case named exists.
MATRIX=(
    # The suites run in this order, two at a time but for lifecycle and kubernetes, which run alone (guest.sh):
    # lifecycle first, then the longest (the OVS walk) beside all the others, kubernetes last.
    # a normal life without a warning (libxdp's dispatcher on both, clsact on 6.1, tcx on 6.12), announcements, a
    # pin of another layout, the heartbeat gate (bpf_ktime), generic XDP and its fallback
    "e2e_lifecycle/clean_start_stop+gratuitous_arp+layout_change+liveness_gate+generic_xdp+xdp_auto_fallback"
    # OVN-Kubernetes' shape (the host kernel has no openvswitch module): the pod's veth an Open vSwitch port,
    # the whole walk with its move; on 6.1, whose guest had the shorter run (2026-12-06: 6.1 355 s, 6.12 407 s
    # with the walk on 6.12)
    "e2e_pxe_walk@ovs:6.1"
    # ARP, DNAT + redirect into the pod, bulk TCP both ways, the neighbour-miss event, adoption, attach modes
    "e2e_steering/arp_every_host+http+iperf+pod_to_host+restart+attach_choices+teardown"
    # the same through an 802.1Q sub-interface on a vlan_filtering bridge
    "e2e_steering@vlan/arp_every_host+http+pod_to_host:6.1"
    # the DHCP relay both ways (broadcast, unicast renewal, ciaddr) and TFTP's ephemeral-port flows: on 6.1
    # on the plain LAN, on 6.12 through the 802.1Q sub-interface
    "e2e_pxe/udhcpc+renew+renew_broadcast+tftp_default:6.1"
    "e2e_pxe@vlan/udhcpc+renew+renew_broadcast+tftp_default:6.12"
    # the MSS/blksize clamp, a 64 MiB download (GSO through the redirect), ICMP errors both ways and PMTU: on
    # 6.1 (clsact); the same programs' rewrites run on 6.12 in the steering and IPv6 suites
    "e2e_lan/tftp_dnsmasq+http_download+icmp_host_refuses+icmp_pod_refuses+icmp_fragmentation_needed:6.1"
    # libxdp's dispatcher beside another program (the host kernel has no dispatcher: only here)
    "e2e_coexist"
    # NDP, NAT66 both ways, the solicited-node group, ICMPv6 errors and PMTU, DAD defence, unsolicited NAs on
    # 6.12; NDP, NAT66 both ways and the ICMPv6 error rewrite on 6.1 (whose lan suite has the IPv4 ones)
    "e2e_ipv6/host_to_pod+pod_to_host+solicited_node_group+icmp6_host_refuses+icmp6_pod_refuses+icmp6_packet_too_big+dad_defended+takeover_advertisement:6.12"
    "e2e_ipv6/host_to_pod+pod_to_host+icmp6_packet_too_big:6.1"
    # the DHCPv6 relay, its multicast group, the boot file and image over IPv6: on 6.12 (tcx), as the DHCPv4
    # relay's VLAN variant; 6.1 relays DHCPv4 in the PXE suite and NDP in the IPv6 one
    "e2e_dhcp6/nic_in_dhcp_group+dnsmasq_dhclient+boot_file_and_image:6.12"
    # bpfnetctl's view of the kernel's hooks (tcx links) and the datapath's trace
    "e2e_cli/status+trace:6.12"
    # kube-proxy's IPVS shape (the host kernel has no dummy device for kube-ipvs0, nor IPVS): one ARP answer, the
    # owner's; pods calling the service IP through IPVS on both nodes
    "e2e_kubernetes/ipvs_arp+ipvs_pod_clients:6.12"
)
DATAPATH_SUITES=$(IFS=,; echo "${MATRIX[*]}")
# --long: every case of every suite whose subject is the datapath or what reads it, on both kernels (about
# 45 min under TCG, against CI's selection above).
LONG_SUITES="e2e_steering,e2e_steering@vlan,e2e_lifecycle,e2e_pxe,e2e_pxe@vlan,e2e_lan,e2e_cli,e2e_coexist,e2e_privileges,e2e_metrics,e2e_ipv6,e2e_dhcp6"
# The packet tables of the clang-16 twin run on one kernel: what clang-16 changes is the programs, whose rules
# its tables check on 6.12 and on the host (both checksum modes there); on 6.1 the self-check has its verifier
# accept them, and the clang-14 tables run that kernel's helpers (about 90 s of the 6.1 guest's, the longer run).
CPU_SUITES="verifier,bpf,bpf_clang16:6.12,fuzz"
suites="$CPU_SUITES,$DATAPATH_SUITES"
jobs=2
build=$repo/build
self_check=0
check_only=0
agent_dir=""
while [ $# -gt 0 ]; do
    case $1 in
    --self-check) self_check=1; shift ;;
    --check-suites) check_only=1; shift ;;
    --long) suites="verifier,bpf,bpf_clang16,fuzz,$LONG_SUITES"; shift ;;
    --agent-ramdisk) agent_dir=$2; shift 2 ;;
    --kernels) kernels=$2; shift 2 ;;
    --suites) suites=$2; shift 2 ;;
    --build) build=$(realpath "$2"); shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    *) echo "usage: $0 [--kernels \"6.1 6.12\"] [--suites bpf,e2e,e2e_NAME[/CASE+CASE],... | --long] [--build DIR] [--jobs N]" >&2; exit 2 ;;
    esac
done

# check_suites: every suite and case named exists (tests/e2e's --case check, before any boot): a renamed case
# would otherwise leave the matrix only when a guest reports it, half an hour later.
check_suites() {
    local entry entries name cases known wanted bad=0
    IFS=, read -ra entries <<<"$suites"
    for entry in "${entries[@]}"; do
        entry=${entry%:*}
        case $entry in verifier | bpf | bpf_clang16 | fuzz | e2e) continue ;; esac
        name=${entry%%/*}
        name=${name%@*}
        [[ $name == e2e_* && -f $repo/tests/e2e/test_${name#e2e_}.sh ]] || {
            echo "vm: no suite $name (tests/e2e/test_${name#e2e_}.sh)" >&2
            bad=1
            continue
        }
        [[ $entry == */* ]] || continue
        cases=${entry#*/}
        known=" $(bash "$repo/tests/e2e/test_${name#e2e_}.sh" --list | awk -F'\t' '$1 == "case" { printf "%s ", $2 }')"
        for wanted in ${cases//+/ }; do
            [[ $known == *" $wanted "* ]] || { echo "vm: $name has no case $wanted (its cases:$known)" >&2; bad=1; }
        done
    done
    return $bad
}
check_suites || exit 2
[ "$check_only" = 0 ] || { echo "vm: every suite and case of the matrix exists"; exit 0; }

cache=${BPFNET_VM_CACHE:-/var/cache/bpfnet-vm}
timeout_s=${BPFNET_VM_TIMEOUT:-2400}
out=$(mktemp -d /tmp/bpfnet-vm.XXXXXX)
mkdir -p "$cache"
for tool in qemu-system-x86_64 cpio modinfo dpkg-deb apt-get; do
    command -v "$tool" >/dev/null || { echo "vm: $tool is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
done
log() { echo "# [vm] $*"; }

if [ -n "$agent_dir" ]; then
    # Only the kernel and the ramdisk: no build tree needed.
    :
elif [ "$self_check" = 1 ]; then
    suites=verifier
fi
[ -n "$agent_dir" ] || [ -x "$build/tests/bpf/bpf_tests" ] || { echo "vm: $build is not built" >&2; exit 2; }

# package_for SERIES: the newest Debian kernel image package of SERIES.
package_for() {
    local pattern
    case $1 in
    6.1) pattern='^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' ;;
    6.12) pattern='^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' ;;
    *) return 1 ;;
    esac
    apt-cache pkgnames linux-image-6 | grep -E "$pattern" | sort -V | tail -n1
}

# fetch PACKAGE: the unpacked package in $cache/PACKAGE (downloaded and unpacked once).
fetch() {
    local pkg=$1
    if [ ! -d "$cache/$pkg/boot" ]; then
        log "downloading $pkg"
        (cd "$cache" && rm -f "$pkg"_*.deb && apt-get download "$pkg" >/dev/null 2>&1) || return 1
        rm -rf "$cache/$pkg.tmp"
        dpkg-deb -x "$cache/$pkg"_*.deb "$cache/$pkg.tmp" || return 1
        mv "$cache/$pkg.tmp" "$cache/$pkg"
        rm -f "$cache/$pkg"_*.deb
    fi
}

# The modules the matrix's guest needs, with everything they depend on, in load order; and the agent
# ramdisk's (its virtio NIC).
# Open vSwitch's datapath for the OVN-Kubernetes shape (E2E_CNI=ovs); IPVS, its scheduler, and the netfilter
# pieces kube-proxy's rules use (nf_tables, iptables-nft's xtables matches and targets, ipset) for the Kubernetes
# suite's kube-proxy cases. crc32c_generic first: libcrc32c (conntrack's) asks the crypto API for crc32c when it
# loads, a soft dependency that modinfo's depends does not list.
WANTED="virtio virtio_ring virtio_pci netfs fscache 9pnet 9pnet_virtio 9p veth sch_ingress cls_bpf act_bpf bridge 8021q dummy
  crc32c_generic openvswitch ip_vs ip_vs_rr nf_tables nft_compat nft_chain_nat nft_nat nft_masq nft_numgen nft_ct xt_mark xt_comment
  xt_tcpudp xt_nat xt_MASQUERADE xt_conntrack xt_set ip_set ip_set_hash_ipport"
AGENT_WANTED="virtio virtio_ring virtio_pci virtio_net af_packet"

module_file() { find "$1" -name "$2.ko" -o -name "$2.ko.xz" -o -name "$2.ko.zst" | head -n1; }

# add_module TREE NAME: appends NAME (after its dependencies) to ORDER, once.
declare -A ADDED
ORDER=()
add_module() {
    local tree=$1 name=${2//-/_} file dep
    [ -n "${ADDED[$name]:-}" ] && return 0
    ADDED[$name]=1
    file=$(module_file "$tree" "$name")
    [ -n "$file" ] || return 0 # built in
    for dep in $(modinfo -F depends "$file" | tr ',' ' '); do
        add_module "$tree" "$dep"
    done
    ORDER+=("$file")
}

# initramfs PACKAGE KVER [INIT IMAGE MODULES]: an initramfs with busybox, INIT as /init and MODULES (default:
# the matrix's guest, tests/vm/guest-init.sh, $cache/PACKAGE.cpio.gz, $WANTED), rebuilt when INIT or the
# module list changed.
initramfs() {
    local pkg=$1 kver=$2 init=${3:-$repo/tests/vm/guest-init.sh} image=${4:-$cache/$1.cpio.gz} modules=${5:-$WANTED}
    if [ -f "$image" ] && [ "$image" -nt "$init" ] && [ "$(cat "$image.modules" 2>/dev/null)" = "$modules" ]; then
        return 0
    fi
    local root
    root=$(mktemp -d)
    mkdir -p "$root"/{bin,lib64,lib/x86_64-linux-gnu,modules}
    cp /bin/busybox "$root/bin/"
    local lib
    for lib in $(ldd /bin/busybox | grep -oE '/[^ ]+'); do
        cp "$lib" "$root$lib"
    done
    cp "$init" "$root/init"
    ADDED=()
    ORDER=()
    local m
    for m in $modules; do
        add_module "$cache/$pkg/lib/modules/$kver" "$m"
    done
    : >"$root/modules.order"
    local f base
    for f in "${ORDER[@]}"; do
        base=$(basename "$f")
        case $f in
        *.xz) xz -dc "$f" >"$root/modules/${base%.xz}"; base=${base%.xz} ;;
        *.zst) zstd -qdc "$f" >"$root/modules/${base%.zst}"; base=${base%.zst} ;;
        *) cp "$f" "$root/modules/$base" ;;
        esac
        echo "$base" >>"$root/modules.order"
    done
    (cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$image.tmp" && mv "$image.tmp" "$image"
    echo "$modules" >"$image.modules"
    rm -rf "$root"
    log "initramfs for $kver: ${#ORDER[@]} modules"
}

# TCG unless BPFNET_VM_ACCEL=kvm: /dev/kvm can exist and still not run a guest (nested virtualisation off,
# as on the build machines, where qemu then hangs without a word). TCG runs a guest's two vCPUs in one host
# thread (thread=single), not one thread each: with a thread each, a vCPU now and then ran an int3 the
# kernel had already patched away (text_poke_bp's breakpoint, after its IPIs had synchronised every CPU), and
# the guest died of "Oops: int3", both kernels at boot and 6.12 in CI while an XDP attach patched
# bpf_dispatcher_xdp_func under a packet (2026-12-07: RIP at the jump's operand, the byte before it the jump's
# opcode again). One thread executes the patching as the hardware does. The cost is each guest's speed, so
# the two kernels boot side by side (--jobs 2): the matrix took 747 s against 746 s (456 + 290) for the
# threaded guests one after the other (2026-12-07). Each suite took about twice as long, so a test's
# wall-clock window must scale with E2E_TIME_SCALE (e2e_cli's trace: a fixed 6 s closed before the RRQ);
# an earlier try of threaded guests side by side had 6.1's liveness-gate probes miss theirs (2026-12-03).
# The emulated CPU is QEMU's qemu64 model (an early x86-64: SSE3, no AVX, no BMI) unless BPFNET_VM_CPU names
# another: with `max` the guest's glibc and kernel pick their AVX2 code, which TCG emulates instruction by
# instruction. The matrix's subject is the kernel (its verifier, helpers, hooks), which no CPU feature
# changes; what differs from a production CPU is the machine code around it: the BPF JIT emits classic shifts
# instead of BMI2's, and the kernel picks its mitigations and string routines for that model (the host tier
# runs the JIT's code for this machine's CPU). 6.1 with verifier,bpf,e2e_coexist and two e2e_lan cases, two runs each,
# alternated: 176 s and 156 s with qemu64, 217 s and 206 s with max (the verifier self-check 4.1-4.5 s
# against 7.8-8.1 s; 2026-12-07); the whole matrix 1297 s alone against 1457 s in CI's run that afternoon
# (whose Ironic walk, mostly Python and waits, was not faster).
accel() {
    if [ "${BPFNET_VM_ACCEL:-tcg}" = kvm ]; then
        echo "-accel kvm -cpu host"
    else
        echo "-accel tcg,thread=single -cpu ${BPFNET_VM_CPU:-qemu64}"
    fi
}

# Set-up waits of the e2e suites (E2E_TIME_SCALE): emulation starts servers several times slower.
time_scale() { if [ "${BPFNET_VM_ACCEL:-tcg}" = kvm ]; then echo 1; else echo 5; fi; }

# suites_for SERIES: the suites this kernel runs: those without a series, and those marked :SERIES (unmarked).
suites_for() {
    local entry entries kept=()
    IFS=, read -ra entries <<<"$suites"
    for entry in "${entries[@]}"; do
        case $entry in
        *:"$1") kept+=("${entry%:*}") ;;
        *:*) ;;
        *) kept+=("$entry") ;;
        esac
    done
    (IFS=,; echo "${kept[*]}")
}

# run_kernel SERIES: boots one kernel of the matrix with the suites; writes $out/summary-SERIES (one line)
# and $out/report-SERIES (what the guest reported), and returns 1 if anything failed.
run_kernel() {
    local series=$1 pkg vmlinuz kver
    pkg=$(package_for "$series")
    vmlinuz=$(ls "$cache/$pkg"/boot/vmlinuz-* | head -n1)
    kver=${vmlinuz##*/vmlinuz-}
    local results=$out/results-$series.log console=$out/console-$series.log report=$out/report-$series
    local t0 qrc wall attempt kernel_suites
    kernel_suites=$(suites_for "$series")
    t0=$(date +%s)
    # A guest that dies before it runs anything (no KERNEL line) is booted again, up to 3 times: with a host
    # thread per vCPU the kernel now and then died patching its own code at boot (accel, above), which says
    # nothing about bpfnet. Kept for whatever else kills a boot; every such boot is reported.
    for attempt in 1 2 3; do
        local again=""
        [ "$attempt" = 1 ] || again=" (boot attempt $attempt)"
        log "booting $kver ($(accel | awk '{print $2 ", " $4}')): suites $kernel_suites$again"
        # --foreground: timeout stays in the caller's process group, so stopping the matrix (scripts/test.sh
        # stops its whole group when a host stage fails) stops the guest too.
        # shellcheck disable=SC2046
        timeout --foreground "$timeout_s" qemu-system-x86_64 -machine q35 $(accel) -m 2048 -smp 2 -display none -no-reboot \
            -nic none -monitor none -serial "file:$console" -serial "file:$results" \
            -kernel "$vmlinuz" -initrd "$cache/$pkg.cpio.gz" \
            -append "console=ttyS0 panic=-1 quiet bpfnet.repo=$repo bpfnet.build=$build bpfnet.suites=$kernel_suites bpfnet.scale=$(time_scale)" \
            -virtfs local,path=/,mount_tag=host0,security_model=none,readonly=on,multidevs=remap >/dev/null 2>&1
        qrc=$?
        grep -q '^KERNEL' "$results" && break
        log "$kver died while booting (qemu status $qrc): $(grep -m1 -E 'Kernel panic|Oops|BUG' "$console" | tr -s ' ')"
        cp "$console" "$console.boot$attempt"
    done
    wall=$(($(date +%s) - t0))
    {
        echo "== $series ($kver)"
        sed -n 's/^\(KERNEL\|PROBE\|RESULT\) /  \1 /p' "$results"
    } >"$report"
    if ! grep -q '^DONE' "$results"; then
        {
            echo "  the guest did not finish (qemu status $qrc); last console lines:"
            tail -n 15 "$console" | sed 's/^/    /'
        } >>"$report"
        echo "$series ($kver): did not finish, ${wall}s" >"$out/summary-$series"
        return 1
    fi
    local n_fail n_pass n_skip
    n_fail=$(grep -c '^RESULT [^ ]* fail' "$results")
    n_pass=$(grep -c '^RESULT [^ ]* pass' "$results")
    n_skip=$(grep -c '^RESULT [^ ]* skip' "$results")
    grep '^# ' "$results" | head -n 200 >>"$report"
    echo "$series ($kver): $n_pass passed, $n_fail failed, $n_skip skipped, ${wall}s" >"$out/summary-$series"
    [ "$n_fail" = 0 ]
}

# One writer of the cache at a time: the matrix and the firmware suites (tests/e2e/test_firmware.sh, two at a
# time under ctest -j) may prepare the same kernel at once, as may a matrix run by hand beside them.
exec 9>"$cache/.lock"
flock 9
if [ -n "$agent_dir" ]; then
    pkg=$(package_for 6.12)
    [ -n "$pkg" ] || { echo "vm: apt knows no 6.12 kernel package (apt-get update?)" >&2; exit 2; }
    fetch "$pkg" || { echo "vm: cannot fetch $pkg" >&2; exit 2; }
    vmlinuz=$(ls "$cache/$pkg"/boot/vmlinuz-* | head -n1)
    mkdir -p "$agent_dir"
    initramfs "$pkg" "${vmlinuz##*/vmlinuz-}" "$repo/tests/vm/agent-init.sh" "$cache/$pkg.agent.cpio.gz" "$AGENT_WANTED" ||
        { echo "vm: cannot build the agent ramdisk" >&2; exit 2; }
    cp "$vmlinuz" "$agent_dir/vmlinuz" && cp "$cache/$pkg.agent.cpio.gz" "$agent_dir/initrd.img" || exit 2
    rmdir "$out"
    exit 0
fi

# Downloads and initramfs images first, one at a time (they share the cache); then the guests.
for series in $kernels; do
    pkg=$(package_for "$series") || { echo "vm: unknown kernel series $series" >&2; exit 2; }
    [ -n "$pkg" ] || { echo "vm: apt knows no package for kernel $series (apt-get update?)" >&2; exit 2; }
    fetch "$pkg" || { echo "vm: cannot fetch $pkg" >&2; exit 2; }
    vmlinuz=$(ls "$cache/$pkg"/boot/vmlinuz-* | head -n1)
    initramfs "$pkg" "${vmlinuz##*/vmlinuz-}" || { echo "vm: cannot build the initramfs for $series" >&2; exit 2; }
done
flock -u 9
for series in $kernels; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    { run_kernel "$series"; echo $? >"$out/status-$series"; } &
done
wait
failed=0
summary=()
for series in $kernels; do
    [ "$(cat "$out/status-$series" 2>/dev/null)" = 0 ] || failed=1
    cat "$out/report-$series" 2>/dev/null
    summary+=("$(cat "$out/summary-$series" 2>/dev/null || echo "$series: no result")")
done
# Suites of tests/e2e this run left out, so that a reader of the report knows they were not run.
not_run=()
if [ "$self_check" = 0 ] && [[ ",$suites," != *,e2e,* ]]; then
    for script in "$repo"/tests/e2e/test_*.sh; do
        name=e2e_${script##*/test_}
        name=${name%.sh}
        [[ ",$suites," =~ ,${name}[@/:,] ]] || not_run+=("$name")
    done
fi
echo "kernel matrix (logs in $out):"
printf '  %s\n' "${summary[@]}"
[ "${#not_run[@]}" = 0 ] || echo "  not run in this matrix (--suites bpf,e2e runs them): ${not_run[*]}"
if [ "$self_check" = 1 ]; then
    if [ "$failed" = 0 ]; then
        echo "self-check: every kernel's verifier accepted the datapath and refused it without a bounds check"
    else
        echo "self-check: NOT every kernel's verifier accepted the datapath and refused the broken one"
    fi
fi
exit $failed
