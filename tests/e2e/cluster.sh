# shellcheck shell=bash
# Two simulated control-plane nodes on one provisioning LAN, API server stand-ins, and the loader in
# Kubernetes mode, for bpfnet's Kubernetes-mode end-to-end tests. Source after lib.sh and dhcp.sh.
#
# Topology (inside the sandbox; every address in 198.18.0.0/15):
#
#   k8s-host eth0 198.18.0.10 ──┐                 ┌── prov0 k8s-node-a (02:00:00:00:00:0a)
#   (the bare-metal host)       ├─ br0 (k8s-lan) ─┤     vethpod 198.18.100.1 ── eth0 198.18.100.2 k8s-pod-a
#                               │                 └── prov0 k8s-node-b (02:00:00:00:00:0b)
#                               │                       vethpod 198.18.101.1 ── eth0 198.18.101.2 k8s-pod-b
#   sandbox (API stand-ins on 0.0.0.0) ── mgmt0 198.19.255.1/30 <-> 198.19.255.2 node a
#                                      ── mgmt1 198.19.255.5/30 <-> 198.19.255.6 node b
#
# The pods are routed-CNI style (a /24 route to the pod through its veth); the nodes have no route to the
# LAN: only the datapath connects pods and host. Each pod runs HTTP servers on 8080 and 8081 (both families)
# whose /who answers with the pod's name, and dnsmasq (DHCP and DHCPv6 for relayed requests, ranges of its
# own).
#
# The LAN is dual stack (IPv6's benchmarking range 2001:2::/48): the pods have IPv6 addresses too
# (2001:2:0:100::2 and 2001:2:0:101::2, routed the same way), the host has 2001:2::10/128 as a DHCPv6 client
# configures its lease, so it reaches the provisioning prefix only once a router advertisement made it
# on-link, and the loaders get --subnet-v6 and --router-advertisements.
#
#   cluster_topology_create            builds it (dies on failure)
#   cluster_start [NODE]               all of it: topology, pods, stand-in c1 with the Service, both loaders
#   pods_start                         HTTP and dnsmasq in both pods
#   standin_start NAME                 an API server stand-in; STANDIN_PORT[NAME], its log and the loaders'
#                                      requests (requests-NAME.log) in E2E_TMP/logs
#   kubeconfig_for NODE NAME           writes (and prints the path of) a kubeconfig for NODE to stand-in NAME
#   kapi NAME METHOD PATH [JSON]       one request to stand-in NAME (served even while it is "offline" to
#                                      the loaders); prints the body; 0 on 2xx
#   k8s_loader_start NODE NAME LOG [ARGS]  the loader on NODE in Kubernetes mode against stand-in NAME;
#                                      waits until it logs "serving"; K8S_LOADER_PID[NODE]
#   k8s_loader_stop NODE [SIGNAL]
#   service_json / slice_json NODE / lease_holder NAME [IP] / lease_services NAME [IP] / ingress_of NAME /
#   events_of NAME REASON
#
# shellcheck disable=SC2034

