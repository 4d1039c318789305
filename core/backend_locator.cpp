#include "core/backend_locator.hpp"

#include "core/netlink.hpp"
#include "maps/system_error.hpp"

#include <algorithm>
#include <map>
#include <vector>

namespace bpfnet {

BackendNotFound::BackendNotFound(std::string detail, bool found_by_route, bool naming_veth_helps)
    : std::runtime_error(std::string("backend.veth: ") + (found_by_route ? "auto: " : "") + detail +
                         (naming_veth_helps ? "; name the veth in backend.veth" : "")),
      detail_(std::move(detail)), naming_veth_helps_(naming_veth_helps) {}

namespace {

// The address the pod is found by: its IPv4 address, or its IPv6 one for an IPv6-only service. (A dual-stack
// pod's two addresses are on the same interface.)
bpfnet_ip backend_address(const Backend &backend) {
    return backend.ip_be != 0 || !backend.ip6 ? ip_from_v4(backend.ip_be) : *backend.ip6;
}

// The veth pair a pod is wired by, seen from this namespace: the host side, and how it was found.
struct PodVeth {
    LinkInfo link;
    std::string found_by;
    std::string route_device;
};

// The veths of this namespace whose peer lives in another one and holds `pod` there. Every CNI bpfnet meets
// wires a pod by a veth pair (routed CNIs, the bridge plugin and flannel, Cilium, OVN-Kubernetes), whatever
// it puts between the host side and the node's routing (a bridge, an OVS port, Cilium's own programs), so
// the pair is found by the kernel's own view of the peer's namespace, not by the CNI's routes: one address
// dump per namespace that has a veth peer.
std::vector<LinkInfo> veths_leading_to(const bpfnet_ip &pod) {
    std::map<int, std::vector<LinkInfo>> by_namespace;
    for (LinkInfo &link : all_links())
        if (link.is_veth && link.peer_netnsid >= 0)
            by_namespace[link.peer_netnsid].push_back(std::move(link));
    std::vector<LinkInfo> found;
    for (auto &[netnsid, veths] : by_namespace) {
        std::vector<InterfaceAddress> addresses;
        try {
            addresses = addresses_in_namespace(netnsid, !is_v4(pod));
        } catch (const SystemError &e) {
            if (e.code() == std::errc::operation_not_supported)
                throw BackendNotFound(e.what(), true, true);
            continue; // a namespace going away while we ask: not the pod's
        }
        for (LinkInfo &veth : veths) {
            bool holds = std::ranges::any_of(
                addresses, [&](const InterfaceAddress &a) { return a.ifindex == veth.peer_ifindex && a.ip == pod; });
            if (holds)
                found.push_back(std::move(veth));
        }
    }
    return found;
}

std::string kind_of(const LinkInfo &link) {
    if (link.kind.empty())
        return "device";
    if (link.is_veth)
        return "veth whose peer is in this namespace";
    return link.kind;
}

// What the route to the pod says, when it names a device of the CNI's instead of the pod's veth.
std::string route_through(const LinkInfo &routed, const bpfnet_ip &pod) {
    return "the route to backend " + format_ip(pod) + " goes through " + routed.name + " (" + kind_of(routed) + ")";
}

// The pod's veth behind `routed`, the device the route to the pod names when it is not the pod's veth. None
// (a pod on another node, behind an overlay) is refused whatever the delivery: the pod's answers are taken on
// its veth, and a pod elsewhere answers from its own node.
PodVeth pod_veth_behind(const LinkInfo &routed, const Backend &backend) {
    const bpfnet_ip pod = backend_address(backend);
    std::vector<LinkInfo> found = veths_leading_to(pod);
    if (found.empty())
        throw BackendNotFound(route_through(routed, pod) +
                                  " and no veth on this node leads to a network namespace holding " + format_ip(pod),
                              true, true);
    if (found.size() > 1) {
        std::string names;
        for (const LinkInfo &veth : found)
            names += (names.empty() ? "" : ", ") + veth.name;
        throw BackendNotFound(route_through(routed, pod) + " and more than one veth leads to a namespace holding " +
                                  format_ip(pod) + " (" + names + ")",
                              true, true);
    }
    return {found.front(), "namespace", routed.name};
}

// The device the node routes the pod's address through; refused when there is none or it is the NIC.
LinkInfo routed_device(const Backend &backend, int nic_ifindex) {
    LinkInfo link;
    try {
        link = link_by_index(route_oif(backend_address(backend)));
    } catch (const SystemError &e) {
        throw BackendNotFound("no route to backend " + format_ip(backend_address(backend)) + " (" + e.what() + ")",
                              true, true);
    }
    if (link.ifindex == nic_ifindex)
        throw BackendNotFound("the route to backend " + describe(backend) +
                                  " leaves through the provisioning interface " + link.name,
                              true, true);
    return link;
}

PodVeth pod_veth(const Backend &backend, int nic_ifindex) {
    if (!backend.veth.empty()) {
        try {
            return {link_by_name(backend.veth), "named", ""};
        } catch (const SystemError &e) {
            throw BackendNotFound("interface " + backend.veth + " not found (" + e.what() + ")", false, false);
        }
    }
    LinkInfo link = routed_device(backend, nic_ifindex);
    // A routed CNI (Calico, kube-router's routes, Cilium with per-endpoint routes) names the pod's veth; the
    // others name what they put in between (a bridge, cilium_host, an OVS port): the veth is found behind it.
    if (link.is_veth && link.peer_netnsid >= 0)
        return {link, "route", ""};
    return pod_veth_behind(link, backend);
}

} // namespace

BackendLocation locate_backend(const Backend &backend, int nic_ifindex) {
    PodVeth veth = pod_veth(backend, nic_ifindex);
    const LinkInfo &link = veth.link;
    if (link.ifindex == nic_ifindex)
        throw BackendNotFound("backend.veth names the provisioning interface " + link.name, false, false);
    BackendLocation where;
    where.ifindex = link.ifindex;
    where.mtu = link.mtu;
    where.found_by = veth.found_by;
    where.route_device = veth.route_device;
    // Through the node's routing when asked (the MACs are then the routing's; the pod's answers are still taken
    // on its veth).
    where.route = backend.delivery == PodDelivery::Route;
    where.veth_mac = link.mac;
    // bpf_redirect_peer delivers straight into the pod's namespace: only possible through a veth pair.
    where.redirect_peer = link.is_veth && !where.route;

    auto pod_mac = link.is_veth ? peer_mac(link) : std::nullopt;
    if (!pod_mac)
        pod_mac = neighbour_mac(link.ifindex, backend_address(backend));
    if (!pod_mac && !where.route) // the routing finds the next hop's MAC itself
        throw BackendNotFound(link.name + " is not a veth and the kernel has no neighbour entry for " +
                                  format_ip(backend_address(backend)) + ": cannot learn the pod's MAC",
                              false, false);
    where.pod_mac = pod_mac.value_or(MacAddress{});
    return where;
}

std::string describe(const Backend &backend) {
    std::string text = backend.ip_be != 0 ? format_ipv4(backend.ip_be) : "";
    if (backend.ip6)
        text += (text.empty() ? "" : ", ") + format_ip(*backend.ip6);
    if (backend.elsewhere())
        text += " on the node at " + (backend.node && backend.node6
                                          ? format_ip(*backend.node) + ", " + format_ip(*backend.node6)
                                          : format_ip(backend.node ? *backend.node : *backend.node6));
    return text;
}

} // namespace bpfnet
