# shellcheck shell=bash
# OpenStack Ironic for bpfnet's end-to-end tests and the demo: the all-in-one `ironic` (API and conductor
# in one process, Debian's ironic-api package, Ironic 21.4) with fake hardware, no authentication, no
# message bus and a sqlite database, run unprivileged in a network namespace. Source this file after
# lib.sh (it uses bg_in_ns, wait_for, pid_gone, stop_pid, log and E2E_REASON).
#
#   ironic_available                  0 when the commands are installed (else a test should skip, exit 77)
#   ironic_start NS DIR               writes DIR/ironic.conf, creates the database, starts Ironic in NS
#   ironic_wait [SECONDS]             polls the API from inside NS until it answers (default 30 s)
#   ironic_api METHOD PATH [JSON]     calls the API from inside NS on 127.0.0.1 (the operator's side);
#                                     leaves IRONIC_STATUS (HTTP code) and IRONIC_BODY
#   ironic_create_node MAC [NAME]     enrolls a fake-hardware node with one port MAC; IRONIC_NODE_UUID
#   ironic_set_state UUID VERB STATE  provision verb (manage, provide, ...) and waits for STATE
#   ironic_log_client STRING          the client address of a request (id or request line) in the access log
#   ironic_dump_log [LINES]           log tails, for a failed case
#   ironic_stop                       stops Ironic (also done by lib.sh's cleanup)
#   json_get PATH                     a field of the JSON document on stdin (node.uuid, links.0.href)
#
# Everything Ironic writes (database, log, locks, temporary files, $HOME) stays in DIR. Every function
# returns 0, or sets E2E_REASON and returns 1.
#
# E2E_REASON and the IRONIC_* results are read by the sourcing script.
# shellcheck disable=SC2034

IRONIC_PORT=6385
IRONIC_API_VERSION=1.82
# The API's listening address: "::" serves IPv6 and IPv4 (an IPv6 or dual-stack provisioning LAN).
IRONIC_HOST_IP=${IRONIC_HOST_IP:-0.0.0.0}
# Ironic needs no privilege here (6385 > 1024, fake hardware, no DHCP or TFTP of its own): it runs as
# nobody:nogroup. IRONIC_UID=0 runs it as root instead.
IRONIC_UID=${IRONIC_UID:-65534}
IRONIC_GID=${IRONIC_GID:-65534}
# More setpriv options for the non-root case (capability sets, --no-new-privs; test_privileges.sh).
IRONIC_SETPRIV_ARGS=()
IRONIC_NS=""
IRONIC_DIR=""
IRONIC_CONF=""
IRONIC_LOG=""     # Ironic's own log (oslo.log), including eventlet's access log lines
IRONIC_OUT=""     # stdout and stderr of the process (normally empty)
IRONIC_PID=""
IRONIC_STARTED=""
IRONIC_STATUS=""
IRONIC_BODY=""
IRONIC_NODE_UUID=""
IRONIC_PORT_UUID=""

ironic_available() {
    local cmd
    for cmd in ironic ironic-dbsync setpriv curl python3; do
        if ! command -v "$cmd" >/dev/null; then
            E2E_REASON="$cmd is not installed (ironic-api package, scripts/setup.sh)"
            return 1
        fi
    done
}

# The configuration. Ironic 21.4's fake-hardware needs every interface family it declares to have an
# enabled implementation it supports: fake where there is one, noop/no-* beside it, and noop for
# network and storage (the defaults, flat and cinder, would want Neutron and Cinder).
ironic_write_config() {
    local dir=$1
    cat >"$dir/ironic.conf" <<EOF
[DEFAULT]
auth_strategy = noauth
rpc_transport = none
host = e2e-ironic
enabled_hardware_types = fake-hardware
enabled_bios_interfaces = fake,no-bios
enabled_boot_interfaces = fake
enabled_console_interfaces = fake,no-console
enabled_deploy_interfaces = fake
enabled_inspect_interfaces = fake,no-inspect
enabled_management_interfaces = fake
enabled_network_interfaces = noop
enabled_power_interfaces = fake
enabled_raid_interfaces = fake,no-raid
enabled_rescue_interfaces = fake,no-rescue
enabled_storage_interfaces = noop
enabled_vendor_interfaces = fake,no-vendor
state_path = $dir
tempdir = $dir/tmp
log_dir = $dir
log_file = ironic.log
use_stderr = false
debug = true
graceful_shutdown_timeout = 5

[api]
host_ip = $IRONIC_HOST_IP
port = $IRONIC_PORT
api_workers = 1
# Lookup works in any provision state: fake hardware never waits in "wait call-back".
restrict_lookup = false

[database]
connection = sqlite:///$dir/ironic.sqlite

[dhcp]
dhcp_provider = none

[oslo_concurrency]
lock_path = $dir/lock

[oslo_policy]
policy_dirs = $dir/policy.d
EOF
}

