#!/bin/bash
# End-to-end test with real OpenStack Ironic (21.4, all-in-one, fake hardware) in the pod: a bare-metal host
# on the provisioning LAN talks to the Ironic API only through the service IP, as the ramdisk agent does
# (version document, lookup by MAC with the agent token, heartbeat), Ironic sees the host's own address,
# and the pod reaches the host's agent port as the service IP.
#
#   usage: test_ironic.sh PATH/TO/bpfnet-loader [--case KEY]... | --list   (as root; it sandboxes itself, see lib.sh)
#   env:   XDP_PASS_OBJ  the compiled tests/e2e/xdp_pass.bpf.c (default build/tests/e2e/xdp_pass.bpf.o)
#          E2E_KEEP_TMP  keep the temporary directory (configs, logs, Ironic's database) for inspection
#          IRONIC_UID    run Ironic as this uid (default 65534, nobody; 0 for root)
#
# Output is TAP-like: one `ok - NAME` / `not ok - NAME: REASON` per case, then `N passed, M failed`.
# Exit 77 (skipped) without root or without the ironic-api package.
# Cases are called through run_cases (the case list), which shellcheck cannot see.
# shellcheck disable=SC2317
set -uo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=ironic.sh
source "$E2E_DIR/ironic.sh"

# The cases, in the order of a full run: the steps of the host's walk (enroll, lookup, heartbeat build on each
# other, so `--case heartbeat` runs the walk up to it), from the stack (lib.sh, "The case list").
e2e_fixture topology topology_create
e2e_fixture stack stack_ready --fails-as "Ironic in the pod answers through the service IP" topology
e2e_step version case_version "GET /v1 through the service IP returns the version document" stack
e2e_step enroll case_enroll "enroll a fake-hardware node with the host's MAC (pod side)" stack
e2e_step lookup case_lookup "lookup by MAC through the service IP returns the node and an agent token" stack
e2e_step heartbeat case_heartbeat "heartbeat through the service IP is accepted (202), a wrong token refused" stack
e2e_step client_address case_client_address "Ironic's access log shows the host's own address" stack
e2e_step agent_callback case_agent_callback "the pod reaches the host's agent port as the service IP" stack
E2E_AFTER_CASE=ironic_after_case

e2e_start "$@"

# Everything below runs inside the sandbox.

require_tools curl python3 bpftool ethtool nsenter tc
if ! ironic_available; then
    echo "e2e: $E2E_REASON; skipped" >&2
    exit 77
fi

HOST_AGENT_PORT=9999
# What the ramdisk agent sends and expects.
AGENT_CALLBACK_URL=http://$E2E_HOST_IP:$HOST_AGENT_PORT
SERVICE_URL=http://$E2E_SERVICE_IP:$IRONIC_PORT

# Filled in by the cases, in order.
AGENT_TOKEN=""
LOOKUP_REQ_ID=""
HEARTBEAT_REQ_ID=""
VERSION_REQ_ID=""

# ---------------------------------------------------------------------------------------------------
# The ramdisk's side: API calls from the host, through the service IP only

