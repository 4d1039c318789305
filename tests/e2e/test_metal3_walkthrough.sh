#!/usr/bin/env bash
# docs/metal3.md's walkthrough, run as written: every command block of the document (tests/e2e/doc_blocks.py
# refuses one without a walkthrough marker) in order, with the document's example addresses replaced by the
# test LAN's (SUBSTITUTIONS below), and after each step a check of what the step says it does.
#
#   test_metal3_walkthrough.sh PATH/TO/bpfnet-loader [--case KEY]... | --list   (the image's loader is run)
#
# The world: the standalone suites' LAN (one control-plane node with its provisioning NIC, a pod on a routed
# pod network, a bare-metal host on the bridge), the API server stand-in, reachable from the node over a
# management link, and tests/e2e/cluster_standin.py as the rest of the cluster: it runs the DaemonSet's
# containers from their image (tests/e2e/container_runner.sh: podman with the DaemonSet's security context),
# puts the Deployment's pod in the test's pod, whose servers are Ironic, dnsmasq (DHCP and TFTP) and an image
# server of the test's own (pxe_walk.sh), and writes EndpointSlices. The workstation's commands run in a
# directory holding a copy of this checkout (bpfnet/) and the stand-in of BMO's ironic-deployment
# (baremetal-operator/ironic-deployment: tests/k8s/bmo), with KUBECONFIG naming the stand-in; the node's in
# the node's network namespace. Needs podman (the image's loader is what runs) and containerd (step 1's ctr
# import): ctest runs it through tests/image/each_case_from_image.sh, which skips it without podman or the
# image unless BPFNET_IMAGE_REQUIRED=1.
#
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

e2e_fixture cluster walkthrough_world
e2e_case image case_image "1. the image built and loaded on the node" cluster
e2e_case install case_install "2. bpfnet installed with the site's values: the DaemonSet's loader runs from the image and attaches the datapath" case:image
e2e_case ironic case_ironic "3. BMO's ironic-deployment with bpfnet's component: the Service carries IRONIC_IP, the pod is on the pod network" case:install
e2e_case check case_check "4. the node takes the Lease, the ingress is set, the IP answered on the LAN" case:ironic
e2e_step lease walk_lease "5a. provision: DHCP lease through the relay" case:check
e2e_step tftp walk_tftp "5b. provision: the boot file over TFTP" case:lease
e2e_step http walk_http "5c. provision: boot script and image over HTTP" case:tftp
e2e_step lookup walk_lookup "5d. provision: the agent's lookup at Ironic" case:http
e2e_step heartbeat walk_heartbeat "5e. provision: the agent's heartbeat" case:lookup
e2e_step agent_call walk_agent_call "5f. provision: Ironic calls the agent" case:heartbeat
e2e_case upgrade case_upgrade "6. upgrade to the next image by the rollout: every who-has answered, HTTP served after" case:agent_call
e2e_case remove case_remove "7. removal: nothing attached or pinned on the node, no Lease or object of bpfnet's left, the IP unanswered; no loader logged a warning" case:upgrade
E2E_AFTER_CASE=walkthrough_after_case

# shellcheck source=../../scripts/podman.sh
source "$E2E_REPO/scripts/podman.sh"
BPFNET_IMAGE=$(default_image "$E2E_REPO")
NEXT_IMAGE=${BPFNET_IMAGE%:*}:$(bpfnet_version "$E2E_REPO")-next

