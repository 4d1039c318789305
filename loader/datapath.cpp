#include "datapath.hpp"

#include "bpfnet.skel.h"
#include "log.hpp"
#include "maps/system_error.hpp"
#include "netlink.hpp"
#include "tc_filter.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <xdp/libxdp.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <vector>

namespace bpfnet {

namespace {

using ProgTag = std::array<unsigned char, BPF_TAG_SIZE>;

ProgTag prog_tag(int prog_fd) {
    bpf_prog_info info{};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) != 0)
        throw SystemError("bpf_obj_get_info_by_fd (program)", errno);
    ProgTag tag{};
    std::memcpy(tag.data(), info.tag, tag.size());
    return tag;
}

UniqueFd prog_fd_by_id(__u32 id) {
    int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0)
        throw SystemError("bpf_prog_get_fd_by_id " + std::to_string(id), errno);
    return UniqueFd(fd);
}

// libbpf and libxdp return negative error codes; turn one into an exception naming the call.
void check(int err, const std::string &call) {
    if (err < 0)
        throw SystemError(call, -err);
}

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

// Every map the object pins, and so every file a teardown removes.
constexpr const char *kMapNames[] = {BPFNET_MAP_IFACE,         BPFNET_MAP_HEARTBEAT,     BPFNET_MAP_SERVICE_IPS,
                                     BPFNET_MAP_SERVICES,      BPFNET_MAP_BACKEND_PORTS, BPFNET_MAP_BACKENDS,
                                     BPFNET_MAP_FLOWS,         BPFNET_MAP_NEIGHBOURS,    BPFNET_MAP_COUNTERS,
                                     BPFNET_MAP_EVENTS,        BPFNET_MAP_DHCP_SERVERS,  BPFNET_MAP_CONFLICTS,
                                     BPFNET_MAP_TRACE_CONTROL, BPFNET_MAP_TRACE};

// Pins the maps of the shared layout, so a restarted loader and bpfnetctl find them. Maps private to the
// programs (the trace scratch space) stay unpinned and go away with the programs.
void set_pin_paths(bpf_object *obj, const std::string &pin_dir) {
    for (const char *name : kMapNames) {
        bpf_map *map = bpf_object__find_map_by_name(obj, name);
        if (!map)
            throw SystemError(std::string("bpf_object__find_map_by_name ") + name, ENOENT);
        std::string path = pin_dir + "/" + name;
        check(bpf_map__set_pin_path(map, path.c_str()), "bpf_map__set_pin_path " + path);
    }
}

// Our filter on ifindex's ingress, identified by handle and priority: attach, adopt when the same program
// is already there, or replace it atomically (BPF_TC_F_REPLACE) when it differs.
HookAction attach_tc(int ifindex, int prog_fd, const std::string &what) {
    bpf_tc_hook hook = ingress_hook(ifindex);
    int err = bpf_tc_hook_create(&hook);
    if (err && err != -EEXIST)
        check(err, "bpf_tc_hook_create " + what);

    bpf_tc_opts query = bpfnet_filter(0, 0);
    err = bpf_tc_query(&hook, &query);
    if (err == 0) {
        if (prog_tag(prog_fd_by_id(query.prog_id).get()) == prog_tag(prog_fd))
            return HookAction::Adopted;
        bpf_tc_opts replace = bpfnet_filter(prog_fd, BPF_TC_F_REPLACE);
        check(bpf_tc_attach(&hook, &replace), "bpf_tc_attach (replace) " + what);
        return HookAction::Replaced;
    }
    // No filter of ours: ENOENT when the ingress chain has other filters, EINVAL ("Cannot find specified
    // filter chain") when it has none at all, as on a freshly created clsact.
    if (err != -ENOENT && err != -EINVAL)
        check(err, "bpf_tc_query " + what);
    bpf_tc_opts attach = bpfnet_filter(prog_fd, 0);
    check(bpf_tc_attach(&hook, &attach), "bpf_tc_attach " + what);
    return HookAction::Attached;
}

// Removes only our filter: the clsact qdisc may carry other programs (the CNI's), so it stays.
void detach_tc(int ifindex) {
    bpf_tc_hook hook = ingress_hook(ifindex);
    bpf_tc_opts ours = bpfnet_filter(0, 0);
    int err = bpf_tc_detach(&hook, &ours);
    if (err && err != -ENOENT && err != -ENODEV && err != -EINVAL)
        check(err, "bpf_tc_detach ifindex " + std::to_string(ifindex));
}

void detach_xdp(int ifindex) {
    XdpOnInterface state = XdpOnInterface::read(ifindex);
    if (!state.ours)
        return;
    check(xdp_program__detach(state.ours, ifindex, libxdp_mode(state.mode), 0), "xdp_program__detach");
}

} // namespace

std::string to_string(HookAction action) {
    switch (action) {
    case HookAction::Attached:
        return "attached";
    case HookAction::Adopted:
        return "adopted";
    case HookAction::Replaced:
        return "replaced";
    }
    return "unknown";
}

