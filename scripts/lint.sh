#!/usr/bin/env bash
# Checks the sources without changing them: the formatting scripts/format.sh would apply (C++ with the
# root .clang-format, the BPF programs and the shared map header in kernel style) and shellcheck's warnings
# for every script (each checked from its own folder, following what it sources). Exits non-zero on any.
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
find loader cli maps k8s tests \( -name '*.cpp' -o -name '*.hpp' \) -print0 |
  xargs -0 clang-format-14 --dry-run -Werror || status=1
find bpf tests \( -name '*.bpf.c' -o -path 'bpf/*.h' \) -print0 |
  xargs -0 clang-format-14 --style=file:bpf/.clang-format --dry-run -Werror || status=1
clang-format-14 --style=file:bpf/.clang-format --dry-run -Werror maps/bpfnet_maps.h || status=1

while IFS= read -r -d '' script; do
  (cd "$(dirname "$script")" && shellcheck -x -P SCRIPTDIR -S warning "$(basename "$script")") || status=1
done < <(find scripts tests .ci \( -name '*.sh' -o -path .ci/run \) -print0)

[ "$status" = 0 ] && echo "lint: formatting and shellcheck clean"
exit "$status"