e2e_start "$@"
BPFNET_IMAGE_CONTAINER_PREFIX=bpfnet-walk-${E2E_TMP##*.}
export BPFNET_IMAGE_CONTAINER_PREFIX
# Step 1 builds the image as written (scripts/image.sh). Where scripts/test.sh built it already, through its
# compiler cache, that build's layers are podman's cache for this one only with the same build arguments: the
# same cache (BPFNET_IMAGE_CCACHE, image.sh's --ccache) makes it so. Without it the build stage compiled everything
# again: 308 s in a CI run (2026-12-06), against the build's 20 s.
if [ -d "$E2E_REPO/build-ccache" ]; then
    export BPFNET_IMAGE_CCACHE=$E2E_REPO/build-ccache
fi

skip_unless dhcp_available ironic_available
command -v kubectl >/dev/null || skip_suite "no kubectl"

NODE_NAME=node-a
WORK=$E2E_TMP/metal3
BLOCKS=$E2E_TMP/blocks
MGMT_ROOT_IP=198.19.255.1
MGMT_NODE_IP=198.19.255.2
SERVICE_NS=baremetal-operator-system
SERVICE=ironic-provisioning
DOC=$E2E_REPO/docs/metal3.md
POD_LOGS=$LOGS/pods # the containers' output, which kubectl logs reads (the kubelet's /var/log/pods)
# The document's example values (metal3-dev-env's provisioning network) and the test LAN's: FROM=TO, split at
# the first "=" (so FROM holds none).
SUBSTITUTIONS=(
    "172.22.0.10,172.22.0.100,255.255.255.0=$DHCP_RANGE_FIRST,$DHCP_RANGE_LAST,$DHCP_NETMASK"
    "172.22.0.0/24=$E2E_SUBNET"
    "172.22.0.2=$E2E_SERVICE_IP"
    "bpfnet-172-22-0-2=bpfnet-${E2E_SERVICE_IP//./-}"
    "enp2s0=$E2E_NIC"
)

kubectl_as_user() { KUBECONFIG=$WORK/kubeconfig kubectl "$@"; }
standin() { curl -s -H 'X-Standin-Test: 1' "http://127.0.0.1:$STANDIN_PORT$1"; }

# The walkthrough's containers, by name (a killed podman leaves its container behind).
walkthrough_containers() { podman ps -a --format '{{.Names}} {{.Image}}' | grep "^$BPFNET_IMAGE_CONTAINER_PREFIX-"; }
# What the cluster did when a case failed (its kubelet's starts and stops, the loaders' logs): the temporary
# directory goes with the run.
walkthrough_after_case() {
    [ "$E2E_CASE_FAILED" = 1 ] || return 0
    tail -n 20 "$LOGS/cluster.log" | cut -c1-300 | sed 's/^/# cluster: /'
    local f
    for f in "$POD_LOGS"/*.log; do
        [ -e "$f" ] && tail -n 10 "$f" | cut -c1-300 | sed "s|^|# $(basename "$f" .log): |"
    done
}
# Run at the end, whichever case the run stopped at: a loader's container left running would hold its node.
walkthrough_containers_remove() {
    local name
    for name in $(walkthrough_containers | awk '{ print $1 }'); do
        podman rm -f "$name" >/dev/null 2>&1
    done
    podman rmi "$NEXT_IMAGE" >/dev/null 2>&1 || true # the upgrade's, made by this test
}

# A copy of this checkout's files (the user's clone), and BMO's ironic-deployment beside it.
work_tree_create() {
    mkdir -p "$WORK/bpfnet" "$WORK/baremetal-operator/ironic-deployment" || return 1
    if git -C "$E2E_REPO" rev-parse --git-dir >/dev/null 2>&1; then
        git -C "$E2E_REPO" ls-files -z --cached --others --exclude-standard |
            tar -C "$E2E_REPO" --null --files-from=- --ignore-failed-read -cf - 2>/dev/null |
            tar -C "$WORK/bpfnet" -xf - || return 1
    else
        tar -C "$E2E_REPO" --exclude=./build --exclude='./build-*' -cf - . | tar -C "$WORK/bpfnet" -xf - || return 1
    fi
    cp -r "$E2E_REPO/tests/k8s/bmo/base" "$E2E_REPO/tests/k8s/bmo/default" "$WORK/baremetal-operator/ironic-deployment/"
}

kubeconfig_write() {
    cat >"$1" <<EOF
apiVersion: v1
kind: Config
current-context: test
clusters:
- name: test
  cluster:
    server: http://$2:$STANDIN_PORT
users:
- name: test
  user:
    token: test-token
contexts:
- name: test
  context:
    cluster: test
    user: test
EOF
}

standin_listening() { grep -q '^listening on' "$LOGS/standin.log"; }

walkthrough_world() {
    topology_create
    ip link add mgmt0 type veth peer name mgmt0 netns "$E2E_NODE" || die "management link"
    ip addr add "$MGMT_ROOT_IP/30" dev mgmt0
    ip link set mgmt0 up
    mkdir -p "$POD_LOGS"
    ip -n "$E2E_NODE" addr add "$MGMT_NODE_IP/30" dev mgmt0
    ip -n "$E2E_NODE" link set mgmt0 up

    "$SYSTEM_PYTHON" "$E2E_REPO/tests/k8s/apiserver_standin.py" 0 --address 0.0.0.0 --bookmark-interval 1 \
        --exec-hook "$E2E_DIR/exec_hook.sh" --pod-logs "$POD_LOGS" >"$LOGS/standin.log" 2>&1 &
    E2E_PIDS+=("$!")
    wait_for 10 standin_listening || die "stand-in did not start: $(head -c 300 "$LOGS/standin.log")"
    STANDIN_PORT=$(awk '/^listening on/ { print $3; exit }' "$LOGS/standin.log")

    work_tree_create || die "cannot copy the checkout to $WORK"
    kubeconfig_write "$WORK/kubeconfig" 127.0.0.1
    kubeconfig_write "$E2E_TMP/conf/node-kubeconfig" "$MGMT_ROOT_IP"
    local subs=() s
    for s in "${SUBSTITUTIONS[@]}"; do subs+=(--substitute "$s"); done
    "$SYSTEM_PYTHON" "$E2E_DIR/doc_blocks.py" "$DOC" "$BLOCKS" "${subs[@]}" >"$BLOCKS.list" ||
        die "the walkthrough's blocks: $(cat "$BLOCKS.list")"

    pxe_walk_servers_start || die "the pod's servers: $E2E_REASON"
    # TMPDIR: the containers' environment files go with the test's directory.
    TMPDIR=$E2E_TMP "$SYSTEM_PYTHON" "$E2E_DIR/cluster_standin.py" --api "http://127.0.0.1:$STANDIN_PORT" \
        --node "$NODE_NAME=$E2E_NODE" --kubeconfig "$E2E_TMP/conf/node-kubeconfig" \
        --runner "$E2E_DIR/container_runner.sh" --pod-slot "$E2E_POD_IP" --log "$LOGS/cluster.log" \
        --pod-logs "$POD_LOGS" &
    E2E_PIDS+=("$!")
    log "walkthrough world up: stand-in on $STANDIN_PORT, work directory $WORK, $(wc -l <"$BLOCKS.list") blocks"
}

# run_step STEP: the document's blocks of STEP, in order: the workstation's in the work directory with the
# stand-in as the cluster, the node's in the node's network namespace. Output in LOGS/step-STEP.log.
run_step() {
    local n step where file out=$LOGS/step-$1.log ran=0
    while read -r n step where file; do
        [ "$step" = "$1" ] || continue
        ran=1
        log "running block $n ($where): $(grep -v '^set -euo' "$file" | head -n 1)"
        case $where in
        workstation) (cd "$WORK" && KUBECONFIG=$WORK/kubeconfig bash "$file") >>"$out" 2>&1 ;;
        node) (cd "$WORK" && nsenter --net="/run/netns/$E2E_NODE" bash "$file") >>"$out" 2>&1 ;;
        esac || {
            E2E_REASON="block $n ($step, $where) failed: $(tail -n 4 "$out" | tr '\n' ' ') -- the cluster: $(tail -n 6 "$LOGS/cluster.log" | cut -c1-300 | tr '\n' '|')"
            return 1
        }
    done <"$BLOCKS.list"
    [ "$ran" = 1 ] || { E2E_REASON="docs/metal3.md has no block for step $1"; return 1; }
}

loader_container() { walkthrough_containers | head -n 1; }
xdp_on_nic() { ip -n "$E2E_NODE" link show "$E2E_NIC" | grep -q xdp; }

# A containerd of the node's, for the walkthrough's containerd variant of step 1: its own root, state and socket
# in the test's directory (ctr finds it through CONTAINERD_ADDRESS), no CRI plugin (nothing runs from it).
containerd_start() {
    local dir=$E2E_TMP/containerd
    mkdir -p "$dir"
    cat >"$dir/config.toml" <<EOF
version = 2
root = "$dir/root"
state = "$dir/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$dir/containerd.sock"
[ttrpc]
  address = "$dir/containerd.sock.ttrpc"
EOF
    containerd --config "$dir/config.toml" >"$LOGS/containerd.log" 2>&1 &
    E2E_PIDS+=("$!")
    CONTAINERD_ADDRESS=$dir/containerd.sock
    export CONTAINERD_ADDRESS
    wait_for 10 test -S "$CONTAINERD_ADDRESS"
}

case_image() {
    run_step image || return 1
    [ -s "$WORK/bpfnet-loader.tar" ] || { E2E_REASON="no bpfnet-loader.tar written"; return 1; }
    podman image exists "$BPFNET_IMAGE" || { E2E_REASON="$BPFNET_IMAGE not in the node's image store"; return 1; }
    command -v containerd >/dev/null || { E2E_REASON="containerd is not installed (scripts/setup.sh)"; return 1; }
    containerd_start || { E2E_REASON="containerd did not start: $(tail -n 3 "$LOGS/containerd.log")"; return 1; }
    run_step image-containerd || return 1
    # The name the kubelet asks containerd for: the DaemonSet's reference, normalised to Docker Hub's.
    ctr -n k8s.io images ls -q | grep -qx "$BPFNET_IMAGE" ||
        { E2E_REASON="$BPFNET_IMAGE not in containerd's k8s.io namespace: $(ctr -n k8s.io images ls -q | tr '\n' ' ')"; return 1; }
}

case_install() {
    run_step install || return 1
    local container
    container=$(loader_container)
    [ -n "$container" ] || { E2E_REASON="no loader container on the node"; return 1; }
    [ "${container#* }" = "$BPFNET_IMAGE" ] || { E2E_REASON="the loader runs $container, want $BPFNET_IMAGE"; return 1; }
    xdp_on_nic || { E2E_REASON="no XDP program on $E2E_NIC after the rollout"; return 1; }
    grep -q -- "--interface $E2E_NIC --subnet $E2E_SUBNET" "$LOGS/cluster.log" ||
        { E2E_REASON="the loader was not started with site.env's values: $(grep -m1 'start ' "$LOGS/cluster.log")"; return 1; }
    log "loader running: $container"
}

case_ironic() {
    run_step ironic || return 1
    local ip hostnet
    ip=$(standin "/api/v1/namespaces/$SERVICE_NS/services/$SERVICE" |
        "$SYSTEM_PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["annotations"]["bpfnet.io/ip"])')
    [ "$ip" = "$E2E_SERVICE_IP" ] || { E2E_REASON="the Service's bpfnet.io/ip is '$ip', want $E2E_SERVICE_IP"; return 1; }
    hostnet=$(standin "/apis/apps/v1/namespaces/$SERVICE_NS/deployments/baremetal-operator-ironic" |
        "$SYSTEM_PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["spec"]["template"]["spec"].get("hostNetwork"))')
    [ "$hostnet" = False ] || { E2E_REASON="the Ironic Deployment's hostNetwork is $hostnet"; return 1; }
}

case_check() {
    run_step check || return 1
    grep -qx "$NODE_NAME" "$LOGS/step-check.log" ||
        { E2E_REASON="the Lease's holder printed is not $NODE_NAME: $(cat "$LOGS/step-check.log")"; return 1; }
    # get pods -o wide: the loader's pod, ready, on the node.
    grep -Eq "^bpfnet-loader-[a-z0-9]+ +1/1 +Running +0 +[0-9]+[smhd] +[^ ]+ +$NODE_NAME " "$LOGS/step-check.log" ||
        { E2E_REASON="get pods -o wide shows no ready loader on $NODE_NAME: $(tail -n 3 "$LOGS/step-check.log" | tr '\n' '|')"; return 1; }
    run_step check-serving || return 1
    # bpfnetctl status in the container of the Lease holder's pod, through kubectl exec: the IP served there.
    grep -Eq "^service IP +$E2E_SERVICE_IP: active" "$LOGS/step-check-serving.log" ||
        { E2E_REASON="bpfnetctl status through kubectl exec does not show $E2E_SERVICE_IP active: $(tail -n 14 "$LOGS/step-check-serving.log" | tr '\n' '|')"; return 1; }
    # kubectl logs of that pod: the loader's own line for the IP.
    grep -Eq "msg=\"serving service\".* service_ip=$E2E_SERVICE_IP( |\$)" "$LOGS/step-check-serving.log" ||
        { E2E_REASON="kubectl logs shows no 'serving service' for $E2E_SERVICE_IP: $(tail -n 3 "$LOGS/step-check-serving.log" | tr '\n' '|')"; return 1; }
    local answer
    answer=$(host "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --timeout 1 eth0 "$E2E_SERVICE_IP")
    [ "${answer##* }" = "$E2E_NIC_MAC" ] || { E2E_REASON="who-has $E2E_SERVICE_IP: $answer, want $E2E_NIC_MAC"; return 1; }
    pxe_walk_enrol
}

# The next version's checkout and image, as the upgrade step has them: the same sources whose DaemonSet names
# an image of their own (a layer over this one, so that podman runs a different image).
next_version_prepare() {
    local context=$E2E_TMP/next-image
    mkdir -p "$context"
    printf 'FROM %s\nLABEL org.opencontainers.image.version=walkthrough-next\n' "$BPFNET_IMAGE" |
        podman build --quiet --network=none --tag "$NEXT_IMAGE" --file - "$context" >/dev/null || return 1
    sed -i "s|image: ${BPFNET_IMAGE#docker.io/}\$|image: ${NEXT_IMAGE#docker.io/}|" "$WORK/bpfnet/k8s/manifests/daemonset.yaml"
    grep -q "image: ${NEXT_IMAGE#docker.io/}\$" "$WORK/bpfnet/k8s/manifests/daemonset.yaml"
}

case_upgrade() {
    next_version_prepare || { E2E_REASON="cannot prepare the next version's image and manifests"; return 1; }
    local seconds=20 prober container
    host "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --every 0.01 --count $((seconds * 100)) eth0 \
        "$E2E_SERVICE_IP" >"$LOGS/upgrade.arpprobe" &
    prober=$!
    E2E_PIDS+=("$prober")
    sleep 1
    run_step upgrade || return 1
    container=$(loader_container)
    [ "${container#* }" = "$NEXT_IMAGE" ] || { E2E_REASON="after the rollout the loader runs '$container', want $NEXT_IMAGE"; return 1; }
    wait "$prober"
    every_who_has_answered "$LOGS/upgrade.arpprobe" "$seconds" || return 1
    walk_http
}

case_remove() {
    run_step remove || return 1
    local left="" objects
    xdp_on_nic && left+="xdp on $E2E_NIC; "
    [ -n "$(tc -n "$E2E_NODE" filter show dev "$E2E_NIC" ingress 2>/dev/null)" ] && left+="tc filter on $E2E_NIC; "
    [ -n "$(tc -n "$E2E_NODE" filter show dev "$E2E_VETH" ingress 2>/dev/null)" ] && left+="tc filter on $E2E_VETH; "
    [ -e "$E2E_PIN_ROOT/$E2E_NIC" ] && left+="pins in $E2E_PIN_ROOT/$E2E_NIC; "
    objects=$(for path in /apis/coordination.k8s.io/v1/leases /apis/apps/v1/daemonsets /api/v1/serviceaccounts \
        /api/v1/configmaps /apis/rbac.authorization.k8s.io/v1/clusterroles /apis/rbac.authorization.k8s.io/v1/roles; do
        standin "$path" | "$SYSTEM_PYTHON" -c 'import json, sys
for o in json.load(sys.stdin)["items"]:
    m = o["metadata"]
    if m.get("namespace") == "bpfnet-system" or m["name"].startswith("bpfnet") or o["kind"] == "Lease":
        print("%s %s/%s" % (o["kind"], m.get("namespace", ""), m["name"]))'
    done)
    [ -z "$objects" ] || left+="in the cluster: $(echo "$objects" | tr '\n' ' '); "
    [ -z "$(walkthrough_containers)" ] || left+="containers: $(walkthrough_containers | tr '\n' ' '); "
    [ -z "$left" ] || { E2E_REASON="left behind: $left"; return 1; }
    local answer
    answer=$(host "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --timeout 0.5 eth0 "$E2E_SERVICE_IP")
    [ "${answer##* }" = silent ] || { E2E_REASON="the service IP is still answered: $answer"; return 1; }
    # Every loader of the walkthrough (the first start, the upgrade's adoption, the teardown) logged no warning:
    # nothing in a normal life asks an operator to act.
    local warnings
    warnings=$(grep -h 'level=warn' "$LOGS/cluster.log" "$POD_LOGS"/*.log | cut -c1-200)
    [ -z "$warnings" ] || { E2E_REASON="the loaders logged warnings: $(echo "$warnings" | tr '\n' '|')"; return 1; }
    log "node and cluster clean; the service IP unanswered; no warning logged"
}

run_cases
walkthrough_containers_remove
finish
