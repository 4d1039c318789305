#include "core/datapath.hpp"

#include "bpfnet.skel.h"
#include "core/log.hpp"
#include "core/netlink.hpp"
#include "core/program_info.hpp"
#include "maps/flow_ports.hpp"
#include "maps/system_error.hpp"
#include "maps/unique_fd.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <xdp/libxdp.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string_view>
#include <vector>

namespace bpfnet {

namespace {

enum xdp_attach_mode libxdp_mode(XdpMode mode) {
    return mode == XdpMode::Native ? XDP_MODE_NATIVE : XDP_MODE_SKB;
}
__u32 xdp_flags(XdpMode mode) {
    return mode == XdpMode::Native ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
}

// The XDP programs on an interface as libxdp sees them, and ours among them.
struct XdpOnInterface {
    std::unique_ptr<xdp_multiprog, void (*)(xdp_multiprog *)> mp{nullptr, xdp_multiprog__close};
    xdp_program *ours = nullptr; // owned by mp
    bool dispatcher = false;
    XdpMode mode = XdpMode::Native;

    static XdpOnInterface read(int ifindex) {
        XdpOnInterface state;
        xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
        if (!mp || libxdp_get_error(mp))
            return state;
        state.mp.reset(mp);
        state.dispatcher = !xdp_multiprog__is_legacy(mp);
        state.mode = xdp_multiprog__attach_mode(mp) == XDP_MODE_SKB ? XdpMode::Generic : XdpMode::Native;
        if (!state.dispatcher) {
            xdp_program *main = xdp_multiprog__main_prog(mp);
            if (main && std::strcmp(xdp_program__name(main), BPFNET_PROG_XDP_NIC) == 0)
                state.ours = main;
            return state;
        }
        for (xdp_program *p = xdp_multiprog__next_prog(nullptr, mp); p; p = xdp_multiprog__next_prog(p, mp))
            if (std::strcmp(xdp_program__name(p), BPFNET_PROG_XDP_NIC) == 0)
                state.ours = p;
        return state;
    }
};

void ensure_pin_dir(const std::string &pin_dir) {
    std::error_code ec;
    std::filesystem::create_directories(pin_dir, ec);
    if (ec)
        throw SystemError("mkdir " + pin_dir, ec.value());
    struct statfs fs {};
    if (statfs(pin_dir.c_str(), &fs) != 0)
        throw SystemError("statfs " + pin_dir, errno);
    if (static_cast<unsigned long>(fs.f_type) != BPF_FS_MAGIC)
        throw SystemError(pin_dir + " is not on a bpf filesystem (mount -t bpf bpf /sys/fs/bpf)", ENOTSUP);
}

// Every map the object pins, and so every file a teardown removes (maps/bpfnet_maps.h declares them).
#define BPFNET_TABLE_MAP_NAME(name, key, value) BPFNET_MAP_NAME(name),
#define BPFNET_RING_MAP_NAME(name) BPFNET_MAP_NAME(name),
constexpr const char *kMapNames[] = {BPFNET_TABLE_MAPS(BPFNET_TABLE_MAP_NAME) BPFNET_MAP_NAME(BPFNET_COUNTERS_MAP),
                                     BPFNET_RING_MAPS(BPFNET_RING_MAP_NAME)};
#undef BPFNET_TABLE_MAP_NAME
#undef BPFNET_RING_MAP_NAME

// Pins the maps of the shared layout, so a restarted loader and bpfnetctl find them. Maps private to the
// programs (the trace scratch space) stay unpinned and go away with the programs.
void set_pin_paths(bpf_object *obj, const std::string &pin_dir) {
    for (const char *name : kMapNames) {
        bpf_map *map = bpf_object__find_map_by_name(obj, name);
        if (!map)
            throw SystemError(std::string("bpf_object__find_map_by_name ") + name, ENOENT);
        std::string path = pin_dir + "/" + name;
        check_libbpf(bpf_map__set_pin_path(map, path.c_str()), "bpf_map__set_pin_path " + path);
    }
}

// What differs between a pinned map and the object's map of the same name ("" when libbpf can re-use the pin).
std::string layout_difference(const bpf_map *map, const bpf_map_info &pinned) {
    auto differs = [](const char *what, uint64_t have, uint64_t want) {
        return std::string(what) + " " + std::to_string(have) + " (this build: " + std::to_string(want) + ")";
    };
    if (pinned.type != bpf_map__type(map))
        return differs("type", pinned.type, bpf_map__type(map));
    if (pinned.key_size != bpf_map__key_size(map))
        return differs("key size", pinned.key_size, bpf_map__key_size(map));
    if (pinned.value_size != bpf_map__value_size(map))
        return differs("value size", pinned.value_size, bpf_map__value_size(map));
    if (pinned.max_entries != bpf_map__max_entries(map))
        return differs("max entries", pinned.max_entries, bpf_map__max_entries(map));
    if (pinned.map_flags != bpf_map__map_flags(map))
        return differs("flags", pinned.map_flags, bpf_map__map_flags(map));
    return {};
}

// A map pinned by a build with another layout (a counter added, a table resized) cannot be re-used, and
// libbpf would refuse to load at all: an upgrade would stop at the first loader. Such a pin is removed (the
// old programs keep their map until they are replaced) and the map created afresh, its contents lost.
void replace_incompatible_pins(bpf_object *obj, const std::string &pin_dir) {
    for (const char *name : kMapNames) {
        const std::string path = pin_dir + "/" + name;
        UniqueFd fd(bpf_obj_get(path.c_str()));
        if (!fd.valid())
            continue; // not pinned yet
        bpf_map_info info{};
        __u32 len = sizeof(info);
        if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0)
            throw SystemError("bpf_obj_get_info_by_fd " + path, errno);
        const std::string difference = layout_difference(bpf_object__find_map_by_name(obj, name), info);
        if (difference.empty())
            continue;
        if (::unlink(path.c_str()) != 0)
            throw SystemError("unlink " + path, errno);
        log_warn("pinned map from another layout replaced; its contents are lost",
                 {{"map", name}, {"pinned", difference}});
    }
}

void detach_xdp(int ifindex) {
    XdpOnInterface state = XdpOnInterface::read(ifindex);
    if (!state.ours)
        return;
    check_libbpf(xdp_program__detach(state.ours, ifindex, libxdp_mode(state.mode), 0), "xdp_program__detach");
}

} // namespace

