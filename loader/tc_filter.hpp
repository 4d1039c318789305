// bpfnet's TC filter, as the loader attaches it and bpfnetctl finds it: on a device's clsact ingress hook,
// identified by bpfnet's handle and priority, so nobody else's filter is ever touched.
#pragma once

#include "maps/bpfnet_maps.h"

#include <bpf/libbpf.h>

namespace bpfnet {

inline bpf_tc_hook ingress_hook(int ifindex) {
    bpf_tc_hook hook{};
    hook.sz = sizeof(hook);
    hook.ifindex = ifindex;
    hook.attach_point = BPF_TC_INGRESS;
    return hook;
}

// prog_fd 0 and flags 0 for a query or a detach.
inline bpf_tc_opts bpfnet_filter(int prog_fd, __u32 flags) {
    bpf_tc_opts opts{};
    opts.sz = sizeof(opts);
    opts.prog_fd = prog_fd;
    opts.flags = flags;
    opts.handle = BPFNET_TC_HANDLE;
    opts.priority = BPFNET_TC_PRIORITY;
    return opts;
}

} // namespace bpfnet
