# shellcheck shell=bash
# The world of the Kubernetes-mode benchmarks (k8s_watch_load.sh, k8s_scale.sh), on top of tests/e2e/lib.sh:
# the e2e topology, a management link from the node to the sandbox's root namespace (where the API server
# stand-in listens), the Ironic pod's HTTP server (GET /who answers "ironic"), and the Ironic Service of
# docs/kubernetes.md with its EndpointSlice (the pod on node-1, the loader's node). Sourced after lib.sh, inside
# the sandbox; PY is the system Python.

K8S_STANDIN=$E2E_REPO/tests/k8s/apiserver_standin.py

k8s_bench_world() {
    topology_create >/dev/null
    ip link add mgmt0 type veth peer name mgmt0 netns "$E2E_NODE" || die "management veth"
    ip addr add 198.19.255.1/30 dev mgmt0
    ip link set mgmt0 up
    ip -n "$E2E_NODE" addr add 198.19.255.2/30 dev mgmt0
    ip -n "$E2E_NODE" link set mgmt0 up
    mkdir -p "$E2E_TMP/www"
    echo ironic >"$E2E_TMP/www/who"
    bg_in_ns "$E2E_POD" "$E2E_TMP/logs/http.log" "$PY" -m http.server --bind 0.0.0.0 --directory "$E2E_TMP/www" 8080
}

# standin_start LOG: the stand-in on a free port; sets STANDIN_PID and STANDIN_PORT.
standin_start() {
    "$PY" "$K8S_STANDIN" 0 --address 0.0.0.0 --bookmark-interval 1 >"$1" 2>&1 &
    STANDIN_PID=$!
    E2E_PIDS+=("$STANDIN_PID")
    wait_for 10 grep -q '^listening on' "$1" || die "stand-in did not start"
    STANDIN_PORT=$(awk '/^listening on/ { print $3; exit }' "$1")
}

# standin_api METHOD PATH BODY: one write of the test's own (not counted as the loader's).
standin_api() {
    curl -sf --max-time 10 -H 'X-Standin-Test: 1' -H 'Content-Type: application/json' -X "$1" \
        --data-binary "$3" "http://127.0.0.1:$STANDIN_PORT$2" >/dev/null
}

# shellcheck disable=SC2034 # for the scripts that source this file
IRONIC_SLICE_PATH=/apis/discovery.k8s.io/v1/namespaces/metal3/endpointslices/ironic-x

# ironic_slice READY: the Ironic EndpointSlice, its one endpoint ready (true) or not (false).
ironic_slice() {
    echo '{"metadata": {"name": "ironic-x", "namespace": "metal3", "labels": {"kubernetes.io/service-name": "ironic"}},
  "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
  "endpoints": [{"addresses": ["'"$E2E_POD_IP"'"], "conditions": {"ready": '"$1"'}, "nodeName": "node-1"}]}'
}

# ironic_create: the Ironic Service and its EndpointSlice, ready.
ironic_create() {
    standin_api POST /api/v1/namespaces/metal3/services '{"metadata": {"name": "ironic", "namespace": "metal3", "annotations": {"bpfnet.io/ip": "'"$E2E_SERVICE_IP"'"}},
  "spec": {"type": "LoadBalancer", "loadBalancerClass": "bpfnet.io/provisioning", "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080}]}}' ||
        die "cannot create the Ironic Service"
    standin_api POST /apis/discovery.k8s.io/v1/namespaces/metal3/endpointslices "$(ironic_slice true)" ||
        die "cannot create the Ironic EndpointSlice"
}

# kubeconfig_write FILE: a kubeconfig for the stand-in, as the node reaches it.
kubeconfig_write() {
    cat >"$1" <<EOC
apiVersion: v1
kind: Config
current-context: t
clusters: [{name: c, cluster: {server: "http://198.19.255.1:$STANDIN_PORT"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: t, context: {cluster: c, user: u}}]
EOC
}

# k8s_bench_flags KUBECONFIG: the loader's flags for the benchmarks' node, in K8S_BENCH_FLAGS.
k8s_bench_flags() {
    # shellcheck disable=SC2034 # for the scripts that source this file
    K8S_BENCH_FLAGS=(--kubernetes --kubeconfig "$1" --interface "$E2E_NIC" --subnet "$E2E_SUBNET" --node-name node-1
        --allowed-namespaces metal3 --allowed-cidrs "$E2E_SUBNET" --pin-root "$E2E_PIN_ROOT")
}

# ironic_serving: the host reaches the pod's HTTP server through the service IP.
ironic_serving() { [ "$(host curl -s --max-time 1 "http://$E2E_SERVICE_IP/who")" = ironic ]; }
