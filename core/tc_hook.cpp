#include "core/tc_hook.hpp"

#include "maps/system_error.hpp"
#include "maps/unique_fd.hpp"

#include <cerrno>
#include <filesystem>
#include <string_view>

namespace bpfnet {

namespace {

constexpr std::string_view kTcxPinPrefix = "tcx_ingress_";

std::string where(int ifindex) {
    return "ifindex " + std::to_string(ifindex);
}

// Our tcx link on ifindex, opened from its pin; invalid when there is no pin. A pin whose link no longer
// sits on ifindex (its device was deleted: the kernel then reports ifindex 0) is removed on the way.
UniqueFd open_tcx_link(int ifindex, const std::string &pin_dir, __u32 *prog_id) {
    const std::string pin = tcx_link_pin(pin_dir, ifindex);
    int fd = bpf_obj_get(pin.c_str());
    if (fd < 0) {
        if (errno == ENOENT)
            return UniqueFd();
        throw SystemError("bpf_obj_get " + pin, errno);
    }
    UniqueFd link(fd);
    bpf_link_info info{};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(link.get(), &info, &len) != 0)
        throw SystemError("bpf_obj_get_info_by_fd " + pin, errno);
    // A tcx link's info is {ifindex, attach_type}, laid out where the 6.1 headers have xdp.ifindex.
    if (info.type != kBpfLinkTypeTcx || info.xdp.ifindex != static_cast<__u32>(ifindex)) {
        std::filesystem::remove(pin);
        return UniqueFd();
    }
    if (prog_id)
        *prog_id = info.prog_id;
    return link;
}

std::optional<__u32> clsact_program(int ifindex) {
    bpf_tc_hook hook = ingress_hook(ifindex);
    bpf_tc_opts query = bpfnet_filter(0, 0);
    int err = bpf_tc_query(&hook, &query);
    if (err == 0)
        return query.prog_id;
    // ENOENT: the chain has other filters but not ours; EINVAL: no filter chain (or no clsact) at all;
    // ENODEV: the device is gone.
    if (err == -ENOENT || err == -EINVAL || err == -ENODEV)
        return std::nullopt;
    throw SystemError("bpf_tc_query " + where(ifindex), -err);
}

void detach_clsact(int ifindex) {
    bpf_tc_hook hook = ingress_hook(ifindex);
    bpf_tc_opts ours = bpfnet_filter(0, 0);
    int err = bpf_tc_detach(&hook, &ours);
    if (err && err != -ENOENT && err != -ENODEV && err != -EINVAL)
        check_libbpf(err, "bpf_tc_detach " + where(ifindex));
}

// Detach first, then unpin: the link goes at once even if some other process still holds an fd to it.
void detach_tcx(const std::string &pin) {
    int fd = bpf_obj_get(pin.c_str());
    if (fd < 0)
        return;
    UniqueFd link(fd);
    if (bpf_link_detach(link.get()) != 0 && errno != ENOLINK && errno != EINVAL)
        throw SystemError("bpf_link_detach " + pin, errno);
    std::filesystem::remove(pin);
}

bool adopt(__u32 prog_id, const std::function<bool(int)> &same_program) {
    int fd = bpf_prog_get_fd_by_id(prog_id);
    if (fd < 0)
        return false;
    UniqueFd prog(fd);
    return same_program(prog.get());
}

HookAction attach_tcx(int ifindex, int prog_fd, const std::string &pin_dir,
                      const std::function<bool(int)> &same_program) {
    __u32 current = 0;
    if (UniqueFd link = open_tcx_link(ifindex, pin_dir, &current); link.valid()) {
        if (adopt(current, same_program))
            return HookAction::Adopted;
        check_libbpf(bpf_link_update(link.get(), prog_fd, nullptr), "bpf_link_update (tcx) " + where(ifindex));
        return HookAction::Replaced;
    }
    // First on the device: a CNI's own programs there (Cilium's on the pod's veth and the node's NICs, which
    // it appends last) act on every packet they see, and would take the pod's replies or the LAN's requests
    // before bpfnet could; bpfnet hands on everything that is not its own (TCX_NEXT). BPF_F_BEFORE with no
    // relative program puts the link at the head (libbpf 1.1 passes the flag through for an attach type it
    // does not know).
    LIBBPF_OPTS(bpf_link_create_opts, first, .flags = kBpfFBefore);
    int fd = bpf_link_create(prog_fd, ifindex, kBpfTcxIngress, &first);
    check_libbpf(fd, "bpf_link_create (tcx ingress) " + where(ifindex));
    UniqueFd link(fd);
    const std::string pin = tcx_link_pin(pin_dir, ifindex);
    if (int err = bpf_obj_pin(link.get(), pin.c_str()); err != 0) {
        bpf_link_detach(link.get());
        check_libbpf(err, "bpf_obj_pin " + pin);
    }
    // Taking over from a clsact filter of ours: both ran for a moment (the tcx link first), now one does.
    if (clsact_program(ifindex)) {
        detach_clsact(ifindex);
        return HookAction::Replaced;
    }
    return HookAction::Attached;
}

HookAction attach_clsact(int ifindex, int prog_fd, const std::string &pin_dir,
                         const std::function<bool(int)> &same_program) {
    bpf_tc_hook hook = ingress_hook(ifindex);
    int err = bpf_tc_hook_create(&hook);
    if (err && err != -EEXIST)
        check_libbpf(err, "bpf_tc_hook_create " + where(ifindex));
    HookAction action = HookAction::Attached;
    if (std::optional<__u32> current = clsact_program(ifindex)) {
        if (adopt(*current, same_program))
            return HookAction::Adopted;
        bpf_tc_opts replace = bpfnet_filter(prog_fd, BPF_TC_F_REPLACE);
        check_libbpf(bpf_tc_attach(&hook, &replace), "bpf_tc_attach (replace) " + where(ifindex));
        action = HookAction::Replaced;
    } else {
        bpf_tc_opts attach = bpfnet_filter(prog_fd, 0);
        check_libbpf(bpf_tc_attach(&hook, &attach), "bpf_tc_attach " + where(ifindex));
    }
    // Taking over from a tcx link of ours (it ran before any clsact filter): it goes now.
    if (UniqueFd link = open_tcx_link(ifindex, pin_dir, nullptr); link.valid()) {
        detach_tcx(tcx_link_pin(pin_dir, ifindex));
        action = HookAction::Replaced;
    }
    return action;
}

} // namespace

