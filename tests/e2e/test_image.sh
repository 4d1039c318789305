#!/usr/bin/env bash
# The loader from the image (Containerfile, built by scripts/image.sh), run as the DaemonSet runs it: every
# start goes through tests/image/image_loader.sh, which gives `podman run` exactly the security context and
# mounts of k8s/manifests/daemonset.yaml (tests/image/daemonset_flags.py), in the node's network namespace.
#
#   test_image.sh PATH/TO/bpfnet-loader [--case KEY]... | --list   (the binary is not run: the image's is)
#   env: BPFNET_IMAGE            the image (image_loader.sh's default: docker.io/bpfnet/bpfnet-loader:VERSION)
# ctest runs it through tests/image/each_case_from_image.sh, which skips it without podman or the image (unless
# BPFNET_IMAGE_REQUIRED=1, as in scripts/test.sh, which builds the image first).
#
# Cases:
#   capabilities  with all the DaemonSet's capabilities the loader from the image attaches fresh and, after
#                 SIGTERM, adopts what it left; with any one of them left out, one of the two fails. A
#                 capability whose absence changes nothing fails the case: it must not be in the DaemonSet.
#   lease, tftp, http   a host's PXE walk through the service IP with that loader: DHCP through the relay,
#                 the boot file over TFTP, the boot script and image over HTTP (pxe_walk.sh's steps).
#   upgrade       the loader of the image stopped (SIGTERM) and one of the next image started: it adopts
#                 the datapath, and a host's who-has every 10 ms is answered by the NIC throughout.
# The cases are called through run_cases (the case list), which shellcheck cannot follow.
# shellcheck disable=SC2317
set -u

# shellcheck source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"
# shellcheck source=dhcp.sh
source "$E2E_DIR/dhcp.sh"
# shellcheck source=ironic.sh
source "$E2E_DIR/ironic.sh"
# shellcheck source=pxe_walk.sh
source "$E2E_DIR/pxe_walk.sh"

e2e_fixture topology topology_create
e2e_case capabilities case_capabilities "1. each of the DaemonSet's capabilities is needed (fresh attach or adoption fails without it); all of them are enough" topology
e2e_fixture walk_world image_walk_setup topology
e2e_step lease walk_lease "2. DHCP lease through the relay of the loader from the image" walk_world
e2e_step tftp walk_tftp "3. TFTP boot file through the service IP, byte for byte" walk_world
e2e_step http walk_http "4. HTTP boot script and image through the service IP, byte for byte" walk_world
e2e_case upgrade case_upgrade "5. upgrade: the old image's loader stopped, the next image's adopts; every who-has answered by the NIC meanwhile, HTTP steered after" case:http
E2E_AFTER_CASE=image_containers_cleanup

IMAGE_DIR=$(cd "$(dirname "$(realpath "$0")")/../image" && pwd)
# shellcheck source=../../scripts/podman.sh
source "$E2E_REPO/scripts/podman.sh"
BPFNET_IMAGE=${BPFNET_IMAGE:-$(default_image "$E2E_REPO")}
export BPFNET_IMAGE

