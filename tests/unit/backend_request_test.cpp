// A backend_set request on the control socket, as the standalone loader reads it (requested_backend) and as
// the server takes a request line (parse_control_request): refused with a ControlFailure that says what is
// wrong, never with a library's exception (tests/libfuzz/fuzz_control_request looks for those).
#include "core/control_socket.hpp"
#include "standalone/config.hpp"
#include "standalone/standalone.hpp"

#include <gtest/gtest.h>

namespace bpfnet {
namespace {

const Config &running() {
    static const Config config = parse_config("{interface: eth1, subnet: 198.18.0.0/24, serviceIP: 198.18.0.2, "
                                              "subnetV6: 'fd00:18::/64', serviceIPv6: 'fd00:18::2', "
                                              "ports: [{name: api, protocol: tcp, port: 6385}]}",
                                              "running.yaml");
    return config;
}

// The kind and message of the refusal of request, or a failure when it was taken.
testing::AssertionResult Refused(const std::string &line, ControlFailure::Kind kind, const std::string &fragment) {
    try {
        const nlohmann::json request = parse_control_request(line);
        const Backend backend = requested_backend(request, running());
        return testing::AssertionFailure() << "taken: " << line << " as " << backend.veth;
    } catch (const ControlFailure &e) {
        if (e.kind() != kind || std::string(e.what()).find(fragment) == std::string::npos)
            return testing::AssertionFailure() << to_string(e.kind()) << ": " << e.what();
        return testing::AssertionSuccess();
    }
}

TEST(BackendRequest, TakesBothFamiliesAndTheVeth) {
    const Backend backend = requested_backend(
        parse_control_request(R"({"command":"backend_set","ip":"10.244.1.7","ipv6":"fd00:244::7","veth":"v1"})"),
        running());
    EXPECT_EQ(backend.veth, "v1");
    ASSERT_TRUE(backend.ip6.has_value());
}

TEST(BackendRequest, RefusesWhatIsNotARequest) {
    using Kind = ControlFailure::Kind;
    for (const std::string line : {"", "not json", "[]", R"({"ip":"10.244.1.7"})", R"({"command":7})"})
        EXPECT_TRUE(Refused(line, Kind::BadRequest, "a request is a JSON object with a \"command\"")) << line;
}

// Found by the input fuzzer: a "veth" that is not a string came back as nlohmann's type_error text.
TEST(BackendRequest, RefusesFieldsOfTheWrongTypeByName) {
    using Kind = ControlFailure::Kind;
    EXPECT_TRUE(Refused(R"({"command":"backend_set","ip":"10.244.1.7","ipv6":"fd00:244::7","veth":1})",
                        Kind::BadRequest, "\"veth\" must be a string"));
    EXPECT_TRUE(Refused(R"({"command":"backend_set","ip":["10.244.1.7"]})", Kind::BadRequest, "needs \"ip\""));
    EXPECT_TRUE(
        Refused(R"({"command":"backend_set","ip":"10.244.1.7","ipv6":6})", Kind::InvalidArgument, "backend IPv6"));
    EXPECT_TRUE(Refused(R"({"command":"backend_set","ip":"10.244.1.7"})", Kind::InvalidArgument,
                        "give the pod's IPv6 address too"));
}

} // namespace
} // namespace bpfnet