std::string describe(const XdpAttachment &xdp) {
    std::string text =
        to_string(xdp.mode) + (xdp.dispatcher ? " via libxdp dispatcher" : " plain attach (no dispatcher)");
    if (!xdp.native_refused.empty())
        text += "; native refused: " + xdp.native_refused;
    return text;
}

Datapath::Datapath(const DatapathOptions &options) : options_(options), skel_(nullptr, bpfnet_bpf__destroy) {
    nic_ifindex_ = link_by_name(options.interface).ifindex;
    // Maps an earlier loader pinned are adopted (and keep their flows); maps this start pins are removed
    // again if the start fails, so a failed start leaves nothing behind.
    bool fresh_pins = !std::filesystem::exists(options.pin_dir + "/" BPFNET_MAP_NAME(iface));
    ensure_pin_dir(options.pin_dir);

    open_object();

    std::vector<std::function<void()>> rollback;
    if (fresh_pins)
        rollback.emplace_back([this] { unpin_maps(); });
    try {
        load_and_attach_xdp(options.xdp_mode);
        if (xdp_.action == HookAction::Attached)
            rollback.emplace_back([this] { detach_xdp(nic_ifindex_); });
        attach_nic_tc();
        if (tc_nic_action_ == HookAction::Attached)
            rollback.emplace_back([this] { detach_tc_ingress(nic_ifindex_, options_.pin_dir); });
        maps_.emplace(DatapathMaps::from_skeleton(*skel_));
        mark_adopted_flow_ports(true);
    } catch (...) {
        for (auto it = rollback.rbegin(); it != rollback.rend(); ++it) {
            try {
                (*it)();
            } catch (const std::exception &e) {
                log_error("rollback step failed", {{"error", e.what()}});
            }
        }
        throw;
    }
}

