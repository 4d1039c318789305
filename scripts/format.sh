#!/usr/bin/env bash
# Formats every tracked source: C++ with the root .clang-format, the BPF programs, their headers and the map
# header they share with C++ in kernel style (bpf/.clang-format). The same file lists as scripts/lint.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -z -- '*.cpp' '*.hpp' | xargs -0 clang-format-14 -i
git ls-files -z -- '*.bpf.c' 'bpf/*.h' 'maps/bpfnet_maps.h' | xargs -0 clang-format-14 --style=file:bpf/.clang-format -i
