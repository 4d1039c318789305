# Sourced by scripts/image.sh and the image's tests: the image's name, and the podman flags this host needs, chosen from what the kernel
# and the process limits say, each told in one line when it departs from podman's defaults.
# shellcheck shell=bash

# bpfnet_version ROOT: the project's version (project() in ROOT/CMakeLists.txt).
bpfnet_version() {
    sed -n 's/^project(bpfnet VERSION \([0-9.]*\).*/\1/p' "$1/CMakeLists.txt"
}

# default_image ROOT: the image's name as scripts/image.sh tags it and the DaemonSet's bpfnet/bpfnet-loader:VERSION
# means to a node's container runtime.
default_image() {
    echo "docker.io/bpfnet/bpfnet-loader:$(bpfnet_version "$1")"
}

# podman_host_flags: prints (one per line) the flags for `podman build` and `podman run` on this host.
#  - crun refuses a host whose cgroups are v1 or hybrid ("cgroups in hybrid mode not supported"); runc
#    (Debian's runc) runs there.
#  - podman asks for RLIMIT_NOFILE 1048576 and lowers its own RLIMIT_NPROC to 32768; without
#    CAP_SYS_RESOURCE a container cannot be given more than the caller's hard limits, so ask for those.
podman_host_flags() {
    if [ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" != cgroup2fs ]; then
        echo "--runtime=runc"
    fi
    local nofile nproc
    nofile=$(ulimit -Hn)
    nproc=$(ulimit -Hu)
    [ "$nofile" = unlimited ] && nofile=1048576
    { [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; } && nproc=32768
    echo "--ulimit=nofile=$nofile:$nofile"
    echo "--ulimit=nproc=$nproc:$nproc"
}