CLUSTER_LAN=k8s-lan
CLUSTER_HOST=k8s-host
NODES=(node-a node-b)
declare -A NODE_NS=([node-a]=k8s-node-a [node-b]=k8s-node-b)
declare -A POD_NS=([node-a]=k8s-pod-a [node-b]=k8s-pod-b)
declare -A NIC_MAC=([node-a]=02:00:00:00:00:0a [node-b]=02:00:00:00:00:0b)
K8S_FLAGS=() # k8s_loader_flags
declare -A POD_IP=([node-a]=198.18.100.2 [node-b]=198.18.101.2)
declare -A POD_GW=([node-a]=198.18.100.1 [node-b]=198.18.101.1)
declare -A POD_NAME=([node-a]=ironic-a [node-b]=ironic-b)
declare -A MGMT_ROOT=([node-a]=198.19.255.1 [node-b]=198.19.255.5)
declare -A MGMT_NODE=([node-a]=198.19.255.2 [node-b]=198.19.255.6)
# Each pod's DHCP server offers addresses from its own range, so an offer tells which pod answered.
declare -A DHCP_FIRST=([node-a]=198.18.0.100 [node-b]=198.18.0.150)
declare -A DHCP_LAST=([node-a]=198.18.0.149 [node-b]=198.18.0.199)
CLUSTER_SUBNET6=2001:2::/64
# The control plane's VIP on the hosts' own network (198.18.4.0/24), which the loaders may share
# (--shared-addresses, with each node's own address): test_kubernetes.sh's case shared_address puts it on a node
# as kube-vip would.
CLUSTER_SHARED_VIP=198.18.4.5
CLUSTER_HOST6=2001:2::10
declare -A POD_IP6=([node-a]=2001:2:0:100::2 [node-b]=2001:2:0:101::2)
declare -A POD_GW6=([node-a]=2001:2:0:100::1 [node-b]=2001:2:0:101::1)
declare -A DHCP6_FIRST=([node-a]=2001:2::100 [node-b]=2001:2::200)
declare -A DHCP6_LAST=([node-a]=2001:2::1ff [node-b]=2001:2::2ff)
declare -A STANDIN_PORT=()
declare -A STANDIN_PID=()
declare -A K8S_LOADER_PID=()
declare -A K8S_LOADER_LOG=()

SERVICE_NS=metal3
SERVICE_NAME=ironic
STANDIN_PY=$E2E_REPO/tests/k8s/apiserver_standin.py
PROBE_PY=$E2E_DIR/failover_probe.py
SYSTEM_PYTHON=${SYSTEM_PYTHON:-/usr/bin/python3}

cluster_host() { ip netns exec "$CLUSTER_HOST" "$@"; }

cluster_topology_create() {
    local node ns
    for ns in "$CLUSTER_LAN" "$CLUSTER_HOST" "${NODE_NS[@]}" "${POD_NS[@]}"; do
        ip netns add "$ns" || die "ip netns add $ns"
        ip -n "$ns" link set lo up
        E2E_NAMESPACES+=("$ns")
    done
    ip -n "$CLUSTER_LAN" link add br0 type bridge || die "bridge"
    ip -n "$CLUSTER_LAN" link set br0 up

    ip -n "$CLUSTER_LAN" link add lan-host type veth peer name eth0 address "$E2E_HOST_MAC" netns "$CLUSTER_HOST" ||
        die "host LAN veth"
    ip -n "$CLUSTER_HOST" addr add "$E2E_HOST_IP/24" dev eth0
    ip -n "$CLUSTER_HOST" -6 addr add "$CLUSTER_HOST6/128" dev eth0
    ip -n "$CLUSTER_HOST" link set eth0 up
    ip -n "$CLUSTER_LAN" link set lan-host master br0 up

    local i=0
    for node in "${NODES[@]}"; do
        ns=${NODE_NS[$node]}
        ip -n "$ns" link add "$E2E_NIC" address "${NIC_MAC[$node]}" type veth peer name "lan-$node" netns "$CLUSTER_LAN" ||
            die "$node LAN veth"
        ip -n "$CLUSTER_LAN" link set "lan-$node" master br0 up
        ip -n "$ns" link set "$E2E_NIC" up

        pod_link_create "$node" || die "$node pod veth"

        ip link add "mgmt$i" type veth peer name mgmt0 netns "$ns" || die "$node management veth"
        ip addr add "${MGMT_ROOT[$node]}/30" dev "mgmt$i"
        ip link set "mgmt$i" up
        ip -n "$ns" addr add "${MGMT_NODE[$node]}/30" dev mgmt0
        ip -n "$ns" link set mgmt0 up
        i=$((i + 1))
    done
    for ns in "$CLUSTER_HOST" "${NODE_NS[@]}" "${POD_NS[@]}"; do
        wait_for 10 no_tentative "$ns" || die "IPv6 addresses of $ns still tentative"
    done
    log "cluster topology up: host, node-a, node-b on br0; stand-ins reachable at ${MGMT_ROOT[node-a]}, ${MGMT_ROOT[node-b]}"
}

