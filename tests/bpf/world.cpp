#include "world.hpp"

#include "maps/flow_ports.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <set>

namespace bpfnet::test {

namespace {

void copy_mac(__u8 *dst, const Mac &src) {
    std::copy(src.begin(), src.end(), dst);
}

// A listed port's services entry (flags: BPFNET_SERVICE_*; via_node: the pod's node, for
// BPFNET_SERVICE_VIA_NODE).
void add_listed(DatapathMaps &maps, uint8_t proto, const std::string &service_ip, uint16_t port,
                const std::string &pod_ip, uint16_t target_port, uint8_t kind, __u8 flags,
                const std::string &via_node = "") {
    bpfnet_service_key key{};
    key.service_ip = key_ip(service_ip);
    key.port_be = htons(port);
    key.proto = proto;
    bpfnet_service value{};
    value.backend_ip = key_ip(pod_ip);
    value.backend_port_be = htons(target_port);
    value.kind = kind;
    value.flags = flags;
    if (!via_node.empty())
        value.via_node = key_ip(via_node);
    maps.services.update(key, value);
}

// Its reverse entry: the pod's replies from target_port become the service's.
void add_reverse(DatapathMaps &maps, uint8_t proto, const std::string &service_ip, uint16_t port,
                 const std::string &pod_ip, uint16_t target_port, uint8_t kind, bool shared) {
    bpfnet_backend_port_key rkey{};
    rkey.backend_ip = key_ip(pod_ip);
    rkey.port_be = htons(target_port);
    rkey.proto = proto;
    bpfnet_backend_port rvalue{};
    rvalue.service_ip = key_ip(service_ip);
    rvalue.service_port_be = htons(port);
    rvalue.kind = kind;
    rvalue.flags = shared ? BPFNET_BACKEND_PORT_SHARED : 0;
    maps.backend_ports.update(rkey, rvalue);
}

void add_service(DatapathMaps &maps, uint8_t proto, uint16_t port, uint16_t target_port, uint8_t kind,
                 const std::string &service_ip = world::service_ip, const std::string &pod_ip = world::pod_ip,
                 bool shared = false) {
    add_listed(maps, proto, service_ip, port, pod_ip, target_port, kind, shared ? BPFNET_SERVICE_SHARED : 0);
    add_reverse(maps, proto, service_ip, port, pod_ip, target_port, kind, shared);
}

} // namespace

void derive_loader_fields(DatapathMaps &maps) {
    std::set<bpfnet_ip> shared;
    for (auto [key, service] : maps.services.entries()) {
        auto backend = maps.backends.lookup(service.backend_ip);
        service.link = backend ? pod_link_of(*backend) : bpfnet_pod_link{};
        auto ip = maps.service_ips.lookup(key.service_ip);
        const bool ranges = ip && (ip->flags & BPFNET_SERVICE_IP_SOURCE_RANGES);
        service.flags = static_cast<__u8>((service.flags & (BPFNET_SERVICE_SHARED | BPFNET_SERVICE_VIA_NODE)) |
                                          (ranges ? BPFNET_SERVICE_SOURCE_RANGES : 0));
        if (service.flags & BPFNET_SERVICE_VIA_NODE)
            service.link = bpfnet_pod_link{}; // the pod is not on this node
        if (service.flags & BPFNET_SERVICE_SHARED)
            shared.insert(key.service_ip);
        maps.services.update(key, service);
    }
    bpfnet_iface iface = maps.iface.lookup(0).value_or(bpfnet_iface{});
    std::fill(std::begin(iface.service_ip_marks), std::end(iface.service_ip_marks), __u8{0});
    for (const auto &[ip, entry] : maps.service_ips.entries())
        mark_service_ip(iface, ip);
    for (const bpfnet_ip &ip : shared)
        mark_service_ip(iface, ip);
    iface.shared_addresses = static_cast<__u8>(shared.size());
    maps.iface.update(0, iface);
}

void add_shared_port(DatapathMaps &maps, const std::string &shared_ip, uint16_t port, uint16_t target_port,
                     const std::string &pod_ip) {
    add_service(maps, kTcp, port, target_port, BPFNET_KIND_PLAIN, shared_ip, pod_ip, true);
    derive_loader_fields(maps);
}

void add_shared_port_via_node(DatapathMaps &maps, const std::string &shared_ip, uint16_t port, uint16_t target_port,
                              const std::string &pod_ip, const std::string &node_ip) {
    add_listed(maps, kTcp, shared_ip, port, pod_ip, target_port, BPFNET_KIND_PLAIN,
               BPFNET_SERVICE_SHARED | BPFNET_SERVICE_VIA_NODE, node_ip);
    derive_loader_fields(maps);
}

void fill_world(DatapathMaps &maps) {
    bpfnet_iface iface{};
    iface.nic_ifindex = world::nic_ifindex;
    copy_mac(iface.nic_mac, world::nic_mac);
    iface.subnet = prefix_of(key_ip("198.18.0.0"), 96 + 24);
    iface.heartbeat_timeout_ns = 5'000'000'000ull;
    iface.dhcp_service_ip = key_ip(world::service_ip);
    iface.dhcp_max_hops = world::dhcp_max_hops;
    maps.iface.update(0, iface);
    maps.heartbeat.update(0, bpfnet_heartbeat{monotonic_ns()});
    maps.service_ips.update(key_ip(world::service_ip), bpfnet_service_ip{BPFNET_SERVICE_IP_ACTIVE});

    add_service(maps, kTcp, 6385, 6385, BPFNET_KIND_PLAIN); // Ironic API
    add_service(maps, kTcp, 80, 8080, BPFNET_KIND_PLAIN);   // port translation
    add_service(maps, kUdp, 69, 69, BPFNET_KIND_TFTP);
    add_service(maps, kUdp, 67, 67, BPFNET_KIND_DHCP);

    bpfnet_backend backend{};
    backend.ifindex = world::veth_ifindex;
    copy_mac(backend.pod_mac, world::pod_mac);
    copy_mac(backend.veth_mac, world::veth_mac);
    backend.service_ip = key_ip(world::service_ip);
    backend.flags = BPFNET_BACKEND_REDIRECT_PEER;
    backend.mtu = world::pod_mtu;
    maps.backends.update(key_ip(world::pod_ip), backend);

    maps.dhcp_relays.update(key_ip(world::lan_relay_ip), bpfnet_dhcp_relay{});

    bpfnet_neighbour neighbour{};
    copy_mac(neighbour.mac, world::host_mac);
    maps.neighbours.update(key_ip(world::host_ip), neighbour);

    bpfnet_flow_key fkey{};
    fkey.remote_ip = key_ip(world::host_ip);
    fkey.service_ip = key_ip(world::service_ip);
    fkey.remote_port_be = htons(world::flow_host_port);
    fkey.service_port_be = htons(world::flow_pod_port);
    fkey.proto = kUdp;
    FlowPortMarks(maps.flow_ports).mark(fkey.service_port_be); // as the datapath marks a flow's port first
    maps.flows.update(fkey, bpfnet_flow{key_ip(world::pod_ip), htons(world::flow_pod_port), 0});

    fill_world6(maps);
}

void fill_world6(DatapathMaps &maps) {
    auto iface = maps.iface.lookup(0).value();
    iface.subnet6 = prefix_of(key_ip(world::subnet6), world::subnet6_prefix_len);
    iface.dhcp6_service_ip = key_ip(world::service_ip6);
    iface.nic_link_local = key_ip(world::nic_link_local);
    maps.iface.update(0, iface);
    maps.service_ips.update(key_ip(world::service_ip6), bpfnet_service_ip{BPFNET_SERVICE_IP_ACTIVE});
    add_service(maps, kTcp, 6385, 6385, BPFNET_KIND_PLAIN, world::service_ip6, world::pod_ip6);
    add_service(maps, kTcp, 80, 8080, BPFNET_KIND_PLAIN, world::service_ip6, world::pod_ip6);
    add_service(maps, kUdp, 69, 69, BPFNET_KIND_TFTP, world::service_ip6, world::pod_ip6);
    add_service(maps, kUdp, 547, 547, BPFNET_KIND_DHCP6, world::service_ip6, world::pod_ip6);
    maps.dhcp_relays.update(key_ip(world::lan_relay_ip6), bpfnet_dhcp_relay{});

    bpfnet_backend backend = maps.backends.lookup(key_ip(world::pod_ip)).value();
    backend.service_ip = key_ip(world::service_ip6);
    maps.backends.update(key_ip(world::pod_ip6), backend);

    bpfnet_neighbour neighbour{};
    copy_mac(neighbour.mac, world::host_mac);
    maps.neighbours.update(key_ip(world::host_ip6), neighbour);
    derive_loader_fields(maps);
}

} // namespace bpfnet::test
