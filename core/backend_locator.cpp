#include "core/backend_locator.hpp"

#include "core/netlink.hpp"
#include "maps/system_error.hpp"

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

LinkInfo backend_link(const Backend &backend) {
    if (!backend.veth.empty()) {
        try {
            return link_by_name(backend.veth);
        } catch (const SystemError &e) {
            throw BackendNotFound("interface " + backend.veth + " not found (" + e.what() + ")", false, false);
        }
    }
    LinkInfo link;
    try {
        link = link_by_index(route_oif(backend_address(backend)));
    } catch (const SystemError &e) {
        throw BackendNotFound("no route to backend " + format_ip(backend_address(backend)) + " (" + e.what() + ")",
                              true, true);
    }
    // Behind a bridge (flannel, the CNI bridge plugin) the route names the bridge, not the pod's veth: the
    // datapath would redirect into the bridge and its reverse hook would see every pod's traffic. Refused
    // rather than half working.
    if (link.kind == "bridge")
        throw BackendNotFound(
            "the route to backend " + format_ip(backend_address(backend)) + " goes through bridge " + link.name +
                " (a bridge CNI); bpfnet needs a routed CNI, where the route to a pod names the pod's "
                "veth (Calico, Cilium, kube-router), or the veth named explicitly",
            true, false);
    return link;
}

} // namespace

BackendLocation locate_backend(const Backend &backend, int nic_ifindex) {
    LinkInfo link = backend_link(backend);
    if (link.ifindex == nic_ifindex)
        throw BackendNotFound("the route to backend " + describe(backend) +
                                  " leaves through the provisioning interface " + link.name,
                              backend.veth.empty(), true);
    BackendLocation where;
    where.ifindex = link.ifindex;
    where.veth_mac = link.mac;
    where.mtu = link.mtu;
    // bpf_redirect_peer delivers straight into the pod's namespace: only possible through a veth pair.
    where.redirect_peer = link.is_veth;

    auto pod_mac = link.is_veth ? peer_mac(link) : std::nullopt;
    if (!pod_mac)
        pod_mac = neighbour_mac(link.ifindex, backend_address(backend));
    if (!pod_mac)
        throw BackendNotFound(link.name + " is not a veth and the kernel has no neighbour entry for " +
                                  format_ip(backend_address(backend)) + ": cannot learn the pod's MAC",
                              false, false);
    where.pod_mac = *pod_mac;
    return where;
}

std::string describe(const Backend &backend) {
    std::string text = backend.ip_be != 0 ? format_ipv4(backend.ip_be) : "";
    if (backend.ip6)
        text += (text.empty() ? "" : ", ") + format_ip(*backend.ip6);
    return text;
}

} // namespace bpfnet
