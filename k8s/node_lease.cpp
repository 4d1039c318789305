// The node Leases (k8s/node_lease.hpp).
#include "k8s/node_lease.hpp"

#include "core/addresses.hpp"
#include "k8s/json_fields.hpp"

namespace bpfnet::k8s {

using nlohmann::json;

std::string node_lease_name(const std::string &node) {
    return kNodeLeasePrefix + node;
}

std::optional<bpfnet_ip> published_node_address(const LeaseState &lease) {
    const std::string prefix = kNodeLeasePrefix;
    if (!lease.exists || lease.name.rfind(prefix, 0) != 0 || lease.holder != lease.name.substr(prefix.size()))
        return std::nullopt;
    const json *meta = member(lease.object, "metadata");
    const json *annotations = meta ? member(*meta, "annotations") : nullptr;
    const std::string text = annotations ? string_member(*annotations, kNodeAddressAnnotation) : std::string();
    const std::optional<bpfnet_ip> ip = parse_ip(text);
    if (!ip || !is_v4(*ip) || non_unicast_reason(v4_of(*ip)))
        return std::nullopt;
    return ip;
}

json node_lease(const LeaseState &current, const std::string &namespace_, const std::string &node,
                const std::optional<bpfnet_ip> &address, Clock::time_point now) {
    json lease = lease_to_write(current, namespace_, node_lease_name(node));
    json &meta = lease["metadata"];
    if (!meta.contains("annotations") || !meta["annotations"].is_object())
        meta["annotations"] = json::object();
    if (address)
        meta["annotations"][kNodeAddressAnnotation] = format_ip(*address);
    else
        meta["annotations"].erase(kNodeAddressAnnotation);
    if (!lease.contains("spec") || !lease["spec"].is_object())
        lease["spec"] = json::object();
    // Written when the address changes, never renewed: the holder and the time say who wrote it, and when.
    lease["spec"]["holderIdentity"] = node;
    lease["spec"]["renewTime"] = format_micro_time(now);
    return lease;
}

} // namespace bpfnet::k8s
