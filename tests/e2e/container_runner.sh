#!/usr/bin/env bash
# The container runtime of tests/e2e/cluster_standin.py: runs one container of a pod on the test's node, from
# its image, as the kubelet would. Only bpfnet-loader's image is known here: its entrypoint is the loader,
# started through tests/image/image_loader.sh (the DaemonSet's security context and mounts, the node's
# network namespace as the host network; nsenter, since `ip netns exec` would remount /sys and hide the
# sandbox's bpffs).
#
#   container_runner.sh NETNS IMAGE ENVFILE -- COMMAND ARGS...
set -euo pipefail

netns=$1 image=$2 env_file=$3
shift 3
[ "${1:-}" = -- ] || { echo "container_runner.sh: want NETNS IMAGE ENVFILE -- COMMAND ARGS" >&2; exit 2; }
shift
if [ "$(basename "$1")" != bpfnet-loader ]; then
    echo "container_runner.sh: $1: only bpfnet-loader's image can be run here" >&2
    exit 2
fi
shift
# The image reference as the kubelet hands it to the runtime: a name without a registry is Docker Hub's
# (docker.io/, and docker.io/library/ for a single component), never one of podman's short-name candidates.
first=${image%%/*}
if [ "$first" = "$image" ]; then
    image=docker.io/library/$image
elif [[ $first != *.* && $first != *:* && $first != localhost ]]; then
    image=docker.io/$image
fi
# Named after its pod and container (CLUSTER_CONTAINER, from cluster_standin.py), for exec_hook.sh to find it.
prefix=${BPFNET_IMAGE_CONTAINER_PREFIX:-bpfnet-pod}-${CLUSTER_CONTAINER:-$$}
export BPFNET_IMAGE_CONTAINER_PREFIX=$prefix
here=$(dirname "$(realpath "$0")")

# SIGTERM stops the container as the kubelet does (the CRI's StopContainer): the container's own process gets
# SIGTERM, and SIGKILL after the grace (CLUSTER_STOP_GRACE, the pod's terminationGracePeriodSeconds), however
# the podman client fares; a client killed alone would leave its container running.
# shellcheck disable=SC2317 # the TERM trap's
stop_container() {
    podman ps -q --filter "name=^$prefix-" | xargs -r podman stop --time "${CLUSTER_STOP_GRACE:-30}" >/dev/null || true
}
trap stop_container TERM
nsenter --net="/run/netns/$netns" env BPFNET_IMAGE="$image" BPFNET_IMAGE_ENV_FILE="$env_file" \
    "$here/../image/image_loader.sh" "$@" &
child=$!
status=0
wait "$child" || status=$?
while kill -0 "$child" 2>/dev/null; do
    status=0
    wait "$child" || status=$?
done
exit "$status"
