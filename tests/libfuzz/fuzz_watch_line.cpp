// libFuzzer target: one line of a Kubernetes watch stream (k8s/client.cpp decode_watch_line), and the objects
// the loader reads from the API server (k8s/service_model.cpp, k8s/lease.cpp): a Service, EndpointSlices and a
// Lease, as decoded from whatever JSON the line holds. These are total: they answer every input with a
// decision (refused, not ready, not held), so any exception that escapes is a finding.
#include "k8s/client.hpp"
#include "k8s/lease.hpp"
#include "k8s/service_model.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

void read_as_api_objects(const nlohmann::json &object) {
    using namespace bpfnet;
    using namespace bpfnet::k8s;
    ServicePolicy policy;
    policy.allowed_namespaces = {"metal3", "default"};
    policy.allowed_cidrs = {*bpfnet::parse_prefix("198.18.0.0/15").prefix, *bpfnet::parse_prefix("fd00::/8").prefix};
    const ServiceDecision decision = decide_service(object, policy);
    const bool accepted_service = decision.outcome == ServiceDecision::Outcome::Accepted;
    const AcceptedService service = accepted_service ? accepted(decision) : AcceptedService{};
    if (accepted_service)
        (void)check_shared_ips({service, service});
    for (IpFamily family : {IpFamily::V4, IpFamily::V6}) {
        const auto endpoint = ready_endpoint(object, "node-a", family);
        if (accepted_service)
            (void)resolve_target_ports(ports_for_family(service, family), endpoint);
    }
    const LeaseState lease = read_lease(object);
    (void)lease_claimable(lease, "node-a", std::chrono::seconds(30));
    if (lease.renew_time)
        (void)format_micro_time(*lease.renew_time);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string_view line(reinterpret_cast<const char *>(data), size);
    const bpfnet::k8s::WatchEvent event = bpfnet::k8s::decode_watch_line(line);
    if (event.kind == bpfnet::k8s::WatchEvent::Kind::Changed)
        read_as_api_objects(event.object);
    // The same bytes as a bare object (a list's item, a GET's body).
    const nlohmann::json object = nlohmann::json::parse(line, nullptr, false);
    if (!object.is_discarded())
        read_as_api_objects(object);
    return 0;
}
