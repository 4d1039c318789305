// The standalone config's one service, handed to the core as the mode-neutral desired state.
#include "standalone/config.hpp"

namespace bpfnet {

std::vector<ServiceSpec> service_specs(const Config &config, const std::optional<BackendLocation> &where) {
    ServiceSpec spec;
    spec.service_ip = ip_from_v4(config.service_ip_be);
    spec.ports = config.ports;
    spec.source_ranges = config.source_ranges;
    if (where && config.backend) {
        spec.backend_ip = ip_from_v4(config.backend->ip_be);
        spec.location = where;
    }
    return {spec};
}

DesiredState desired_state(const Config &config, const std::optional<BackendLocation> &where) {
    return desired_state(service_specs(config, where));
}

bpfnet_iface iface_entry(const Config &config, int nic_ifindex, const MacAddress &nic_mac) {
    return iface_entry(config, nic_ifindex, nic_mac, dhcp_service_ip(service_specs(config, std::nullopt)));
}

} // namespace bpfnet
