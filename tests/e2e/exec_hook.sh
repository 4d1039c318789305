#!/usr/bin/env bash
# The kubelet's side of `kubectl exec` for the API server stand-in (apiserver_standin.py --exec-hook): runs
# COMMAND in the running container CONTAINER of pod POD, which tests/e2e/container_runner.sh named
# BPFNET_IMAGE_CONTAINER_PREFIX-POD_CONTAINER-PID.
#
#   exec_hook.sh NAMESPACE POD CONTAINER COMMAND...
set -euo pipefail

pod=$2 container=$3
shift 3
name=$(podman ps --format '{{.Names}}' | grep -m1 "^${BPFNET_IMAGE_CONTAINER_PREFIX:-bpfnet-pod}-${pod}_${container}-" || true)
if [ -z "$name" ]; then
    echo "exec_hook.sh: container $container of pod $pod is not running" >&2
    exit 126
fi
# In the network namespace of the container's process: a host-network container has none of its own (the OCI
# runtime joins none), and the node here is a network namespace of the test, not this one.
pid=$(podman inspect --format '{{.State.Pid}}' "$name")
exec nsenter --net="/proc/$pid/ns/net" podman exec "$name" "$@"
