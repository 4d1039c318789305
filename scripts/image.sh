#!/usr/bin/env bash
# Builds the bpfnet image (Containerfile: bpfnet-loader and bpfnetctl) with podman, and checks what it built.
#
#   scripts/image.sh [--bases debian|registry] [--tag NAME] [--save FILE] [--ccache DIR] [--bases-only]
#
#   --bases debian    (default) the two base images are made here from Debian packages (mmdebstrap, then
#                     podman import), with the stages' packages already in them (scripts/image-packages.sh):
#                     needs a Debian mirror, no container registry. Kept between runs while the package
#                     lists are unchanged.
#   --bases registry  the Containerfile's own bases (debian:bookworm, debian:bookworm-slim from docker.io)
#   --tag NAME        the image's name (default docker.io/bpfnet/bpfnet-loader:VERSION, VERSION from CMakeLists.txt:
#                     the name the DaemonSet's image bpfnet/bpfnet-loader:VERSION means to a node's runtime)
#   --save FILE       also writes the image as a docker-archive (for `ctr -n k8s.io images import FILE`, `kind
#                     load image-archive FILE` or `podman load`), for clusters that pull from no registry
#   --ccache DIR      the build stage compiles through ccache with its cache at DIR (scripts/ccache.sh): what
#                     scripts/test.sh's release trees compiled is not compiled again. The binaries are the same.
#   --bases-only      only makes the Debian base images (scripts/test.sh makes them while it compiles)
#
# env: DEBIAN_MIRROR (http://deb.debian.org/debian), DEBIAN_SECURITY_MIRROR (http://deb.debian.org/debian-security),
#      BPFNET_IMAGE_CCACHE (a default for --ccache)
# Prints the image's name, size and `--version`. Run as root (mmdebstrap and rootful podman).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=image-packages.sh
source "$root/scripts/image-packages.sh"
# shellcheck source=podman.sh
source "$root/scripts/podman.sh"

version=$(bpfnet_version "$root")
bases=debian
tag=$(default_image "$root")
save=""
ccache_dir=${BPFNET_IMAGE_CCACHE:-}
bases_only=0
while [ $# -gt 0 ]; do
    case "$1" in
    --bases) bases=${2:?--bases needs debian or registry}; shift 2 ;;
    --tag) tag=${2:?--tag needs a name}; shift 2 ;;
    --save) save=${2:?--save needs a file}; shift 2 ;;
    --ccache) ccache_dir=${2:?--ccache needs a directory}; shift 2 ;;
    --bases-only) bases_only=1; shift ;;
    -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "image.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case "$bases" in
debian | registry) ;;
*) echo "image.sh: --bases is debian or registry, not '$bases'" >&2; exit 2 ;;
esac
if [ "$bases_only" = 1 ] && [ "$bases" != debian ]; then
    echo "image.sh: --bases-only makes the Debian bases: it goes with --bases debian" >&2
    exit 2
fi
for tool in podman $([ "$bases" = debian ] && echo mmdebstrap); do
    command -v "$tool" >/dev/null || { echo "image.sh: $tool not found (scripts/setup.sh installs it)" >&2; exit 1; }
done

mapfile -t host_flags < <(podman_host_flags)
[ "${#host_flags[@]}" -gt 0 ] && echo "image.sh: podman flags for this host: ${host_flags[*]}"

mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security_mirror=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
# The hash of the package lists and of this script labels each base, so a base is made again only when what
# makes it changed.
packages_hash=$(cat "$root/scripts/image-packages.sh" "$0" | sha256sum | cut -c1-16)