std::string describe(const XdpAttachment &xdp) {
    return to_string(xdp.mode) + (xdp.dispatcher ? " via libxdp dispatcher" : " plain attach (no dispatcher)");
}

Datapath::Datapath(const DatapathOptions &options) : options_(options), skel_(nullptr, bpfnet_bpf__destroy) {
    nic_ifindex_ = link_by_name(options.interface).ifindex;
    // Maps an earlier loader pinned are adopted (and keep their flows); maps this start pins are removed
    // again if the start fails, so a failed start leaves nothing behind.
    bool fresh_pins = !std::filesystem::exists(options.pin_dir + "/" BPFNET_MAP_IFACE);
    ensure_pin_dir(options.pin_dir);

    skel_.reset(bpfnet_bpf__open());
    if (!skel_)
        throw SystemError("bpfnet_bpf__open", errno);
    set_pin_paths(skel_->obj, options.pin_dir);

    std::vector<std::function<void()>> rollback;
    if (fresh_pins)
        rollback.emplace_back([this] { unpin_maps(); });
    try {
        load_and_attach_xdp(options.xdp_mode);
        if (xdp_.action == HookAction::Attached)
            rollback.emplace_back([this] { detach_xdp(nic_ifindex_); });
        attach_nic_tc();
        if (tc_nic_action_ == HookAction::Attached)
            rollback.emplace_back([this] { detach_tc(nic_ifindex_); });
        maps_.emplace(DatapathMaps::from_object(skel_->obj));
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
    xdp_.mode = mode;

    if (current.ours && current.mode == mode) {
        check(bpfnet_bpf__load(skel_.get()), "bpfnet_bpf__load");
        int new_fd = bpf_program__fd(skel_->progs.xdp_nic);
        ProgTag attached{};
        std::memcpy(attached.data(), xdp_program__tag(current.ours), attached.size());
        xdp_.dispatcher = current.dispatcher;
        if (attached == prog_tag(new_fd)) {
            xdp_.action = HookAction::Adopted;
            return;
        }
        if (!current.dispatcher) {
            LIBBPF_OPTS(bpf_xdp_attach_opts, replace, .old_prog_fd = xdp_program__fd(current.ours));
            check(bpf_xdp_attach(nic_ifindex_, new_fd, xdp_flags(mode) | XDP_FLAGS_REPLACE, &replace),
                  "bpf_xdp_attach (replace) " + options_.interface);
        } else {
            // A dispatcher is rebuilt by libxdp; there is no in-place replace of one component.
            check(xdp_program__detach(current.ours, nic_ifindex_, libxdp_mode(mode), 0), "xdp_program__detach");
            std::unique_ptr<xdp_program, void (*)(xdp_program *)> prog(xdp_program__from_fd(new_fd),
                                                                       xdp_program__close);
            check(static_cast<int>(libxdp_get_error(prog.get())), "xdp_program__from_fd");
            check(xdp_program__attach(prog.get(), nic_ifindex_, libxdp_mode(mode), 0), "xdp_program__attach");
        }
        xdp_.action = HookAction::Replaced;
        return;
    }
    if (current.ours) {
        log_info("xdp mode changes: detaching the old program",
                 {{"iface", options_.interface}, {"from", to_string(current.mode)}, {"to", to_string(mode)}});
        detach_xdp(nic_ifindex_);
    }

    // libxdp loads the object itself: as a dispatcher component where the kernel allows it, else plain.
    DECLARE_LIBXDP_OPTS(xdp_program_opts, opts, .obj = skel_->obj, .prog_name = BPFNET_PROG_XDP_NIC);
    std::unique_ptr<xdp_program, void (*)(xdp_program *)> prog(xdp_program__create(&opts), xdp_program__close);
    check(static_cast<int>(libxdp_get_error(prog.get())), "xdp_program__create");
    check(xdp_program__attach(prog.get(), nic_ifindex_, libxdp_mode(mode), 0),
          "xdp_program__attach " + options_.interface + " (" + to_string(mode) + ")");
    xdp_.action = HookAction::Attached;
    xdp_.dispatcher = XdpOnInterface::read(nic_ifindex_).dispatcher;
}

void Datapath::attach_nic_tc() {
    tc_nic_action_ =
        attach_tc(nic_ifindex_, bpf_program__fd(skel_->progs.tc_nic_ingress), options_.interface + " ingress");
}

HookAction Datapath::attach_pod_hook(int ifindex) {
    return attach_tc(ifindex, bpf_program__fd(skel_->progs.tc_pod_ingress), "ifindex " + std::to_string(ifindex));
}

void Datapath::detach_pod_hook(int ifindex) {
    detach_tc(ifindex);
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
    if (std::filesystem::exists(options.pin_dir + "/" BPFNET_MAP_BACKENDS)) {
        auto backends = PinnedMap<__be32, bpfnet_backend>::open(options.pin_dir, BPFNET_MAP_BACKENDS);
        for (const auto &[ip, backend] : backends.entries())
            detach_pod_hook(static_cast<int>(backend.ifindex));
    }
    if (nic != 0) {
        detach_tc(nic);
        detach_xdp(nic);
    }
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