# host_api METHOD PATH [JSON]: leaves HOST_STATUS, HOST_BODY and HOST_REQ_ID (Ironic's
# Openstack-Request-Id, to find the request in its access log).
HOST_STATUS=""
HOST_BODY=""
HOST_REQ_ID=""
host_api() {
    local method=$1 path=$2 body=${3:-}
    local headers=$LOGS/host-api.headers
    local args=(-sS --max-time 10 -X "$method" -H "X-OpenStack-Ironic-API-Version: $IRONIC_API_VERSION"
        -D "$headers" -w '\n%{http_code}')
    [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data "$body")
    : >"$headers"
    local out
    out=$(host curl "${args[@]}" "$SERVICE_URL$path" 2>&1)
    HOST_STATUS=${out##*$'\n'}
    HOST_BODY=${out%$'\n'*}
    [ "$out" != "$HOST_STATUS" ] || HOST_BODY=""
    HOST_REQ_ID=$(tr -d '\r' <"$headers" | sed -n 's/^openstack-request-id: *//Ip' | tail -n 1)
}

api_answers_via_service_ip() {
    [ "$(host curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$SERVICE_URL/v1")" = 200 ]
}

# ---------------------------------------------------------------------------------------------------
# Set-up (not cases: every case needs all of it)

# Ironic in the pod, the agent stand-in on the host, the loader on the node; Ironic is waited for from
# the pod itself first, then through the service IP from the host.
start_stack() {
    ironic_start "$E2E_POD" "$E2E_TMP/ironic" || return 1
    # The ramdisk agent stand-in (the conductor calls the agent on TCP 9999): it tells who called.
    bg_in_ns "$E2E_HOST" "$LOGS/host-agent.log" python3 "$E2E_DIR/addr_server.py" "$E2E_HOST_IP" "$HOST_AGENT_PORT"
    write_config --port "ironic-api:tcp:$IRONIC_PORT" "$CONFIG"
    loader_start "$CONFIG" "$LOGS/loader.log" || return 1
    wait_for 10 host curl -s -o /dev/null --max-time 1 "$AGENT_CALLBACK_URL/" || {
        E2E_REASON="host agent stand-in did not come up: $(cat "$LOGS/host-agent.log")"
        return 1
    }
    ironic_wait 40 || return 1
    local started
    started=$(date +%s.%N)
    if ! wait_for 10 api_answers_via_service_ip; then
        E2E_REASON="host cannot reach $SERVICE_URL/v1 10 s after Ironic answered in the pod (neigh: $(ip -n "$E2E_HOST" neigh show "$E2E_SERVICE_IP"))"
        return 1
    fi
    log "Ironic answers through the service IP after $(since "$started") s more"
}

# ---------------------------------------------------------------------------------------------------
# Cases

# a. The version document through the service IP: the ramdisk's first call. Ironic builds its links
# from the address the client used, so they name the service IP, not the pod.
case_version() {
    ironic_alive || return 1
    host_api GET /v1
    VERSION_REQ_ID=$HOST_REQ_ID
    if [ "$HOST_STATUS" != 200 ]; then
        E2E_REASON="GET $SERVICE_URL/v1: HTTP $HOST_STATUS: ${HOST_BODY:0:300}"
        return 1
    fi
    local id self
    id=$(json_get id <<<"$HOST_BODY")
    self=$(json_get links.0.href <<<"$HOST_BODY")
    if [ "$id" != v1 ]; then
        E2E_REASON="version document id is '$id', want v1: ${HOST_BODY:0:300}"
        return 1
    fi
    if [ "$self" != "$SERVICE_URL/v1/" ]; then
        E2E_REASON="version document's self link is '$self', want $SERVICE_URL/v1/"
        return 1
    fi
    log "GET /v1: id v1, self $self, media type $(json_get media_types.type <<<"$HOST_BODY")"
}

# b. The operator's side (Metal3's baremetal-operator calls Ironic inside the cluster, not through the
# service IP): enroll a fake-hardware node whose port is the host's MAC, and make it available.
case_enroll() {
    ironic_alive || return 1
    ironic_create_node "$E2E_HOST_MAC" host-0 || return 1
    ironic_set_state "$IRONIC_NODE_UUID" manage manageable || return 1
    ironic_set_state "$IRONIC_NODE_UUID" provide available || return 1
    log "node $IRONIC_NODE_UUID is available"
}

# c. The ramdisk looks itself up by MAC through the service IP and gets its node and the agent token.
# Ironic hands the token out once (a later lookup shows '******'): this must be the first lookup.
case_lookup() {
    ironic_alive || return 1
    [ -n "$IRONIC_NODE_UUID" ] || { E2E_REASON="no node was enrolled"; return 1; }
    host_api GET "/v1/lookup?addresses=$E2E_HOST_MAC"
    LOOKUP_REQ_ID=$HOST_REQ_ID
    if [ "$HOST_STATUS" != 200 ]; then
        E2E_REASON="GET /v1/lookup: HTTP $HOST_STATUS: ${HOST_BODY:0:300}"
        return 1
    fi
    local uuid
    uuid=$(json_get node.uuid <<<"$HOST_BODY")
    AGENT_TOKEN=$(json_get config.agent_token <<<"$HOST_BODY")
    if [ "$uuid" != "$IRONIC_NODE_UUID" ]; then
        E2E_REASON="lookup found node '$uuid', want $IRONIC_NODE_UUID"
        return 1
    fi
    if [ -z "$AGENT_TOKEN" ] || [ "$AGENT_TOKEN" = '******' ]; then
        E2E_REASON="lookup gave no usable agent token ('$AGENT_TOKEN'): ${HOST_BODY:0:400}"
        return 1
    fi
    log "lookup: node $uuid, agent token ${AGENT_TOKEN:0:6}... (${#AGENT_TOKEN} chars), request $LOOKUP_REQ_ID"
}

# d. The agent heartbeats with its callback URL and token: 202. A wrong token is refused (400), so the
# 202 is Ironic's verdict on the token, not a blanket answer.
case_heartbeat() {
    ironic_alive || return 1
    [ -n "$AGENT_TOKEN" ] || { E2E_REASON="no agent token from the lookup"; return 1; }
    local doc="{\"callback_url\": \"$AGENT_CALLBACK_URL\", \"agent_token\": \"%s\", \"agent_version\": \"9.0.0\"}"
    # shellcheck disable=SC2059 # the format is ours
    host_api POST "/v1/heartbeat/$IRONIC_NODE_UUID" "$(printf "$doc" "$AGENT_TOKEN")"
    HEARTBEAT_REQ_ID=$HOST_REQ_ID
    if [ "$HOST_STATUS" != 202 ]; then
        E2E_REASON="POST /v1/heartbeat: HTTP $HOST_STATUS, want 202: ${HOST_BODY:0:300}"
        return 1
    fi
    if ! grep -F "$HEARTBEAT_REQ_ID" "$IRONIC_LOG" | grep -q "RPC heartbeat called for node $IRONIC_NODE_UUID"; then
        E2E_REASON="202, but the conductor did not log the heartbeat of request $HEARTBEAT_REQ_ID"
        return 1
    fi
    # shellcheck disable=SC2059
    host_api POST "/v1/heartbeat/$IRONIC_NODE_UUID" "$(printf "$doc" "not-the-token")"
    if [ "$HOST_STATUS" != 400 ] || [[ $HOST_BODY != *"agent token"* ]]; then
        E2E_REASON="heartbeat with a wrong token: HTTP $HOST_STATUS, want 400 naming the agent token: ${HOST_BODY:0:300}"
        return 1
    fi
    log "heartbeat: 202 (request $HEARTBEAT_REQ_ID); with a wrong token: 400"
}

# e. Ironic saw the host's own address (the datapath preserves the client address), in its access log,
# for the requests of cases a, c and d; the pod-side calls of case b show 127.0.0.1, as a check of the
# parsing.
case_client_address() {
    local label id client line
    for label in version lookup heartbeat; do
        case $label in
        version) id=$VERSION_REQ_ID ;;
        lookup) id=$LOOKUP_REQ_ID ;;
        heartbeat) id=$HEARTBEAT_REQ_ID ;;
        esac
        if [ -z "$id" ]; then
            E2E_REASON="no request id for the $label request (Openstack-Request-Id header missing?)"
            return 1
        fi
        client=$(ironic_log_client "$id")
        if [ "$client" != "$E2E_HOST_IP" ]; then
            line=$(grep -F "$id" "$IRONIC_LOG" | grep -F eventlet.wsgi.server | head -n 1)
            E2E_REASON="Ironic logged the $label request ($id) from '$client', want $E2E_HOST_IP (not the node's $E2E_POD_GW, the service IP or the pod): ${line:-no access log line}"
            return 1
        fi
    done
    line=$(grep -F eventlet.wsgi.server "$IRONIC_LOG" | grep -F "$LOOKUP_REQ_ID" | head -n 1)
    log "access log: ${line#*\] }"
    local local_client
    local_client=$(ironic_log_client '"POST /v1/nodes ')
    if [ "$local_client" != 127.0.0.1 ]; then
        E2E_REASON="the pod-side POST /v1/nodes was logged from '$local_client', want 127.0.0.1: the log parsing is off"
        return 1
    fi
}