e2e_start "$@"
# Every start of the loader goes through the image, whatever binary the suite was given (the suites' common
# argument, so that each_case.sh and ctest run this one as every other).
LOADER=$IMAGE_DIR/image_loader.sh
# This sandbox's containers, by name: its temporary directory is unique, and each_case.sh runs cases side by side.
BPFNET_IMAGE_CONTAINER_PREFIX=bpfnet-e2e-${E2E_TMP##*.}
export BPFNET_IMAGE_CONTAINER_PREFIX

skip_unless dhcp_available ironic_available

# A podman killed before its container (a stopped test) leaves the container; the suite removes its own
# after each case, but only those whose podman is gone: a container is named PREFIX-PID after image_loader.sh,
# which execs podman. The walk's loader serves from the set-up through the upgrade case, and removing it after
# the lease case left the datapath without a heartbeat: the upgrade case then met a stale one on a loaded machine.
image_containers_cleanup() {
    local name
    for name in $(podman ps -a --format '{{.Names}}' | grep "^$BPFNET_IMAGE_CONTAINER_PREFIX-"); do
        [ -d "/proc/${name##*-}" ] && continue
        podman rm -f "$name" >/dev/null 2>&1
    done
}

# start_from_image CAP LOG: the loader from the image without CAP (none: every capability of the DaemonSet's).
start_from_image() {
    BPFNET_IMAGE_DROP_CAP=$1 loader_start "$CONFIG" "$2"
}

# capability_mask CAP...: the kernel's bit mask of the named capabilities, as /proc/PID/status prints it.
capability_mask() {
    python3 -c '
import sys
bits = {"NET_ADMIN": 12, "NET_RAW": 13, "SYS_ADMIN": 21, "SYS_RESOURCE": 24, "PERFMON": 38, "BPF": 39}
print("%016x" % sum(1 << bits[c] for c in sys.argv[1:]))' "$@"
}

# container_context_is CAP...: the running loader is a process of the image's container, with exactly CAP...
# effective and bounding, no_new_privs, uid 0 and a read-only root file system.
container_context_is() {
    local name pid status expected
    name=$(podman ps --format '{{.Names}}' | grep -m1 "^$BPFNET_IMAGE_CONTAINER_PREFIX-")
    pid=$(podman inspect --format '{{.State.Pid}}' "$name" 2>/dev/null)
    if [ -z "$pid" ] || [ ! -r "/proc/$pid/status" ]; then
        E2E_REASON="no running container of the image"
        return 1
    fi
    status=$(cat "/proc/$pid/status")
    expected=$(capability_mask "$@")
    local field
    for field in "CapEff:	$expected" "CapBnd:	$expected" "NoNewPrivs:	1" "Uid:	0	0	0	0"; do
        grep -qx "$field" <<<"$status" || {
            E2E_REASON="the loader's process lacks '$field': $(grep -E '^(Cap|NoNewPrivs|Uid)' <<<"$status" | tr '\n' ' ')"
            return 1
        }
    done
    [ "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$name")" = true ] ||
        { E2E_REASON="the container's root file system is writable"; return 1; }
    [ "$(cat "/proc/$pid/comm")" = bpfnet-loader ] || { E2E_REASON="pid $pid is $(cat "/proc/$pid/comm")"; return 1; }
    log "the loader runs in $name as uid 0 with CapEff=CapBnd=$expected ($*), no_new_privs, a read-only root"
}

# The kernel's or libbpf's refusal the loader logged, for the case's account.
refusal_in() {
    { grep -E 'level=error' "$1" || tail -n1 "$1"; } | tail -n1 | sed 's/^ts=[^ ]* //' | cut -c1-240
}

case_capabilities() {
    local caps cap log account=""
    write_config "$CONFIG"
    mapfile -t caps < <(python3 "$IMAGE_DIR/daemonset_flags.py" --list-capabilities)
    [ "${#caps[@]}" -gt 0 ] || { E2E_REASON="no capabilities read from the DaemonSet"; return 1; }
    log "the DaemonSet adds: ${caps[*]}"
    # All of them: a fresh attach, then SIGTERM (the datapath stays, as for a rolling update) and a second
    # loader that adopts it.
    start_from_image "" "$LOGS/caps-all-fresh.log" || return 1
    container_context_is "${caps[@]}" || return 1
    loader_stop TERM
    start_from_image "" "$LOGS/caps-all-adopt.log" || return 1
    loader_stop TERM
    run_loader --config "$CONFIG" --teardown >"$LOGS/caps-all-teardown.log" 2>&1 ||
        { E2E_REASON="teardown from the image failed: $(tail -1 "$LOGS/caps-all-teardown.log")"; return 1; }
    for cap in "${caps[@]}"; do
        log="$LOGS/caps-no-$cap"
        if ! start_from_image "$cap" "$log-fresh.log"; then
            account+="$cap: fresh attach fails ($(refusal_in "$log-fresh.log")); "
            log "without $cap the fresh attach fails: $(refusal_in "$log-fresh.log")"
        else
            loader_stop TERM
            if ! start_from_image "$cap" "$log-adopt.log"; then
                account+="$cap: adoption fails ($(refusal_in "$log-adopt.log")); "
                log "without $cap the adoption fails: $(refusal_in "$log-adopt.log")"
            else
                loader_stop TERM
                E2E_REASON="without $cap the loader from the image attaches and adopts: the DaemonSet must not add it"
                run_loader --config "$CONFIG" --teardown >/dev/null 2>&1
                return 1
            fi
        fi
        # What the failed start left is removed with every capability, as an uninstall would.
        run_loader --config "$CONFIG" --teardown >"$log-teardown.log" 2>&1 ||
            { E2E_REASON="teardown after $cap failed: $(tail -1 "$log-teardown.log")"; return 1; }
    done
    log "each capability needed: ${account%; }"
}

# The next release's image, as a rolling update would pull it: the image under test with one more layer (a
# label), so that the new container runs from another image than the old one. The binaries are the same:
# what is tested is the handover between two containers, not a change of code.
next_image() {
    local next=${BPFNET_IMAGE%:*}:upgrade-test context=$E2E_TMP/next-image
    mkdir -p "$context"
    printf 'FROM %s\nLABEL org.opencontainers.image.version=upgrade-test\n' "$BPFNET_IMAGE" |
        podman build --quiet --network=none --tag "$next" --file - "$context" >/dev/null || return 1
    echo "$next"
}

case_upgrade() {
    # From: the walk's loader (the image under test) serving. It gets SIGTERM (a rolling update: the
    # datapath stays, without a loader until the heartbeat timeout), and the next image's loader starts and
    # adopts. A host asks who-has the service IP every 10 ms throughout.
    local next seconds=6
    # The loader that gets SIGTERM must be the walk's, serving since the set-up: one that had already gone
    # would leave the next loader a datapath whose heartbeat went stale meanwhile.
    [ -n "$LOADER_PID" ] && ! pid_gone "$LOADER_PID" ||
        { E2E_REASON="the walk's loader is no longer running: $(tail -n1 "$LOADER_LOG")"; return 1; }
    next=$(next_image) || { E2E_REASON="cannot build the next image"; return 1; }
    host "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --every 0.01 --count $((seconds * 100)) eth0 \
        "$E2E_SERVICE_IP" >"$LOGS/upgrade.arpprobe" &
    local prober=$!
    E2E_PIDS+=("$prober")
    sleep 1
    loader_stop TERM
    BPFNET_IMAGE=$next loader_start "$WALK_CONFIG" "$LOGS/upgrade-loader.log" || return 1
    grep -q 'action=adopted' "$LOGS/upgrade-loader.log" ||
        { E2E_REASON="the next image's loader did not adopt the datapath: $(grep -m2 'program on the NIC' "$LOGS/upgrade-loader.log")"; return 1; }
    wait "$prober"
    every_who_has_answered "$LOGS/upgrade.arpprobe" "$seconds" || return 1
    walk_http
}

image_walk_setup() {
    pxe_walk_setup || die "set-up failed: $E2E_REASON"
}

run_cases
# The next image is this test's own: it goes with the test (its loader stopped first, so that nothing uses it).
loader_stop TERM
podman rmi "${BPFNET_IMAGE%:*}:upgrade-test" >/dev/null 2>&1 || true
finish
