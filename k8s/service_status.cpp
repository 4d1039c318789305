#include "k8s/service_status.hpp"

#include "k8s/json_fields.hpp"
#include "k8s/service_model.hpp"

#include "core/addresses.hpp"

#include <algorithm>

namespace bpfnet::k8s {

using nlohmann::json;

namespace {

const json *ingress_of(const json &service) {
    const json *status = member(service, "status");
    const json *lb = status ? member(*status, "loadBalancer") : nullptr;
    const json *ingress = lb ? member(*lb, "ingress") : nullptr;
    return ingress && ingress->is_array() ? ingress : nullptr;
}

// An entry as this loader writes it: an address, no hostname, the default ipMode.
std::optional<bpfnet_ip> written_entry(const json &entry) {
    if (!entry.is_object() || member(entry, "hostname"))
        return std::nullopt;
    const json *mode = member(entry, "ipMode");
    if (mode && !(mode->is_string() && mode->get<std::string>() == "VIP"))
        return std::nullopt;
    return parse_address(string_member(entry, "ip"));
}

} // namespace

bool ingress_announces(const json &service, const std::vector<bpfnet_ip> &service_ips) {
    const json *ingress = ingress_of(service);
    if (!ingress || ingress->size() != service_ips.size())
        return false;
    std::vector<bpfnet_ip> listed;
    for (const json &entry : *ingress) {
        auto ip = written_entry(entry);
        if (!ip)
            return false;
        listed.push_back(*ip);
    }
    std::vector<bpfnet_ip> wanted = service_ips;
    std::sort(listed.begin(), listed.end());
    std::sort(wanted.begin(), wanted.end());
    return listed == wanted;
}

std::vector<bpfnet_ip> ingress_addresses(const json &service) {
    std::vector<bpfnet_ip> out;
    if (const json *ingress = ingress_of(service))
        for (const json &entry : *ingress)
            if (entry.is_object())
                if (auto ip = parse_address(string_member(entry, "ip")))
                    out.push_back(*ip);
    return out;
}

json ingress_patch(const std::vector<bpfnet_ip> &service_ips) {
    if (service_ips.empty())
        return ingress_removal_patch();
    json entries = json::array();
    for (const bpfnet_ip &ip : service_ips)
        entries.push_back({{"ip", format_ip(ip)}});
    return {{"status", {{"loadBalancer", {{"ingress", entries}}}}}};
}

json ingress_removal_patch() {
    return {{"status", {{"loadBalancer", {{"ingress", nullptr}}}}}};
}

} // namespace bpfnet::k8s
