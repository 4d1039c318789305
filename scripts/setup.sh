#!/usr/bin/env bash
# Installs every Debian package that bpfnet's build, tests and demo need. Run as root on Debian 12.
# Idempotent: apt-get skips what is already there.
set -euo pipefail

packages=(
  # build: C++20 toolchain, both supported BPF compilers, skeleton generator, libraries
  build-essential cmake pkg-config clang-14 clang-16 llvm-14 clang-format-14 bpftool
  # scripts/test.sh: the release trees and the image's build stage share one compiler cache
  ccache
  # the sanitizer tree (scripts/test.sh) is built with clang-14: its ASan, UBSan and libFuzzer runtimes
  libclang-rt-14-dev
  # lint (scripts/lint.sh): the formatter above, shellcheck for the shell scripts, pyflakes for the Python ones
  shellcheck pyflakes3
  libbpf-dev libxdp-dev libelf-dev zlib1g-dev linux-libc-dev libcli11-dev libgtest-dev libgmock-dev
  libyaml-cpp-dev libmnl-dev nlohmann-json3-dev libcurl4-openssl-dev
  # tests and demo: namespaces, real traffic, servers and clients
  iproute2 util-linux procps psmisc ethtool iperf3 curl python3 xdp-tools
  # the PXE walk: real DHCP/TFTP servers and clients, OpenStack Ironic, capabilities
  dnsmasq-base kea-dhcp4-server busybox isc-dhcp-client tftp-hpa ironic-api libcap2-bin
  # DHCPv6 through the relay: Kea's DHCPv6 server, and dhcpcd as a second client beside dhclient -6
  kea-dhcp6-server dhcpcd-base
  # observability: the loader's metrics and health endpoints, and promtool to check the exposition
  libcpp-httplib-dev prometheus
  # Kubernetes mode: the manifest test (PyYAML from Debian), the API server stand-in's HTTP/2 (python3-h2)
  python3-yaml python3-h2
  # the kernel matrix (tests/vm): QEMU, and the tools that build the guest's initramfs; iPXE ROMs for the
  # PXE-booting guest of tests/e2e/test_firmware.sh; its UEFI walks: EDK2's firmware (ovmf) and the EFI iPXE
  # it chains (ipxe: snponly.efi)
  qemu-system-x86 cpio kmod xz-utils ipxe-qemu ovmf ipxe
  # the image (scripts/image.sh, Containerfile): podman builds and runs it, from base images mmdebstrap makes
  # of Debian packages (no registry needed); runc for hosts whose cgroups crun refuses (v1 or hybrid)
  podman mmdebstrap runc
  # docs/metal3.md's containerd nodes: the walkthrough test imports the image with ctr into a containerd of
  # its own (started in the test's sandbox, never as this machine's service)
  containerd
  # benchmarks (tests/bench): the alternatives bpfnet is measured against, and load generators
  haproxy nftables sockperf kea-admin atftp atftpd
  # the soak benchmark's plot (tests/bench/soak_plot.py)
  python3-matplotlib
  # kube-proxy's iptables-mode rules, written in the Kubernetes suite's pod_clients case (nftables is above);
  # its IPVS mode's virtual servers and sets (ipvs_pod_clients, in the kernel matrix's guests)
  iptables ipvsadm ipset
  # OVN-Kubernetes' shape: the pod's veth a port of an Open vSwitch bridge (E2E_CNI=ovs, in the kernel matrix's
  # guests: the host kernel has no openvswitch module); its daemons run in the test's namespaces only
  openvswitch-switch
)

if [ "$(id -u)" -ne 0 ]; then
  echo "setup.sh: run as root (it installs Debian packages)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# Servers are installed for the tests to start in namespaces, never as services of this machine.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod +x "$policy"
  trap 'rm -f "$policy"' EXIT
fi
# kubectl renders the manifests in the tests (kubectl kustomize): Debian's kubernetes-client, unless the
# machine already has a kubectl (another package owning /usr/bin/kubectl would conflict with it).
if ! command -v kubectl >/dev/null; then
  packages+=(kubernetes-client)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup.sh: installing ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup.sh: all packages present"
fi
# ...nor at this machine's next boot: the server packages enable their units when installed (atftpd's
# socket unit would own UDP 69 of the host). Removing the .wants links is what `systemctl disable` does,
# and works where systemd is not running.
for unit in atftpd.socket atftpd.service haproxy.service iperf3.service ironic-api.service \
  kea-dhcp4-server.service kea-dhcp6-server.service prometheus.service podman.service podman.socket \
  podman-restart.service podman-auto-update.service podman-auto-update.timer openvswitch-switch.service \
  ovsdb-server.service ovs-vswitchd.service ovs-record-hostname.service; do
  rm -f /etc/systemd/system/*.wants/"$unit"
done