# pod_link_create NODE: the pod's veth into NODE, its addresses and routes, as a routed CNI wires a pod.
pod_link_create() {
    local node=$1 ns=${NODE_NS[$1]} pod=${POD_NS[$1]}
    ip -n "$ns" link add "$E2E_VETH" type veth peer name eth0 netns "$pod" || return 1
    ip -n "$ns" addr add "${POD_GW[$node]}/24" dev "$E2E_VETH"
    ip -n "$ns" link set "$E2E_VETH" up
    ip -n "$pod" addr add "${POD_IP[$node]}/24" dev eth0
    ip -n "$pod" link set eth0 up
    ip -n "$pod" route add default via "${POD_GW[$node]}" || return 1
    ip -n "$ns" -6 addr add "${POD_GW6[$node]}/64" dev "$E2E_VETH"
    ip -n "$pod" -6 addr add "${POD_IP6[$node]}/64" dev eth0
    ip -n "$pod" -6 route add default via "${POD_GW6[$node]}"
}

pod_http_up() { ip netns exec "${POD_NS[$1]}" ss -Htln "sport = :8080" | grep -q LISTEN; }

pods_start() {
    local node dir
    for node in "${NODES[@]}"; do
        dir=$E2E_TMP/pod-$node
        mkdir -p "$dir/www"
        echo "${POD_NAME[$node]}" >"$dir/www/who"
        bg_in_ns "${POD_NS[$node]}" "$dir/http.log" "$SYSTEM_PYTHON" -m http.server --bind :: --directory "$dir/www" 8080
        bg_in_ns "${POD_NS[$node]}" "$dir/http-images.log" "$SYSTEM_PYTHON" -m http.server --bind :: \
            --directory "$dir/www" 8081
        DHCP_RANGE_FIRST=${DHCP_FIRST[$node]} DHCP_RANGE_LAST=${DHCP_LAST[$node]} \
            dnsmasq_start "${POD_NS[$node]}" "$dir/dnsmasq" \
            --dhcp-range="${DHCP6_FIRST[$node]},${DHCP6_LAST[$node]},64,10m" || return 1
        wait_for 10 pod_http_up "$node" || { E2E_REASON="HTTP server in ${POD_NS[$node]} did not start"; return 1; }
    done
}

standin_listening() { grep -q '^listening on' "$E2E_TMP/logs/standin-$1.log"; }

# standin_start NAME: a stand-in on a free port of every sandbox address (the nodes reach it through mgmt).
standin_start() {
    local name=$1 log=$E2E_TMP/logs/standin-$1.log
    "$SYSTEM_PYTHON" "$STANDIN_PY" 0 --address 0.0.0.0 --bookmark-interval 1 \
        --request-log "$E2E_TMP/logs/requests-$name.log" --commit-log "$E2E_TMP/logs/commits-$name.log" >"$log" 2>&1 &
    STANDIN_PID[$name]=$!
    E2E_PIDS+=("$!")
    wait_for 10 standin_listening "$name" || die "stand-in $name did not start: $(head -c 300 "$log")"
    STANDIN_PORT[$name]=$(awk '/^listening on/ { print $3; exit }' "$log")
    log "API server stand-in $name on port ${STANDIN_PORT[$name]}"
}

standin_stop() {
    stop_pid "${STANDIN_PID[$1]}"
}

kubeconfig_for() {
    local node=$1 name=$2 file=$E2E_TMP/conf/kubeconfig-$1-$2
    cat >"$file" <<EOF
apiVersion: v1
kind: Config
current-context: test
clusters:
- name: $name
  cluster:
    server: http://${MGMT_ROOT[$node]}:${STANDIN_PORT[$name]}
users:
- name: loader
  user:
    token: test-token
contexts:
- name: test
  context:
    cluster: $name
    user: loader
EOF
    echo "$file"
}

