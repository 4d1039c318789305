// The standalone config's one service, handed to the core as the mode-neutral desired state.
#include "standalone/config.hpp"

#include <algorithm>
#include <iterator>

namespace bpfnet {

std::vector<ServiceSpec> service_specs(const Config &config, const std::optional<BackendLocation> &where) {
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
    return specs;
}

DesiredState desired_state(const Config &config, const std::optional<BackendLocation> &where) {
    return desired_state(service_specs(config, where));
}

bpfnet_iface iface_entry(const Config &config, int nic_ifindex, const MacAddress &nic_mac) {
    return iface_entry(config, nic_ifindex, nic_mac, relay_addresses(service_specs(config, std::nullopt)));
}

} // namespace bpfnet
