// Finds where the backend pod is attached on this node and how its packets reach it: the host side of its veth
// (named in the config, named by the kernel's route to the pod IP as routed CNIs set it up, or the veth whose
// peer holds the pod's address behind the device the route names), the MACs on both ends, and whether the
// LAN's packets go into the veth or through the node's routing (Backend::delivery).
#pragma once

#include "core/addresses.hpp"
#include "core/desired_state.hpp"
#include "core/node.hpp"

#include <stdexcept>
#include <string>

namespace bpfnet {

// The backend cannot be located. what() speaks the config file's language (it names backend.veth); detail()
// says what is wrong without naming a field, for the other ways a backend is given (bpfnetctl backend set,
// an EndpointSlice); naming_veth_helps() when giving the veth explicitly would get around it.
class BackendNotFound : public std::runtime_error {
public:
    BackendNotFound(std::string detail, bool found_by_route, bool naming_veth_helps);
    const std::string &detail() const { return detail_; }
    bool naming_veth_helps() const { return naming_veth_helps_; }

private:
    std::string detail_;
    bool naming_veth_helps_;
};

// Where the backend is, seen from the provisioning NIC (nic_ifindex). A backend reached through the NIC
// itself is refused: steering the LAN's requests to it would send them back onto the LAN. Both modes locate
// their backends here, so both refuse it (the config's backend at start, an EndpointSlice's pod when seen).
BackendLocation locate_backend(const Backend &backend, int nic_ifindex);
// The backend's addresses for messages: "10.244.1.7", "fd00:10:244::7", or both, comma-separated.
std::string describe(const Backend &backend);

} // namespace bpfnet
