#!/usr/bin/env bash
# Cases of the end-to-end suites with every loader started from the image (tests/image/image_loader.sh): the
# same cases, now with the DaemonSet's security context and mounts. each_case.sh's arguments after the loader:
#
#   each_case_from_image.sh [--jobs N] SUITE[:CASE,...]...
#   env: BPFNET_IMAGE, BPFNET_IMAGE_REQUIRED=1 (a missing podman or image fails instead of skipping), and what
#        the suites read (BPFNETCTL: bpfnetctl beside the build's loader, since the loader here is a script)
set -uo pipefail

here=$(dirname "$(realpath "$0")")
root=$(cd "$here/../.." && pwd)
# shellcheck source=../../scripts/podman.sh
source "$root/scripts/podman.sh"
BPFNET_IMAGE=${BPFNET_IMAGE:-$(default_image "$root")}
export BPFNET_IMAGE

missing=""
if ! command -v podman >/dev/null; then
    missing="podman is not installed (scripts/setup.sh)"
elif ! podman image exists "$BPFNET_IMAGE"; then
    missing="no image $BPFNET_IMAGE (scripts/image.sh builds it)"
fi
if [ -n "$missing" ]; then
    if [ "${BPFNET_IMAGE_REQUIRED:-0}" = 1 ]; then
        echo "each_case_from_image: $missing (BPFNET_IMAGE_REQUIRED=1)" >&2
        exit 1
    fi
    echo "each_case_from_image: $missing; skipped" >&2
    exit 77
fi
jobs=()
if [ "${1:-}" = --jobs ]; then
    jobs=(--jobs "$2")
    shift 2
fi
exec bash "$root/tests/e2e/each_case.sh" "${jobs[@]}" "$here/image_loader.sh" "$@"
