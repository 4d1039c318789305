// Owns the loaded BPF object of one provisioning NIC: loads it with its maps pinned under the interface's
// pin directory (re-using maps a previous loader pinned), attaches the NIC programs, and attaches the
// pod-side program to backend veths. A loader that restarts finds its programs attached and adopts them,
// so flows keep running through a restart or an upgrade of the loader.
#pragma once

#include "core/addresses.hpp"
#include "core/node.hpp"
#include "core/tc_hook.hpp"
#include "maps/datapath_maps.hpp"

#include <memory>
#include <optional>
#include <string>

struct bpfnet_bpf;
struct xdp_program;

namespace bpfnet {

struct XdpAttachment {
    XdpMode mode = XdpMode::Native; // as attached: native or generic
    std::string native_refused;     // xdpMode auto fell back to generic: why native was refused
    bool dispatcher = false;        // libxdp's multi-program dispatcher; false: plain attach (legacy fallback)
    HookAction action = HookAction::Attached;
};

struct DatapathOptions {
    std::string interface;
    std::string pin_dir;
    XdpMode xdp_mode = XdpMode::Auto;
    TcHookKind tc = TcHookKind::Clsact;
    bool redirect_peer = true;   // the kernel has bpf_redirect_peer (a load-time constant of the programs)
    bool skb_csum_state = false; // the programs may read the skb's checksum state (KernelFeatures)
};

class Datapath {
public:
    // Loads and attaches; on any failure, whatever this call attached is detached again before it throws.
    explicit Datapath(const DatapathOptions &options);
    ~Datapath();
    Datapath(const Datapath &) = delete;
    Datapath &operator=(const Datapath &) = delete;

    DatapathMaps &maps() { return *maps_; }
    int nic_ifindex() const { return nic_ifindex_; }
    const XdpAttachment &xdp() const { return xdp_; }
    HookAction tc_nic_action() const { return tc_nic_action_; }
    TcHookKind tc_kind() const { return options_.tc; }
    int events_fd() const;

    // tc_pod_ingress on the host side of a backend's veth.
    HookAction attach_pod_hook(int ifindex);
    // Removes only our program; a veth that is already gone is fine.
    void detach_pod_hook(int ifindex);

    // Detaches bpfnet's programs from the NIC and from the veths of the backends the maps list, and removes
    // the pins: the explicit teardown (`bpfnet-loader --teardown`), never done on a plain stop. Loads
    // nothing, so it also works when the running programs come from another bpfnet version.
    static void remove(const DatapathOptions &options);

private:
    void open_object();
    void load_and_attach_xdp(XdpMode mode);
    void attach_xdp_program(XdpMode mode);
    bool same_program(int attached_prog_fd, int our_prog_fd) const;
    void attach_nic_tc();
    void unpin_maps();
    void mark_adopted_flow_ports(bool report);

    DatapathOptions options_;
    int nic_ifindex_ = 0;
    std::unique_ptr<bpfnet_bpf, void (*)(bpfnet_bpf *)> skel_;
    std::optional<DatapathMaps> maps_;
    XdpAttachment xdp_;
    HookAction tc_nic_action_ = HookAction::Attached;
    bool flow_ports_created_ = false; // flow_ports is new next to pinned flows (see mark_adopted_flow_ports)
};

// Whether this kernel/device pair is served by libxdp's dispatcher: read back from the attached program.
std::string describe(const XdpAttachment &xdp);

} // namespace bpfnet