// A fresh, unloaded object: its maps to be pinned (or re-used) under the pin directory, its constants set.
void Datapath::open_object() {
    skel_.reset(bpfnet_bpf__open());
    if (!skel_)
        throw SystemError("bpfnet_bpf__open", errno);
    skel_->rodata->kernel_has_redirect_peer = options_.redirect_peer;
    skel_->rodata->kernel_reads_skb_csum = options_.skb_csum_state;
    set_pin_paths(skel_->obj, options_.pin_dir);
    replace_incompatible_pins(skel_->obj, options_.pin_dir);
    // Only flows pinned before this start can lack their marks: on a fresh install every flow is recorded by
    // these programs, which mark it.
    flow_ports_created_ = !std::filesystem::exists(options_.pin_dir + "/" BPFNET_MAP_NAME(flow_ports)) &&
                          std::filesystem::exists(options_.pin_dir + "/" BPFNET_MAP_NAME(flows));
}

// flow_ports created by this start next to flows pinned before it (an upgrade from a build without it): the
// ports of those flows are marked, or the hosts' answers on them would skip the flow tables and be dropped. Until every
// pod hook is ours again, the old programs there still record flows without marking them, so this runs again after each
// pod hook attached in this loader's life (only after such an upgrade: a fresh install or a restart has nothing
// to mark).
void Datapath::mark_adopted_flow_ports(bool report) {
    if (!flow_ports_created_)
        return;
    if (std::size_t flows = mark_ports_of_flows(*maps_); flows > 0 && report)
        log_info("ports of pinned flows marked in the new flow_ports map", {{"flows", std::to_string(flows)}});
}

void Datapath::unpin_maps() {
    bpf_map *map;
    bpf_object__for_each_map(map, skel_->obj) {
        if (bpf_map__is_pinned(map))
            bpf_map__unpin(map, nullptr);
    }
    std::error_code ec;
    std::filesystem::remove(options_.pin_dir, ec);
}

Datapath::~Datapath() = default;

int Datapath::events_fd() const {
    return bpf_map__fd(skel_->maps.events);
}

void Datapath::load_and_attach_xdp(XdpMode mode) {
    XdpOnInterface current = XdpOnInterface::read(nic_ifindex_);

    if (current.ours && (mode == XdpMode::Auto || current.mode == mode)) {
        xdp_.mode = current.mode;
        check_libbpf(bpfnet_bpf__load(skel_.get()), "bpfnet_bpf__load");
        int new_fd = bpf_program__fd(skel_->progs.xdp_nic);
        xdp_.dispatcher = current.dispatcher;
        if (same_program(xdp_program__fd(current.ours), new_fd)) {
            xdp_.action = HookAction::Adopted;
            return;
        }
        if (!current.dispatcher) {
            LIBBPF_OPTS(bpf_xdp_attach_opts, replace, .old_prog_fd = xdp_program__fd(current.ours));
            check_libbpf(bpf_xdp_attach(nic_ifindex_, new_fd, xdp_flags(current.mode) | XDP_FLAGS_REPLACE, &replace),
                         "bpf_xdp_attach (replace) " + options_.interface);
        } else {
            // A dispatcher is rebuilt by libxdp; there is no in-place replace of one component.
            check_libbpf(xdp_program__detach(current.ours, nic_ifindex_, libxdp_mode(current.mode), 0),
                         "xdp_program__detach");
            std::unique_ptr<xdp_program, void (*)(xdp_program *)> prog(xdp_program__from_fd(new_fd),
                                                                       xdp_program__close);
            check_libbpf(static_cast<int>(libxdp_get_error(prog.get())), "xdp_program__from_fd");
            check_libbpf(xdp_program__attach(prog.get(), nic_ifindex_, libxdp_mode(current.mode), 0),
                         "xdp_program__attach");
        }
        xdp_.action = HookAction::Replaced;
        return;
    }
    if (current.ours) {
        log_info("xdp mode changes: detaching the old program",
                 {{"iface", options_.interface}, {"from", to_string(current.mode)}, {"to", to_string(mode)}});
        detach_xdp(nic_ifindex_);
    }
    if (mode != XdpMode::Auto) {
        attach_xdp_program(mode);
        return;
    }
    // auto: native where the driver has XDP support, generic (in the stack, slower) where it has none.
    try {
        attach_xdp_program(XdpMode::Native);
    } catch (const SystemError &e) {
        if (e.code().value() != EOPNOTSUPP)
            throw;
        xdp_.native_refused = e.what();
        // The failed attempt left the object loaded (as a dispatcher component where libxdp tried one):
        // the generic attach starts from a fresh one, which re-uses the maps it pinned.
        open_object();
        attach_xdp_program(XdpMode::Generic);
    }
}