# debian_base NAME VARIANT PACKAGES: the base image NAME (Debian 12, mmdebstrap's VARIANT, with PACKAGES),
# made unless an image of that name was made from the same package lists. No recommended packages, no
# documentation, manual pages or translations, and /usr merged by mmdebstrap's hook rather than by the
# usrmerge package (which would bring perl: 47 MiB). The runtime base (variant essential) has no apt at all.
debian_base() {
    local name=$1 variant=$2 packages=$3 made tarball
    made=$(podman image inspect --format '{{index .Labels "bpfnet.packages"}}' "$name" 2>/dev/null || true)
    if [ "$made" = "$packages_hash" ]; then
        echo "image.sh: base $name is up to date"
        return
    fi
    tarball=$(mktemp /tmp/bpfnet-base.XXXXXX.tar)
    echo "image.sh: making base $name (mmdebstrap --variant=$variant)"
    local t0=$SECONDS
    # mmdebstrap's hooks and apt talk even with --quiet: their output is shown only if it fails.
    # shellcheck disable=SC2086 # the package list is a word list
    if ! mmdebstrap --quiet --variant="$variant" --include="$(echo $packages | tr ' ' ,)" \
        --aptopt='APT::Install-Recommends "false"' --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
        --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
        bookworm "$tarball" "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
        "deb $security_mirror bookworm-security main" >"$tarball.log" 2>&1; then
        cat "$tarball.log" >&2
        rm -f "$tarball" "$tarball.log"
        echo "image.sh: mmdebstrap failed for $name" >&2
        exit 1
    fi
    podman import --quiet --change "LABEL bpfnet.packages=$packages_hash" "$tarball" "$name" >/dev/null
    rm -f "$tarball" "$tarball.log"
    echo "image.sh: base $name made in $((SECONDS - t0)) s"
}

# Nothing of this machine's network may change (podman's default network would add a bridge, NAT rules and
# turn on IPv4 forwarding, which every new network namespace then inherits): the build runs without a network
# when the bases hold every package, and in the machine's own network namespace, creating nothing, when apt
# must fetch them; the check runs without one. The machine's network state is compared before and after.
network_state() {
    ip -br link | awk '{print $1, $3}'
    ip -br addr
    sysctl -n net.ipv4.ip_forward net.ipv6.conf.all.forwarding
    if command -v nft >/dev/null; then nft list ruleset 2>/dev/null | sha256sum; fi
}
network_before=$(network_state)

# debian_bases: both bases, side by side: mmdebstrap spends most of its time in one process (unpacking, dpkg).
debian_bases() {
    local build_base runtime_base rc=0
    debian_base localhost/bpfnet-build-base:bookworm apt "$BUILD_PACKAGES" &
    build_base=$!
    debian_base localhost/bpfnet-runtime-base:bookworm essential "$RUNTIME_PACKAGES" &
    runtime_base=$!
    wait "$build_base" || rc=1
    wait "$runtime_base" || rc=1
    return "$rc"
}

# network_unchanged: fails, showing the difference, if this machine's network changed since the start.
network_unchanged() {
    [ "$(network_state)" = "$network_before" ] && return 0
    echo "image.sh: this machine's network changed during the build (links, addresses, forwarding or nftables):" >&2
    diff <(echo "$network_before") <(network_state) >&2
    return 1
}

build_args=(--network=host)
if [ "$bases" = debian ]; then
    debian_bases
    if [ "$bases_only" = 1 ]; then
        network_unchanged
        exit
    fi
    build_args=(--network=none --build-arg BUILD_BASE=localhost/bpfnet-build-base:bookworm
        --build-arg RUNTIME_BASE=localhost/bpfnet-runtime-base:bookworm)
fi

if [ -n "$ccache_dir" ]; then
    mkdir -p "$ccache_dir"
    build_args+=(--volume "$(realpath "$ccache_dir"):/ccache" --build-arg CCACHE=1)
fi

echo "image.sh: building $tag"
t0=$SECONDS
podman build "${host_flags[@]}" "${build_args[@]}" --tag "$tag" --file "$root/Containerfile" "$root"

# What was built: the version it reports must be the project's, and the size is reported.
reported=$(podman run --rm --network=none "${host_flags[@]}" "$tag" --version)
if [ "$reported" != "bpfnet-loader $version" ]; then
    echo "image.sh: the image reports '$reported', not bpfnet-loader $version" >&2
    exit 1
fi
size=$(podman image inspect --format '{{.Size}}' "$tag")
echo "image.sh: $tag ($reported), $((size / 1024 / 1024)) MiB, built in $((SECONDS - t0)) s"
if [ -n "$save" ]; then
    podman save --quiet --format docker-archive --output "$save" "$tag"
    echo "image.sh: saved to $save"
fi
network_unchanged
