#!/bin/busybox sh
# shellcheck shell=dash
# /init of the VM tier's initramfs (tests/vm/run.sh builds it): loads the modules the tests need, mounts the
# host's root read-only over 9p, and runs tests/vm/guest.sh chrooted into it, with its output on the second
# serial port (the host reads it from a file). Then powers off; a missing "DONE" line means the guest died.
/bin/busybox mkdir -p /proc /sys /dev /host
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
# The initramfs has no /dev/console node, so the kernel started us without stdio: the console log needs it.
exec </dev/console >/dev/console 2>&1
for m in $(/bin/busybox cat /modules.order); do
    /bin/busybox insmod "/modules/$m" 2>/dev/null || echo "init: insmod $m failed"
done
out=/dev/ttyS1
if ! /bin/busybox mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose host0 /host; then
    echo "FATAL cannot mount the host's root over 9p" >"$out"
    /bin/busybox poweroff -f
fi
repo=$(/bin/busybox sed -n 's/.*bpfnet.repo=\([^ ]*\).*/\1/p' /proc/cmdline)
suites=$(/bin/busybox sed -n 's/.*bpfnet.suites=\([^ ]*\).*/\1/p' /proc/cmdline)
build=$(/bin/busybox sed -n 's/.*bpfnet.build=\([^ ]*\).*/\1/p' /proc/cmdline)
scale=$(/bin/busybox sed -n 's/.*bpfnet.scale=\([^ ]*\).*/\1/p' /proc/cmdline)
# The checkout (and a build tree outside it) may sit below a directory that gets a fresh tmpfs next (a CI
# checkout under /tmp): held by bind mounts first, put back at the same paths after.
/bin/busybox mkdir -p /keep/repo /keep/build
/bin/busybox mount -o bind "/host$repo" /keep/repo
/bin/busybox mount -o bind "/host$build" /keep/build
for fs in "proc /proc" "sysfs /sys" "devtmpfs /dev" "tmpfs /tmp" "tmpfs /run" "tmpfs /var/tmp" "tmpfs /root"; do
    set -- $fs
    /bin/busybox mount -t "$1" "$1" "/host$2" || echo "init: cannot mount $1 on /host$2"
done
for kept in "repo $repo" "build $build"; do
    set -- $kept
    if [ ! -d "/host$2" ] || [ -z "$(/bin/busybox ls -A "/host$2")" ]; then
        /bin/busybox mkdir -p "/host$2" && /bin/busybox mount -o bind "/keep/$1" "/host$2"
    fi
done
/bin/busybox mount -t bpf bpf /host/sys/fs/bpf
/bin/busybox mkdir -p /host/dev/pts /host/dev/shm
/bin/busybox mount -t devpts devpts /host/dev/pts 2>/dev/null
/bin/busybox mount -t tmpfs tmpfs /host/dev/shm
# What udev would create: bash's process substitution (<(...)) opens /dev/fd/N.
/bin/busybox ln -sf /proc/self/fd /host/dev/fd
/bin/busybox ln -sf /proc/self/fd/0 /host/dev/stdin
/bin/busybox ln -sf /proc/self/fd/1 /host/dev/stdout
/bin/busybox ln -sf /proc/self/fd/2 /host/dev/stderr
/bin/busybox chroot /host /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 /bin/bash "$repo/tests/vm/guest.sh" "$repo" "$suites" "$build" "${scale:-1}" >"$out" 2>&1
/bin/busybox sync
/bin/busybox poweroff -f