# IRONIC_AS: the command prefix that runs a command as Ironic's user, with $HOME and $TMPDIR inside
# IRONIC_DIR; ironic_as CMD... runs CMD that way.
IRONIC_AS=()
ironic_as_prefix() {
    IRONIC_AS=(env HOME="$IRONIC_DIR" TMPDIR="$IRONIC_DIR/tmp")
    [ "$IRONIC_UID" = 0 ] ||
        IRONIC_AS=(setpriv --reuid="$IRONIC_UID" --regid="$IRONIC_GID" --clear-groups
            "${IRONIC_SETPRIV_ARGS[@]}" "${IRONIC_AS[@]}")
}

ironic_as() {
    ironic_as_prefix
    "${IRONIC_AS[@]}" "$@"
}

# ironic_start NS DIR: DIR is created (it must not exist, and its parent must be a private temporary
# directory: the parent is made traversable, 0711, for the unprivileged user).
ironic_start() {
    IRONIC_NS=$1
    IRONIC_DIR=$2
    IRONIC_CONF=$IRONIC_DIR/ironic.conf
    IRONIC_LOG=$IRONIC_DIR/ironic.log
    IRONIC_OUT=$IRONIC_DIR/ironic.out
    if [ -e "$IRONIC_DIR" ]; then
        E2E_REASON="ironic_start: $IRONIC_DIR already exists"
        return 1
    fi
    mkdir -p "$IRONIC_DIR/tmp" "$IRONIC_DIR/lock" "$IRONIC_DIR/policy.d" || {
        E2E_REASON="ironic_start: cannot create $IRONIC_DIR"
        return 1
    }
    ironic_write_config "$IRONIC_DIR"
    if [ "$IRONIC_UID" != 0 ]; then
        chmod o+x "$(dirname "$IRONIC_DIR")"
        chown -R "$IRONIC_UID:$IRONIC_GID" "$IRONIC_DIR"
        if ! ironic_as test -w "$IRONIC_DIR"; then
            E2E_REASON="ironic_start: uid $IRONIC_UID cannot write $IRONIC_DIR (a parent is not traversable?)"
            return 1
        fi
    fi
    local started
    started=$(date +%s.%N)
    if ! ironic_as ironic-dbsync --config-file "$IRONIC_CONF" create_schema >"$IRONIC_DIR/dbsync.log" 2>&1; then
        E2E_REASON="ironic-dbsync create_schema failed: $(tail -n 3 "$IRONIC_DIR/dbsync.log" | tr '\n' ' ')"
        return 1
    fi
    log "ironic: database created in $(since "$started") s"
    IRONIC_STARTED=$(date +%s.%N)
    ironic_as_prefix
    bg_in_ns "$IRONIC_NS" "$IRONIC_OUT" "${IRONIC_AS[@]}" ironic --config-file "$IRONIC_CONF"
    IRONIC_PID=$BG_PID
    log "ironic: started (pid $IRONIC_PID, uid $IRONIC_UID, netns $IRONIC_NS, log $IRONIC_LOG)"
}