# kapi NAME METHOD PATH [JSON]: prints the body; 0 on 2xx.
kapi() {
    local name=$1 method=$2 path=$3 body=${4:-}
    local args=(-s -o - -w '\n%{http_code}' -H 'X-Standin-Test: 1' -X "$method"
        "http://127.0.0.1:${STANDIN_PORT[$name]}$path")
    [ -n "$body" ] && args+=(-H "Content-Type: ${KAPI_TYPE:-application/json}" --data-binary "$body")
    local out code
    out=$(curl "${args[@]}") || return 1
    code=${out##*$'\n'}
    printf '%s\n' "${out%$'\n'*}"
    [[ $code == 2* ]]
}

SERVICE_PATH=/api/v1/namespaces/$SERVICE_NS/services
SLICE_PATH=/apis/discovery.k8s.io/v1/namespaces/$SERVICE_NS/endpointslices
# The loaders' Lease namespace (--lease-namespace: POD_NAMESPACE, unset here, else bpfnet-system).
LEASE_NS=bpfnet-system
LEASE_PATH=/apis/coordination.k8s.io/v1/namespaces/$LEASE_NS/leases
EVENT_PATH=/apis/events.k8s.io/v1/namespaces/$SERVICE_NS/events

# service_json [NAME [IP [NAMESPACE]]]: the Ironic Service of docs/kubernetes.md (HTTP 80 -> 8080 and DHCP).
# shellcheck disable=SC2120 # the suites pass a name and an IP; cluster_start takes the defaults
service_json() {
    local name=${1:-$SERVICE_NAME} ip=${2:-$E2E_SERVICE_IP} ns=${3:-$SERVICE_NS}
    cat <<EOF
{"apiVersion": "v1", "kind": "Service",
 "metadata": {"name": "$name", "namespace": "$ns", "annotations": {"bpfnet.io/ip": "$ip"}},
 "spec": {"type": "LoadBalancer", "loadBalancerClass": "bpfnet.io/provisioning",
          "selector": {"app": "ironic"},
          "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": "web"},
                    {"name": "dhcp", "protocol": "UDP", "port": 67, "targetPort": 67, "appProtocol": "dhcp"}]}}
EOF
}

# slice_json NODE|none [READY [SERVICE [IP]]]: the EndpointSlice SERVICE-abcde of SERVICE (default the Ironic
# Service) with one endpoint, IP (default the pod of NODE) on NODE, ready unless READY=false; or no endpoint.
slice_json() {
    local node=$1 ready=${2:-true} service=${3:-$SERVICE_NAME} endpoints="[]"
    if [ "$node" != none ]; then
        local ip=${4:-${POD_IP[$node]}}
        endpoints='[{"addresses": ["'$ip'"], "conditions": {"ready": '$ready'}, "nodeName": "'$node'"}]'
    fi
    # The ports as the EndpointSlice controller writes them: the Service port's name, the pod's number (the
    # Ironic Service's named targetPort "web" is the pod's 8080).
    local ports='[{"name": "http", "protocol": "TCP", "port": 8080}, {"name": "dhcp", "protocol": "UDP", "port": 67}]'
    [ "$service" = "$SERVICE_NAME" ] || ports='[{"name": "'$service'", "protocol": "TCP", "port": 8081}]'
    cat <<EOF
{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
 "metadata": {"name": "$service-abcde", "namespace": "$SERVICE_NS",
              "labels": {"kubernetes.io/service-name": "$service"}},
 "addressType": "IPv4", "endpoints": $endpoints, "ports": $ports}
EOF
}

