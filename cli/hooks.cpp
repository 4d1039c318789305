#include "cli/hooks.hpp"
#include "core/program_info.hpp"
#include "core/tc_hook.hpp"

#include "maps/bpfnet_maps.h"
#include "maps/system_error.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

namespace bpfnet::cli {

namespace {

// Invalid when the program went away between listing and opening it.
UniqueFd prog_fd_by_id(__u32 id) {
    int fd = bpf_prog_get_fd_by_id(id);
    if (fd >= 0)
        return UniqueFd(fd);
    if (errno == ENOENT)
        return UniqueFd();
    throw SystemError("bpf_prog_get_fd_by_id " + std::to_string(id), errno);
}

// The hook state for program `id` if it belongs to this datapath; not attached otherwise.
HookState ours(__u32 id, __u32 datapath_map_id) {
    UniqueFd fd = prog_fd_by_id(id);
    if (!fd.valid())
        return {};
    ProgramInfo info = program_info(fd.get());
    if (!info.uses_map(datapath_map_id))
        return {};
    HookState state;
    state.attached = true;
    state.program = info.name;
    state.program_id = info.id;
    return state;
}

std::string xdp_mode_name(enum xdp_attach_mode mode) {
    switch (mode) {
    case XDP_MODE_SKB:
        return "generic";
    case XDP_MODE_HW:
        return "offload";
    default:
        return "native";
    }
}

} // namespace

__u32 map_id_of(int map_fd) {
    bpf_map_info info{};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(map_fd, &info, &len) != 0)
        throw SystemError("bpf_obj_get_info_by_fd (map)", errno);
    return info.id;
}

HookState query_xdp(int ifindex, __u32 datapath_map_id) {
    std::unique_ptr<xdp_multiprog, void (*)(xdp_multiprog *)> mp(xdp_multiprog__get_from_ifindex(ifindex),
                                                                 xdp_multiprog__close);
    long err = libxdp_get_error(mp.get());
    if (err || !mp) {
        mp.release(); // an error pointer, not an object to close
        // ENOENT: no XDP program; ENODEV: the interface is gone (and its programs with it).
        if (err == -ENOENT || err == -ENODEV || err == 0)
            return {};
        throw SystemError("xdp_multiprog__get_from_ifindex " + std::to_string(ifindex), static_cast<int>(-err));
    }
    bool dispatcher = !xdp_multiprog__is_legacy(mp.get());
    std::vector<const xdp_program *> programs;
    if (dispatcher) {
        for (xdp_program *p = xdp_multiprog__next_prog(nullptr, mp.get()); p; p = xdp_multiprog__next_prog(p, mp.get()))
            programs.push_back(p);
    } else if (const xdp_program *main = xdp_multiprog__main_prog(mp.get())) {
        programs.push_back(main);
    }
    for (const xdp_program *p : programs) {
        HookState state = ours(xdp_program__id(p), datapath_map_id);
        if (!state.attached)
            continue;
        state.mode = xdp_mode_name(xdp_multiprog__attach_mode(mp.get()));
        state.dispatcher = dispatcher;
        return state;
    }
    return {};
}

HookState query_tc_ingress(int ifindex, const std::string &pin_dir, __u32 datapath_map_id) {
    std::optional<TcIngress> found = find_tc_ingress(ifindex, pin_dir);
    if (!found)
        return {};
    HookState state = ours(found->prog_id, datapath_map_id);
    if (state.attached)
        state.attach = to_string(found->kind);
    return state;
}

UniqueFd find_pod_program(__u32 datapath_map_id) {
    UniqueFd best;
    __u32 best_id = 0;
    __u32 id = 0;
    while (bpf_prog_get_next_id(id, &id) == 0) {
        UniqueFd fd = prog_fd_by_id(id);
        if (!fd.valid())
            continue;
        ProgramInfo info = program_info(fd.get());
        if (info.type != BPF_PROG_TYPE_SCHED_CLS || info.name != BPFNET_PROG_TC_POD || !info.uses_map(datapath_map_id))
            continue;
        // Two instances share the maps while a restarted loader has adopted the old one; the newest is the
        // running loader's.
        if (id > best_id) {
            best = std::move(fd);
            best_id = id;
        }
    }
    if (errno != ENOENT)
        throw SystemError("bpf_prog_get_next_id", errno);
    return best;
}

PodHookAction attach_pod_program(int ifindex, int prog_fd, __u32 datapath_map_id, TcHookKind kind,
                                 const std::string &pin_dir) {
    const std::string wanted_tag = program_info(prog_fd).tag;
    auto same_program = [&](int attached_fd) {
        ProgramInfo attached = program_info(attached_fd);
        return attached.tag == wanted_tag && attached.uses_map(datapath_map_id);
    };
    switch (attach_tc_ingress(ifindex, prog_fd, kind, pin_dir, same_program)) {
    case HookAction::Adopted:
        return PodHookAction::AlreadyAttached;
    case HookAction::Replaced:
        return PodHookAction::Replaced;
    case HookAction::Attached:
        break;
    }
    return PodHookAction::Attached;
}

void detach_pod_program(int ifindex, const std::string &pin_dir) {
    detach_tc_ingress(ifindex, pin_dir);
}

} // namespace bpfnet::cli