// libxdp loads the object itself: as a dispatcher component where the kernel allows it, else plain. Where it
// may not load its dispatcher (the DaemonSet's capabilities), libbpf warns about that load before libxdp falls
// back: expected, and the outcome is logged as the attach (plain, no dispatcher); a failed attach throws.
void Datapath::attach_xdp_program(XdpMode mode) {
    DECLARE_LIBXDP_OPTS(xdp_program_opts, opts, .obj = skel_->obj, .prog_name = BPFNET_PROG_XDP_NIC);
    std::unique_ptr<xdp_program, void (*)(xdp_program *)> prog(xdp_program__create(&opts), xdp_program__close);
    check_libbpf(static_cast<int>(libxdp_get_error(prog.get())), "xdp_program__create");
    int attached = 0;
    {
        ExpectedLibraryFailures dispatcher_may_fail;
        attached = xdp_program__attach(prog.get(), nic_ifindex_, libxdp_mode(mode), 0);
    }
    check_libbpf(attached, "xdp_program__attach " + options_.interface + " (" + to_string(mode) + ")");
    xdp_.mode = mode;
    xdp_.action = HookAction::Attached;
    xdp_.dispatcher = XdpOnInterface::read(nic_ifindex_).dispatcher;
}

// An attached program is adopted when it is the one this object would load: same instructions (tag), same
// load-time constants, and the same pinned maps (the tag does not cover maps: after a pin from another layout
// was replaced, the attached program still uses the old map, and adopting it would leave it blind to the
// maps the loader writes).
bool Datapath::same_program(int attached_prog_fd, int our_prog_fd) const {
    const ProgramInfo attached = program_info(attached_prog_fd), ours = program_info(our_prog_fd);
    if (attached.tag != ours.tag || program_rodata(attached) != program_rodata(ours))
        return false;
    for (const char *name : kMapNames) {
        bpf_map_info info{};
        __u32 len = sizeof(info);
        const bpf_map *map = bpf_object__find_map_by_name(skel_->obj, name);
        if (!map || bpf_obj_get_info_by_fd(bpf_map__fd(map), &info, &len) != 0)
            continue;
        if (ours.uses_map(info.id) && !attached.uses_map(info.id))
            return false;
    }
    return true;
}

void Datapath::attach_nic_tc() {
    int fd = bpf_program__fd(skel_->progs.tc_nic_ingress);
    tc_nic_action_ = attach_tc_ingress(nic_ifindex_, fd, options_.tc, options_.pin_dir,
                                       [&](int attached) { return same_program(attached, fd); });
}

HookAction Datapath::attach_pod_hook(int ifindex) {
    int fd = bpf_program__fd(skel_->progs.tc_pod_ingress);
    HookAction action = attach_tc_ingress(ifindex, fd, options_.tc, options_.pin_dir,
                                          [&](int attached) { return same_program(attached, fd); });
    mark_adopted_flow_ports(false);
    return action;
}

void Datapath::detach_pod_hook(int ifindex) {
    detach_tc_ingress(ifindex, options_.pin_dir);
}

void Datapath::remove(const DatapathOptions &options) {
    // An interface that is gone took its programs with it; its pins still have to go.
    int nic = 0;
    try {
        nic = link_by_name(options.interface).ifindex;
    } catch (const SystemError &e) {
        if (e.code().value() != ENODEV)
            throw;
    }
    // The pod hooks are found through the backends the maps still list.
    if (std::filesystem::exists(options.pin_dir + "/" BPFNET_MAP_NAME(backends))) {
        auto backends = PinnedMap<bpfnet_ip, bpfnet_backend>::open(options.pin_dir, BPFNET_MAP_NAME(backends));
        for (const auto &[ip, backend] : backends.entries())
            detach_tc_ingress(static_cast<int>(backend.ifindex), options.pin_dir);
    }
    if (nic != 0) {
        detach_tc_ingress(nic, options.pin_dir);
        detach_xdp(nic);
    }
    remove_tcx_links(options.pin_dir);
    for (const char *name : kMapNames) {
        std::error_code ec;
        std::filesystem::remove(options.pin_dir + "/" + name, ec);
    }
    std::error_code ec;
    std::filesystem::remove(options.pin_dir, ec);
    if (ec)
        throw SystemError("rmdir " + options.pin_dir + " (files not made by bpfnet in it?)", ec.value());
}

} // namespace bpfnet