# set_slice NAME NODE|none [READY]: creates or replaces the EndpointSlice in stand-in NAME.
set_slice() {
    local name=$1
    shift
    kapi "$name" PUT "$SLICE_PATH/$SERVICE_NAME-abcde" "$(slice_json "$@")" >/dev/null ||
        kapi "$name" POST "$SLICE_PATH" "$(slice_json "$@")" >/dev/null
}

# json_field NAME PATH EXPR: GET PATH from stand-in NAME and print the Python expression EXPR of it (o).
json_field() {
    # One write of the whole answer: with PYTHONUNBUFFERED set, print() writes the text and its newline apart,
    # and a reader that has stopped at its first match (grep -q) makes the second write fail (a pipefail).
    kapi "$1" GET "$2" | "$SYSTEM_PYTHON" -c 'import json, sys
try:
    o = json.load(sys.stdin)
    text = str(eval(sys.argv[1]))
except Exception:
    text = ""
sys.stdout.write(text + "\n")' "$3"
}

# The Lease of a service IP (default: the test's) is named after it: bpfnet-198-18-0-2, and for an IPv6
# address all eight groups without leading zeros: bpfnet-2001-2-0-0-0-0-0-2.
lease_path() {
    local ip=${1:-$E2E_SERVICE_IP}
    if [[ $ip == *:* ]]; then
        ip=$("$SYSTEM_PYTHON" -c 'import ipaddress, sys
print("-".join("%x" % int(g, 16) for g in ipaddress.IPv6Address(sys.argv[1]).exploded.split(":")))' "$ip")
    fi
    echo "$LEASE_PATH/bpfnet-${ip//./-}"
}
lease_holder() { json_field "$1" "$(lease_path "${2:-}")" 'o.get("spec", {}).get("holderIdentity", "")'; }
lease_services() {
    json_field "$1" "$(lease_path "${2:-}")" 'o["metadata"].get("annotations", {}).get("bpfnet.io/services", "")'
}
ingress_of() {
    json_field "$1" "$SERVICE_PATH/${2:-$SERVICE_NAME}" \
        '",".join(i.get("ip", "") for i in o.get("status", {}).get("loadBalancer", {}).get("ingress", []))'
}
# events_of NAME REASON [NAMESPACE]: the notes of the Events with REASON, one per line.
events_of() {
    json_field "$1" "/apis/events.k8s.io/v1/namespaces/${3:-$SERVICE_NS}/events" \
        '"\n".join(e["note"] for e in o["items"] if e.get("reason") == "'"$2"'")'
}

k8s_loader_serving() { grep -q 'msg=serving ' "${K8S_LOADER_LOG[$1]}" 2>/dev/null || pid_gone "${K8S_LOADER_PID[$1]}"; }

# cluster_start [NODE]: the two nodes, their pods, the API server stand-in of cluster c1 with the Service and its
# EndpointSlice (its endpoint on NODE, default none), a loader on each node (logs in $LOGS).
cluster_start() {
    local node
    cluster_topology_create
    pods_start || die "pods: $E2E_REASON"
    standin_start c1
    kapi c1 POST "$SERVICE_PATH" "$(service_json)" >/dev/null || die "cannot create the Service"
    kapi c1 POST "$SLICE_PATH" "$(slice_json "${1:-none}")" >/dev/null || die "cannot create the EndpointSlice"
    for node in "${NODES[@]}"; do
        k8s_loader_start "$node" c1 "$LOGS/loader-$node.log" || die "$E2E_REASON"
    done
}

# k8s_loader_flags NODE NAME: the loader's flags on NODE against stand-in NAME, in the array K8S_FLAGS (what
# k8s_loader_start runs with, and what the uninstall adds --teardown to, as k8s/uninstall does).
k8s_loader_flags() {
    local node=$1 name=$2
    local kubeconfig
    kubeconfig=$(kubeconfig_for "$node" "$name")
    # node-b names its NIC by MAC, as one DaemonSet does for nodes whose NICs are named differently (the list
    # holds a MAC no node has, as a list for several nodes would).
    local interface=$E2E_NIC
    [ "$node" = node-b ] && interface="02:00:00:00:ff:99,${NIC_MAC[$node]}"
    K8S_FLAGS=(--kubernetes --kubeconfig "$kubeconfig"
        --interface "$interface" --subnet "$E2E_SUBNET" --subnet-v6 "$CLUSTER_SUBNET6" --router-advertisements
        --node-name "$node" --allowed-namespaces "$SERVICE_NS" --allowed-cidrs "$E2E_SUBNET,$CLUSTER_SUBNET6"
        --shared-addresses "$CLUSTER_SHARED_VIP,node"
        --pin-root "$E2E_PIN_ROOT/$node" --control-socket "/run/bpfnet/$node.sock" --lease-duration 3
        --event-refresh 2 --watch-idle-timeout 3 --log-level debug)
}

# k8s_loader_start NODE NAME LOG [ARGS...]: the loader on NODE against stand-in NAME, in the background; waits
# until it serves unless K8S_NO_WAIT is set.
k8s_loader_start() {
    local node=$1 name=$2 logfile=$3
    shift 3
    K8S_LOADER_LOG[$node]=$logfile
    k8s_loader_flags "$node" "$name"
    : >"$logfile" # emptied before the job starts (see loader_start)
    # shellcheck disable=SC2086 # K8S_LOADER_EXTRA: extra flags, split on purpose
    nsenter --net="/run/netns/${NODE_NS[$node]}" "$LOADER" "${K8S_FLAGS[@]}" ${K8S_LOADER_EXTRA:-} "$@" \
        >>"$logfile" 2>&1 &
    K8S_LOADER_PID[$node]=$!
    E2E_PIDS+=("$!")
    [ -n "${K8S_NO_WAIT:-}" ] && return 0
    if ! wait_for 15 k8s_loader_serving "$node" || pid_gone "${K8S_LOADER_PID[$node]}"; then
        E2E_REASON="loader on $node did not serve: $(tail -n 5 "$logfile" | tr '\n' ' ')"
        return 1
    fi
    ! start_warned "$logfile" || { E2E_REASON="$node: $E2E_REASON"; return 1; }
}

k8s_loader_stop() {
    [ -n "${K8S_LOADER_PID[$1]:-}" ] || return 0
    stop_checked "${K8S_LOADER_PID[$1]}" "${K8S_LOADER_LOG[$1]}" "${2:-TERM}"
    K8S_LOADER_PID[$1]=""
}

# node_metric NODE SERIES: the value of one series (name with labels, as exposed) of NODE's loader /metrics.
node_metric() {
    ip netns exec "${NODE_NS[$1]}" curl -s --max-time 2 http://127.0.0.1:9394/metrics |
        awk -v s="$2" '$1 == s { print $2 }'
}

# who_has_probes COUNT OUT: COUNT who-has for the service IP from the host, each's answers in OUT (arp_probe.py
# --every: a probe waits for answers until the next is sent). 10 ms apart, times E2E_TIME_SCALE under emulation
# (the kernel matrix), where an answer can take longer than 10 ms (one of 200 did in a 6.1 guest).
who_has_probes() {
    local every
    every=$(awk -v k="${E2E_TIME_SCALE:-1}" 'BEGIN { printf "%.3f", 0.01 * k }')
    cluster_host "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --every "$every" --count "$1" eth0 "$E2E_SERVICE_IP" >"$2"
}

# arp_owner: the MAC that answers the host's who-has for the service IP ("silent" when none does).
arp_owner() { cluster_host "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --timeout 0.3 eth0 "$E2E_SERVICE_IP" | awk '{ print $NF }'; }

# who_serves: the name of the pod that answers http://SERVICE_IP/who from the host ("" when none).
who_serves() { cluster_host curl -s --max-time 1 "http://$E2E_SERVICE_IP/who"; }
