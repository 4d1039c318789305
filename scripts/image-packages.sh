# The Debian packages of the image's two stages, read by the Containerfile (sourced by its RUN steps) and by
# scripts/image.sh (which can bake them into locally built base images when no registry is reachable).
# shellcheck shell=sh disable=SC2034

# The build stage: the C++ toolchain, the BPF compiler and skeleton generator, the -dev packages of the
# libraries the two binaries link (no test frameworks: the image builds with BUILD_TESTING off), and ccache
# for a build given a cache (scripts/image.sh --ccache DIR).
BUILD_PACKAGES="build-essential cmake pkg-config clang-14 llvm-14 bpftool linux-libc-dev libbpf-dev libxdp-dev
libelf-dev zlib1g-dev libcli11-dev libyaml-cpp-dev libmnl-dev nlohmann-json3-dev libcurl4-openssl-dev
libcpp-httplib-dev ccache"

# The runtime stage: only what bpfnet-loader and bpfnetctl load. libxdp1 carries the XDP dispatcher object
# (/usr/lib/x86_64-linux-gnu/bpf/xdp-dispatcher.o) that libxdp loads to share the NIC's XDP hook.
RUNTIME_PACKAGES="libbpf1 libxdp1 libelf1 zlib1g libcurl4 libyaml-cpp0.7 libmnl0 libcpp-httplib0.11"

# missing_packages PACKAGE...: prints those of PACKAGE... that dpkg does not have installed.
missing_packages() {
    for package in "$@"; do
        dpkg-query -W -f='${db:Status-Status}\n' "$package" 2>/dev/null | grep -qx installed || echo "$package"
    done
}
