#include "k8s/service_status.hpp"

#include "k8s/json_fields.hpp"

#include "core/addresses.hpp"

namespace bpfnet::k8s {

using nlohmann::json;

namespace {

const json *ingress_of(const json &service) {
    const json *status = member(service, "status");
    const json *lb = status ? member(*status, "loadBalancer") : nullptr;
    const json *ingress = lb ? member(*lb, "ingress") : nullptr;
    return ingress && ingress->is_array() ? ingress : nullptr;
}

bool entry_is(const json &entry, const std::string &ip) {
    return entry.is_object() && string_member(entry, "ip") == ip;
}

} // namespace

bool ingress_announces(const json &service, uint32_t service_ip_be) {
    const json *ingress = ingress_of(service);
    if (!ingress || ingress->size() != 1)
        return false;
    const json &entry = ingress->front();
    if (!entry_is(entry, format_ipv4(service_ip_be)) || member(entry, "hostname"))
        return false;
    const json *mode = member(entry, "ipMode");
    return !mode || (mode->is_string() && mode->get<std::string>() == "VIP");
}

bool ingress_names(const json &service, uint32_t service_ip_be) {
    const json *ingress = ingress_of(service);
    if (!ingress)
        return false;
    const std::string ip = format_ipv4(service_ip_be);
    for (const json &entry : *ingress)
        if (entry_is(entry, ip))
            return true;
    return false;
}

json ingress_patch(uint32_t service_ip_be) {
    return {{"status", {{"loadBalancer", {{"ingress", json::array({{{"ip", format_ipv4(service_ip_be)}}})}}}}}};
}

json ingress_removal_patch() {
    return {{"status", {{"loadBalancer", {{"ingress", nullptr}}}}}};
}

} // namespace bpfnet::k8s
