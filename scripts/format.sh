#!/usr/bin/env bash
# Formats the sources: C++ with the root .clang-format, the BPF programs and the map header they share
# with C++ in kernel style (bpf/.clang-format).
set -euo pipefail
cd "$(dirname "$0")/.."
find core standalone loader cli maps k8s tests \( -name '*.cpp' -o -name '*.hpp' \) -print0 | xargs -0 clang-format-14 -i
find bpf tests \( -name '*.bpf.c' -o -path 'bpf/*.h' \) -print0 | xargs -0 clang-format-14 --style=file:bpf/.clang-format -i
clang-format-14 --style=file:bpf/.clang-format -i maps/bpfnet_maps.h