std::string to_string(TcHookKind kind) {
    return kind == TcHookKind::Tcx ? "tcx" : "clsact";
}

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

std::string tcx_link_pin(const std::string &pin_dir, int ifindex) {
    return pin_dir + "/" + std::string(kTcxPinPrefix) + std::to_string(ifindex);
}

std::optional<TcIngress> find_tc_ingress(int ifindex, const std::string &pin_dir) {
    __u32 prog_id = 0;
    if (UniqueFd link = open_tcx_link(ifindex, pin_dir, &prog_id); link.valid())
        return TcIngress{prog_id, TcHookKind::Tcx};
    if (std::optional<__u32> id = clsact_program(ifindex))
        return TcIngress{*id, TcHookKind::Clsact};
    return std::nullopt;
}

HookAction attach_tc_ingress(int ifindex, int prog_fd, TcHookKind kind, const std::string &pin_dir,
                             const std::function<bool(int)> &same_program) {
    if (kind == TcHookKind::Tcx)
        return attach_tcx(ifindex, prog_fd, pin_dir, same_program);
    return attach_clsact(ifindex, prog_fd, pin_dir, same_program);
}

void detach_tc_ingress(int ifindex, const std::string &pin_dir) {
    detach_tcx(tcx_link_pin(pin_dir, ifindex));
    detach_clsact(ifindex);
}

void remove_tcx_links(const std::string &pin_dir) {
    std::error_code ec;
    for (const auto &entry : std::filesystem::directory_iterator(pin_dir, ec))
        if (entry.path().filename().string().starts_with(kTcxPinPrefix))
            detach_tcx(entry.path().string());
}

} // namespace bpfnet
