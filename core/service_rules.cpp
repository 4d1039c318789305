#include "core/service_rules.hpp"

#include <map>
#include <utility>

namespace bpfnet {

namespace {

constexpr uint16_t kDhcpServerPort = 67;
constexpr uint16_t kDhcp6ServerPort = 547;

// The datapath treats DHCP and TFTP specially, which only makes sense for UDP.
std::optional<std::string> kind_problem(const PortRule &rule) {
    if (rule.kind == PortKind::Plain)
        return std::nullopt;
    if (rule.protocol != Protocol::Udp)
        return to_string(rule.kind) + " requires protocol udp, got " + to_string(rule.protocol);
    if (rule.kind == PortKind::Dhcp && rule.port != kDhcpServerPort)
        return "dhcp requires port " + std::to_string(kDhcpServerPort) + ", got " + std::to_string(rule.port);
    if (rule.kind == PortKind::Dhcp6 && rule.port != kDhcp6ServerPort)
        return "dhcpv6 requires port " + std::to_string(kDhcp6ServerPort) + ", got " + std::to_string(rule.port);
    return std::nullopt;
}

// Remembers the first entry of each key; a second one is a problem naming the first.
template <typename Key>
class FirstUse {
public:
    std::optional<size_t> claim(const Key &key, size_t index) {
        const auto [first, inserted] = seen_.emplace(key, index);
        return inserted ? std::nullopt : std::optional<size_t>(first->second);
    }

private:
    std::map<Key, size_t> seen_;
};

} // namespace

std::optional<PortRuleProblem> port_rules_problem(const std::vector<PortRule> &ports, const EntryName &entry_name) {
    if (ports.size() > BPFNET_MAX_SERVICES)
        return PortRuleProblem{std::nullopt, "",
                               "must list at most " + std::to_string(BPFNET_MAX_SERVICES) + " ports, got " +
                                   std::to_string(ports.size())};
    FirstUse<std::string> names;
    FirstUse<std::pair<Protocol, uint16_t>> service_ports, target_ports;
    for (size_t i = 0; i < ports.size(); i++) {
        const PortRule &rule = ports[i];
        if (auto problem = kind_problem(rule))
            return PortRuleProblem{i, "kind", *problem};
        if (!rule.name.empty())
            if (auto first = names.claim(rule.name, i))
                return PortRuleProblem{i, "name",
                                       "name \"" + rule.name + "\" is already used by " + entry_name(*first)};
        if (auto first = service_ports.claim({rule.protocol, rule.port}, i))
            return PortRuleProblem{i, "port",
                                   to_string(rule.protocol) + " port " + std::to_string(rule.port) +
                                       " is already used by " + entry_name(*first)};
        if (rule.target_port == 0) // a named target port, not known until an endpoint resolves it
            continue;
        if (auto first = target_ports.claim({rule.protocol, rule.target_port}, i))
            return PortRuleProblem{i, "targetPort",
                                   to_string(rule.protocol) + " targetPort " + std::to_string(rule.target_port) +
                                       " is already used by " + entry_name(*first)};
    }
    return std::nullopt;
}

} // namespace bpfnet
