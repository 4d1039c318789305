#!/usr/bin/env bash
# Checks every tracked source without changing it: the formatting scripts/format.sh would apply (C++ with the
# root .clang-format; the BPF programs, their headers and the shared map header in kernel style), shellcheck's
# warnings for every shell script (each checked from its own folder, following what it sources) and
# pyflakes' for every Python script (unused imports and names, undefined names). The file lists come from
# git, so a new folder is linted without a change here. Exits non-zero on any finding.
set -euo pipefail
cd "$(dirname "$0")/.."

# tracked PATTERN...: the tracked files matching any PATTERN (git pathspecs), NUL-separated.
tracked() { git ls-files -z -- "$@"; }

status=0
# BPF C is kernel style; everything else in C++ style.
tracked '*.cpp' '*.hpp' | xargs -0 clang-format-14 --dry-run -Werror || status=1
tracked '*.bpf.c' 'bpf/*.h' 'maps/bpfnet_maps.h' |
  xargs -0 clang-format-14 --style=file:bpf/.clang-format --dry-run -Werror || status=1

# One shellcheck per script, as many at once as there are cores (each re-reads what its script sources).
# shellcheck disable=SC2016 # the inner script's $1 is its own
tracked '*.sh' .ci/run |
  xargs -0 -n 1 -P "$(nproc)" bash -c 'cd "$(dirname "$1")" && shellcheck -x -P SCRIPTDIR -S warning "$(basename "$1")"' \
    shellcheck-in-place || status=1

tracked '*.py' | xargs -0 pyflakes3 || status=1

[ "$status" = 0 ] && echo "lint: formatting, shellcheck and pyflakes clean"
exit "$status"
