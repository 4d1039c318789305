// libFuzzer target: a request line on the loader's control socket (core/control_socket.cpp) as the standalone
// loader takes it (standalone/standalone.cpp requested_backend, against a config with both families). A
// request is answered or refused with a ControlFailure that says why; anything else that escapes is a finding
// (the server would answer it as an unexplained "failure").
#include "core/control_socket.hpp"
#include "standalone/config.hpp"
#include "standalone/standalone.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

const bpfnet::Config &running_config() {
    static const bpfnet::Config config = bpfnet::parse_config(R"(interface: eth1
subnet: 198.18.0.0/24
serviceIP: 198.18.0.2
subnetV6: fd00:18::/64
serviceIPv6: fd00:18::2
ports:
  - {name: ironic-api, protocol: tcp, port: 6385}
  - {name: dhcp, protocol: udp, port: 67, kind: dhcp}
)",
                                                              "fuzz-running.yaml");
    return config;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string_view line(reinterpret_cast<const char *>(data), size);
    try {
        const nlohmann::json request = bpfnet::parse_control_request(line);
        if (request["command"] == "backend_set")
            (void)bpfnet::requested_backend(request, running_config());
    } catch (const bpfnet::ControlFailure &) {
    }
    return 0;
}
