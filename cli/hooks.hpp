// What is attached where, read back from the kernel, and the one attach bpfnetctl does itself: the pod-side
// program on a backend's veth (backend set). A program counts as this datapath's when it uses the
// datapath's pinned maps (compared by map id), not merely when its name matches: a program left behind
// by another datapath, or by another bpfnet, is not ours.
#pragma once

#include "core/tc_hook.hpp"
#include "maps/unique_fd.hpp"

#include <linux/types.h>

#include <optional>
#include <string>

namespace bpfnet::cli {

struct HookState {
    bool attached = false;          // a program of this datapath is attached
    std::string program;            // its name; empty when nothing of ours is attached
    __u32 program_id = 0;           // 0 when nothing of ours is attached
    std::string mode;               // XDP only: "native", "generic" or "offload"
    std::optional<bool> dispatcher; // XDP only: through libxdp's multi-program dispatcher, or a plain attach
    std::string attach;             // TC only: "tcx" (a link pinned in the pin directory) or "clsact"
};

// The kernel id of the map behind fd: the datapath's identity when matching programs to it.
__u32 map_id_of(int map_fd);

// Our XDP program on ifindex, read back through libxdp (which also sees into its dispatcher).
HookState query_xdp(int ifindex, __u32 datapath_map_id);

// Our TC program on ifindex's ingress: through our tcx link pinned in pin_dir, or our clsact filter.
HookState query_tc_ingress(int ifindex, const std::string &pin_dir, __u32 datapath_map_id);

// A loaded tc_pod_ingress program of this datapath: held by the running loader, or attached to some veth.
// Invalid when there is none (the loader is not running and no veth carries it).
UniqueFd find_pod_program(__u32 datapath_map_id);

enum class PodHookAction { Attached, AlreadyAttached, Replaced };

// Puts prog_fd on ifindex's ingress the way the loader attached on this kernel (kind: from the iface map);
// one of ours that runs another program is replaced atomically.
PodHookAction attach_pod_program(int ifindex, int prog_fd, __u32 datapath_map_id, TcHookKind kind,
                                 const std::string &pin_dir);

// Removes bpfnet's program from ifindex's ingress, and nothing else (the CNI's programs stay). A veth that is
// gone, or has none of ours, is fine.
void detach_pod_program(int ifindex, const std::string &pin_dir);

} // namespace bpfnet::cli
