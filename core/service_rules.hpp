// The rules a service's listed ports obey, whichever mode read them: the config file's `ports` and a
// Service's `spec.ports` are checked by this one function, so both refuse the same lists in the same words.
#pragma once

#include "core/node.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace bpfnet {

struct PortRuleProblem {
    std::optional<size_t> index; // the entry at fault; nullopt: the list as a whole
    std::string field;           // that entry's field: "name", "port", "targetPort" or "kind"
    std::string detail;          // what is wrong, naming an earlier entry through EntryName
};

// How the mode names entry i in messages: "ports[1]" in the config file, "spec.ports[1]" in a Service.
using EntryName = std::function<std::string(size_t index)>;

// At most BPFNET_MAX_SERVICES ports; tftp and dhcp ports are UDP, a dhcp port is 67; no two entries share
// a (protocol, port) (the services map's key), a (protocol, targetPort) (the reverse map's key) or a
// non-empty name. The first problem in list order, or nullopt. A targetPort of 0 (a Service's named target
// port before an endpoint resolved it) is not compared.
std::optional<PortRuleProblem> port_rules_problem(const std::vector<PortRule> &ports, const EntryName &entry_name);

} // namespace bpfnet