ironic_answers() {
    [ "$(ip netns exec "$IRONIC_NS" curl -s -o /dev/null -w '%{http_code}' --max-time 1 \
        "http://127.0.0.1:$IRONIC_PORT/v1")" = 200 ]
}

ironic_up_or_dead() { ironic_answers || pid_gone "$IRONIC_PID"; }

# ironic_wait [SECONDS]: the API answers GET /v1 with 200 inside the namespace.
ironic_wait() {
    local timeout=${1:-30}
    if ! wait_for "$timeout" ironic_up_or_dead; then
        E2E_REASON="ironic did not answer on 127.0.0.1:$IRONIC_PORT within $timeout s"
        return 1
    fi
    if pid_gone "$IRONIC_PID"; then
        wait "$IRONIC_PID"
        E2E_REASON="ironic exited with status $? before answering"
        return 1
    fi
    # Unprivileged for real: the uid asked for and no effective capabilities.
    local uid caps
    uid=$(ps -o uid= -p "$IRONIC_PID" | tr -d ' ')
    caps=$(sed -n 's/^CapEff:\s*//p' "/proc/$IRONIC_PID/status" 2>/dev/null)
    if [ "$uid" != "$IRONIC_UID" ] || { [ "$IRONIC_UID" != 0 ] && [ "$caps" != 0000000000000000 ]; }; then
        E2E_REASON="ironic runs as uid '$uid' with CapEff '$caps', want uid $IRONIC_UID and no capabilities"
        return 1
    fi
    log "ironic: API answers after $(since "$IRONIC_STARTED") s (uid $uid, CapEff $caps)"
}

ironic_alive() {
    if [ -z "$IRONIC_PID" ] || pid_gone "$IRONIC_PID"; then
        E2E_REASON="ironic is not running (see $IRONIC_LOG)"
        return 1
    fi
}

# ironic_api METHOD PATH [JSON]: one API call from inside the namespace, as the operator (or Metal3's
# baremetal-operator) would make it.
ironic_api() {
    local method=$1 path=$2 body=${3:-}
    local args=(-sS --max-time 10 -X "$method" -H "X-OpenStack-Ironic-API-Version: $IRONIC_API_VERSION"
        -w '\n%{http_code}')
    [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data "$body")
    local out
    out=$(ip netns exec "$IRONIC_NS" curl "${args[@]}" "http://127.0.0.1:$IRONIC_PORT$path" 2>&1)
    IRONIC_STATUS=${out##*$'\n'}
    IRONIC_BODY=${out%$'\n'*}
    [ "$out" != "$IRONIC_STATUS" ] || IRONIC_BODY=""
}

# json_get PATH: prints one field of the JSON document on stdin; PATH is dot separated, list indexes are
# numbers. Strings are printed as they are, anything else as JSON. Fails when the field is missing.
json_get() {
    python3 -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v[int(k)] if isinstance(v, list) else v[k]
print(v if isinstance(v, str) else json.dumps(v))
' "$1" 2>/dev/null
}

# ironic_create_node MAC [NAME]: a fake-hardware node (left in "enroll") with one port whose address is
# MAC, as Metal3 registers a BareMetalHost and its boot MAC.
ironic_create_node() {
    local mac=$1 name=${2:-host-$RANDOM}
    ironic_api POST /v1/nodes "{\"driver\": \"fake-hardware\", \"name\": \"$name\"}"
    if [ "$IRONIC_STATUS" != 201 ]; then
        E2E_REASON="POST /v1/nodes: HTTP $IRONIC_STATUS: ${IRONIC_BODY:0:300}"
        return 1
    fi
    IRONIC_NODE_UUID=$(json_get uuid <<<"$IRONIC_BODY")
    ironic_api POST /v1/ports "{\"node_uuid\": \"$IRONIC_NODE_UUID\", \"address\": \"$mac\"}"
    if [ "$IRONIC_STATUS" != 201 ]; then
        E2E_REASON="POST /v1/ports: HTTP $IRONIC_STATUS: ${IRONIC_BODY:0:300}"
        return 1
    fi
    IRONIC_PORT_UUID=$(json_get uuid <<<"$IRONIC_BODY")
    log "ironic: node $name $IRONIC_NODE_UUID with port $mac ($IRONIC_PORT_UUID)"
}

IRONIC_STATE=""
ironic_state_is() {
    ironic_api GET "/v1/nodes/$1"
    IRONIC_STATE=$(json_get provision_state <<<"$IRONIC_BODY")
    [ "$IRONIC_STATE" = "$2" ]
}

# ironic_set_state UUID VERB STATE [SECONDS]: asks for a provision state change (manage, provide, ...)
# and waits until the node reaches STATE (fake hardware gets there in well under a second).
ironic_set_state() {
    local uuid=$1 verb=$2 want=$3 timeout=${4:-15}
    ironic_api PUT "/v1/nodes/$uuid/states/provision" "{\"target\": \"$verb\"}"
    if [ "$IRONIC_STATUS" != 202 ]; then
        E2E_REASON="provision $verb: HTTP $IRONIC_STATUS: ${IRONIC_BODY:0:300}"
        return 1
    fi
    if ! wait_for "$timeout" ironic_state_is "$uuid" "$want"; then
        E2E_REASON="provision $verb: node in '$IRONIC_STATE' after $timeout s, want '$want' (last_error: $(json_get last_error <<<"$IRONIC_BODY"))"
        return 1
    fi
}

# ironic_log_client STRING: the client address eventlet logged for the first request whose access line
# contains STRING, for example a request id (the response's Openstack-Request-Id header) or
# '"POST /v1/nodes '. An access line reads `... eventlet.wsgi.server [None req-ID - ...] CLIENT "GET ...`.
ironic_log_client() {
    grep -F 'eventlet.wsgi.server' "$IRONIC_LOG" 2>/dev/null | grep -F -- "$1" |
        sed -n 's/^.*\] \([0-9a-fA-F.:]*\) "[A-Z]* .*$/\1/p' | head -n 1
}

ironic_dump_log() {
    local lines=${1:-20} f
    for f in "$IRONIC_OUT" "$IRONIC_LOG"; do
        if [ -z "$f" ] || [ ! -s "$f" ]; then
            continue
        fi
        echo "# --- last lines of $(basename "$f") ---"
        # Without DEBUG lines (the configuration dump, periodic tasks): requests are INFO, trouble WARNING
        # or ERROR.
        grep -v '^[0-9-]* [0-9:.]* [0-9]* DEBUG ' "$f" | tail -n "$lines" | cut -c1-400 | sed 's/^/#   /'
    done
}

ironic_stop() {
    [ -n "$IRONIC_PID" ] || return 0
    stop_pid "$IRONIC_PID" TERM
    IRONIC_PID=""
}
