// bpfnet's TC program on a device's ingress, as the loader attaches it and bpfnetctl finds it. Two kinds,
// chosen by the loader from its kernel probe:
//   tcx    a BPF link (kernel 6.6+), pinned at <pin dir>/tcx_ingress_<ifindex> so the attachment outlives
//          the loader process; updated in place with bpf_link_update when the program changes.
//   clsact a filter with bpfnet's handle and priority on the clsact qdisc (every kernel); replaced in place
//          with BPF_TC_F_REPLACE.
// Either way nobody else's program is touched: only our link pin, or our handle and priority.
#pragma once

#include "maps/bpfnet_maps.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <functional>
#include <optional>
#include <string>

namespace bpfnet {

// UAPI values from kernel 6.6; the system headers (Debian 12: 6.1) do not name them yet.
inline constexpr auto kBpfTcxIngress = static_cast<bpf_attach_type>(46); // BPF_TCX_INGRESS
inline constexpr __u32 kBpfLinkTypeTcx = 11;                             // BPF_LINK_TYPE_TCX
inline constexpr __u32 kBpfFBefore = 1U << 3;                            // BPF_F_BEFORE

enum class TcHookKind { Tcx, Clsact };
std::string to_string(TcHookKind kind);

enum class HookAction { Attached, Adopted, Replaced };
std::string to_string(HookAction action);

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

std::string tcx_link_pin(const std::string &pin_dir, int ifindex);

struct TcIngress {
    __u32 prog_id = 0;
    TcHookKind kind = TcHookKind::Clsact;
};

// bpfnet's program on ifindex's ingress: through our pinned tcx link, else our clsact filter.
std::optional<TcIngress> find_tc_ingress(int ifindex, const std::string &pin_dir);

// Puts prog_fd on ifindex's ingress as `kind`. When one of ours is there already it is adopted if
// same_program(its fd) says so, else replaced in place; one of the other kind is removed once the new
// one runs (a loader restarted with another --tc-attach, or after a kernel upgrade).
HookAction attach_tc_ingress(int ifindex, int prog_fd, TcHookKind kind, const std::string &pin_dir,
                             const std::function<bool(int attached_prog_fd)> &same_program);

// Removes ours of both kinds; a device that is gone, or carries nothing of ours, is fine.
void detach_tc_ingress(int ifindex, const std::string &pin_dir);

// Detaches and unpins every tcx link pinned in pin_dir (the teardown; finds links of veths long gone too).
void remove_tcx_links(const std::string &pin_dir);

} // namespace bpfnet
