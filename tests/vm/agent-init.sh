#!/bin/busybox sh
# shellcheck shell=dash
# /init of the ramdisk that tests/e2e/test_firmware.sh serves to a PXE-booting QEMU guest (built by
# tests/vm/run.sh --agent-ramdisk). It does what the Ironic Python Agent does first after the firmware handed
# over: bring up the NIC, take a DHCP lease, look the machine up in Ironic by its MAC and heartbeat with the
# agent token, every call to the service IP. Each step is reported on the console as one line
# "AGENT STEP ok|fail DETAIL" with the guest's uptime; then the guest powers off.
#
# Kernel command line: bpfnet.service=IP (the service IP), bpfnet.agent_port=PORT (the callback port).
/bin/busybox --install -s /bin
mkdir -p /proc /sys /dev /tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /usr/share/udhcpc

report() { echo "AGENT $1 $2 $(cut -d' ' -f1 /proc/uptime)s $3" >/dev/console; }
finish() {
    report "done" ok ""
    sync
    poweroff -f
}

for word in $(cat /proc/cmdline); do
    case $word in
    bpfnet.service=*) service=${word#*=} ;;
    bpfnet.agent_port=*) agent_port=${word#*=} ;;
    esac
done

for m in $(cat /modules.order); do
    insmod "/modules/$m" 2>/dev/null
done
ip link set lo up
ip link set eth0 up || { report nic fail "no eth0"; finish; }
mac=$(cat /sys/class/net/eth0/address)
report nic ok "eth0 $mac"

# udhcpc configures nothing itself: this hook sets the address and remembers the lease.
cat >/usr/share/udhcpc/default.script <<'EOF'
#!/bin/sh
echo "$1 ip=$ip mask=$mask" >>/tmp/hook.log
[ "$1" = bound ] || exit 0
ip addr add "$ip/${mask:-24}" dev "$interface"
echo "$ip $serverid" >/tmp/lease
EOF
chmod +x /usr/share/udhcpc/default.script
if ! udhcpc -i eth0 -q -n -t 5 -T 2 -s /usr/share/udhcpc/default.script >/tmp/udhcpc.log 2>&1 ||
    [ ! -s /tmp/lease ]; then
    report lease fail "no DHCP lease: $(tail -n 2 /tmp/udhcpc.log | tr '\n' ' ') hook: $(tr '\n' ' ' </tmp/hook.log 2>&1)"
    finish
fi
read -r ip server_id </tmp/lease
report lease ok "ip=$ip server_id=$server_id"

api="http://$service:6385"
# (timeout, not wget -T: Debian 12's busybox wget crashes on -T.)
version="X-OpenStack-Ironic-API-Version: 1.82"
if ! timeout 10 wget -q -O /tmp/lookup --header "$version" "$api/v1/lookup?addresses=$mac" 2>/tmp/wget.log; then
    report lookup fail "GET $api/v1/lookup failed: $(tr '\n' ' ' </tmp/wget.log)"
    finish
fi
# The answer is JSON: {"node": {"uuid": ...}, "config": {"agent_token": ...}}; busybox has no JSON reader.
uuid=$(tr ',{}' '\n\n\n' </tmp/lookup | sed -n 's/^ *"uuid": *"\([^"]*\)".*/\1/p' | head -n1)
token=$(tr ',{}' '\n\n\n' </tmp/lookup | sed -n 's/^ *"agent_token": *"\([^"]*\)".*/\1/p' | head -n1)
if [ -z "$uuid" ] || [ -z "$token" ]; then
    report lookup fail "no node or token in: $(head -c 200 /tmp/lookup)"
    finish
fi
report lookup ok "node=$uuid"

body="{\"callback_url\": \"http://$ip:$agent_port\", \"agent_token\": \"$token\", \"agent_version\": \"9.0.0\"}"
if timeout 10 wget -q -O /tmp/heartbeat --header "$version" --header "Content-Type: application/json" \
    --post-data "$body" "$api/v1/heartbeat/$uuid" 2>/tmp/wget.log; then
    report heartbeat ok "accepted"
else
    report heartbeat fail "POST $api/v1/heartbeat/$uuid refused: $(tr '\n' ' ' </tmp/wget.log)"
fi
finish