# f. Ironic calls the agent back. With fake hardware the conductor never calls the agent itself (its
# heartbeat handler only logs that fake-hardware does not support heartbeating), so a curl from the pod
# to the callback URL the agent sent stands in for the conductor: the host must see the service IP.
case_agent_callback() {
    ironic_alive || return 1
    local out rc started
    started=$(date +%s.%N)
    out=$(pod curl -sS --max-time 8 "$AGENT_CALLBACK_URL/" 2>&1)
    rc=$?
    if [ "$rc" != 0 ]; then
        E2E_REASON="curl $AGENT_CALLBACK_URL/ from the pod: exit $rc after $(since "$started") s: $out"
        return 1
    fi
    if [ "$out" != "$E2E_SERVICE_IP" ]; then
        E2E_REASON="the host's agent saw the pod as '$out', want $E2E_SERVICE_IP"
        return 1
    fi
    if ! grep -q "^$E2E_SERVICE_IP:[0-9]* \"GET / " "$LOGS/host-agent.log"; then
        E2E_REASON="the agent's log has no request from $E2E_SERVICE_IP: $(tail -n 3 "$LOGS/host-agent.log")"
        return 1
    fi
    log "pod -> $AGENT_CALLBACK_URL answered in $(since "$started") s; the agent saw $out"
}

# After a failed step, Ironic's and the agent's log tails beside the loader's.
ironic_after_case() {
    [ "$E2E_CASE_FAILED" = 1 ] || return 0
    ironic_dump_log 15
    echo "# --- last lines of host-agent.log ---"
    tail -n 5 "$LOGS/host-agent.log" 2>/dev/null | sed 's/^/#   /'
}

# The stack, or Ironic's log tail beside the loader's when it does not come up.
stack_ready() {
    start_stack && return 0
    ironic_dump_log 30
    return 1
}

# ---------------------------------------------------------------------------------------------------

log "loader: $LOADER"
run_cases

finish
