#!/usr/bin/env bash
# A LOADER for the end-to-end suites that runs bpfnet-loader from the image, as the DaemonSet runs it on a
# node: `podman run` with the flags daemonset_flags.py reads off k8s/manifests (host network, which here is
# the network namespace this script was started in: the test's node; capabilities; read-only root; the
# bpffs and the control socket's directory), plus the directory of --config or --kubeconfig, read-only, as a
# ConfigMap or Secret volume would give it. Arguments are the loader's. Signals reach the loader (podman's signal proxy), and
# its exit status is this script's.
#
#   env: BPFNET_IMAGE             the image (default docker.io/bpfnet/bpfnet-loader:VERSION, as scripts/image.sh tags it)
#        BPFNET_IMAGE_DROP_CAP    a capability of the DaemonSet's to leave out (the capability cases)
#        BPFNET_IMAGE_CONTAINER_PREFIX   the container's name before -PID (default bpfnet-image-RANDOM)
#        BPFNET_IMAGE_ENV_FILE    the container's environment (NAME=VALUE lines), as the kubelet resolved it
set -euo pipefail

here=$(dirname "$(realpath "$0")")
root=$(cd "$here/../.." && pwd)
# shellcheck source=../../scripts/podman.sh
source "$root/scripts/podman.sh"

image=${BPFNET_IMAGE:-$(default_image "$root")}

drop=()
env_file=()
[ -n "${BPFNET_IMAGE_ENV_FILE:-}" ] && env_file=(--env-file "$BPFNET_IMAGE_ENV_FILE")
[ -n "${BPFNET_IMAGE_DROP_CAP:-}" ] && drop=(--drop "$BPFNET_IMAGE_DROP_CAP")
mapfile -t daemonset < <(python3 "$here/daemonset_flags.py" --control-dir /run/bpfnet "${drop[@]}")
[ "${#daemonset[@]}" -gt 0 ] || exit 2
mapfile -t host < <(podman_host_flags)

# The files the loader is pointed at, each directory read-only at its own path, as a ConfigMap or Secret
# volume would give them: the standalone config, or Kubernetes mode's kubeconfig (with its token and CA files).
config_mount=()
args=("$@")
for i in "${!args[@]}"; do
    case ${args[$i]} in
    --config | -c | --kubeconfig)
        dir=$(dirname "$(realpath "${args[$((i + 1))]}")")
        config_mount+=(--volume="$dir:$dir:ro")
        ;;
    esac
done

# Named so that a suite's cleanup finds what a killed podman left (podman rm -f by this prefix): the prefix is
# the suite's own (cases run side by side, each in a pid namespace of its own, so $$ alone may repeat).
prefix=${BPFNET_IMAGE_CONTAINER_PREFIX:-bpfnet-image-$(cut -c1-8 /proc/sys/kernel/random/uuid)}
exec podman run --rm --name "$prefix-$$" --log-driver=none \
    "${host[@]}" "${daemonset[@]}" \
    "${config_mount[@]}" "${env_file[@]}" "$image" "$@"
