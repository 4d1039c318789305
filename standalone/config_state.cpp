// The standalone config's one service, handed to the core as the mode-neutral desired state.
#include "standalone/config.hpp"

#include "core/addresses.hpp"
#include "core/shared_addresses.hpp"

#include <algorithm>
#include <iterator>

namespace bpfnet {

namespace {

// The backend's address of the shared address's family (none: the backend has none of it).
std::optional<bpfnet_ip> backend_address_for(const Backend &backend, const bpfnet_ip &address) {
    if (is_v4(address))
        return backend.ip_be != 0 ? std::optional(ip_from_v4(backend.ip_be)) : std::nullopt;
    return backend.ip6;
}

// The shared address's spec: steered to the backend's address of its family when the pod is here (where),
// handed to the pod's node when the backend names one, with no backend otherwise.
ServiceSpec shared_spec(const Config &config, const bpfnet_ip &address, const SharedAddress &shared,
                        const std::optional<BackendLocation> &where) {
    ServiceSpec spec;
    spec.service_ip = address;
    spec.ports = shared.ports;
    spec.shared = true;
    if (!config.backend)
        return spec;
    const std::optional<bpfnet_ip> backend = backend_address_for(*config.backend, address);
    const std::optional<bpfnet_ip> &node = is_v4(address) ? config.backend->node : config.backend->node6;
    if (backend && config.backend->elsewhere() && node) {
        spec.backend_ip = *backend;
        spec.via_node = node;
    } else if (backend && where) {
        spec.backend_ip = *backend;
        spec.location = where;
    }
    return spec;
}

} // namespace

HeldAddresses held_shared_addresses(const Config &config, int nic_ifindex,
                                    const std::vector<InterfaceAddress> &addresses) {
    std::vector<SharedChoice> named;
    for (const SharedAddress &shared : config.shared_addresses)
        named.push_back(shared.ip);
    HeldAddresses held;
    for (const SharedAddress &shared : config.shared_addresses)
        held.push_back(held_address(shared.ip, config, nic_ifindex, addresses, named));
    return held;
}

std::vector<ServiceSpec> service_specs(const Config &config, const std::optional<BackendLocation> &where,
                                       const HeldAddresses &held) {
    std::vector<ServiceSpec> specs;
    if (config.service_ip_be != 0) {
        ServiceSpec spec;
        spec.service_ip = ip_from_v4(config.service_ip_be);
        // DHCPv6 (port 547) is IPv6's.
        std::copy_if(config.ports.begin(), config.ports.end(), std::back_inserter(spec.ports),
                     [](const PortRule &rule) { return rule.kind != PortKind::Dhcp6; });
        spec.source_ranges = config.source_ranges; // desired_state() takes the ranges of the spec's family
        if (where && config.backend) {
            spec.backend_ip = ip_from_v4(config.backend->ip_be);
            spec.location = where;
        }
        specs.push_back(std::move(spec));
    }
    if (config.service_ip6) {
        ServiceSpec spec;
        spec.service_ip = *config.service_ip6;
        // DHCP (port 67) is IPv4's; DHCPv6 is relayed on its own port (547).
        std::copy_if(config.ports.begin(), config.ports.end(), std::back_inserter(spec.ports),
                     [](const PortRule &rule) { return rule.kind != PortKind::Dhcp; });
        spec.source_ranges = config.source_ranges;
        if (where && config.backend && config.backend->ip6) {
            spec.backend_ip = *config.backend->ip6;
            spec.location = where;
        }
        specs.push_back(std::move(spec));
    }
    // A shared address the node does not hold has no spec, unless the pod is here: a node holding it may hand
    // its ports on (Backend::node there), and the pod's answers leave here as the address.
    for (size_t i = 0; i < config.shared_addresses.size() && i < held.size(); i++) {
        const SharedAddress &shared = config.shared_addresses[i];
        if (held[i])
            specs.push_back(shared_spec(config, *held[i], shared, where));
        else if (where && shared.ip)
            specs.push_back(shared_spec(config, *shared.ip, shared, where));
    }
    return specs;
}

DesiredState desired_state(const Config &config, const std::optional<BackendLocation> &where,
                           const HeldAddresses &held) {
    return desired_state(service_specs(config, where, held));
}

bpfnet_iface iface_entry(const Config &config, int nic_ifindex, const MacAddress &nic_mac) {
    return iface_entry(config, nic_ifindex, nic_mac, relay_addresses(service_specs(config, std::nullopt)));
}

} // namespace bpfnet
