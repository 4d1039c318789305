// Finds where the backend pod is attached on this node: the host side of its veth (named in the config,
// or found through the kernel's route to the pod IP, as routed CNIs set it up) and the MACs on both ends.
#pragma once

#include "config.hpp"
#include "desired_state.hpp"

#include <stdexcept>

namespace bpfnet {

// The backend cannot be located; what() names the config field and what is wrong with it.
class BackendNotFound : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

BackendLocation locate_backend(const Backend &backend);

} // namespace bpfnet
