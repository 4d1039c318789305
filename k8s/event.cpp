#include "k8s/event.hpp"

#include "k8s/json_fields.hpp"
#include "k8s/lease.hpp"

#include <cctype>
#include <cstdint>
#include <cstdio>

namespace bpfnet::k8s {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxNote = 1024; // events.k8s.io/v1 rejects longer notes

// FNV-1a (64 bits) over text and a terminating NUL, so that "a" + "bc" and "ab" + "c" hash apart when
// parts are joined with NULs.
std::uint64_t fnv1a(const std::string &text) {
    std::uint64_t hash = 0xcbf29ce484222325ull;
    for (unsigned char c : text + '\0') {
        hash ^= c;
        hash *= 0x100000001b3ull;
    }
    return hash;
}

} // namespace

std::string reporting_instance(const std::string &node_name) {
    if (node_name.size() <= kMaxReportingInstance)
        return node_name;
    char hex[9];
    std::snprintf(hex, sizeof(hex), "%08llx", static_cast<unsigned long long>(fnv1a(node_name) & 0xffffffffull));
    return node_name.substr(0, kMaxReportingInstance - 9) + "-" + hex;
}

json service_event(const json &service, const ServiceEvent &event, const std::string &reporting_instance,
                   std::chrono::system_clock::time_point now) {
    const std::string ns = metadata_string(service, "namespace");
    const std::string name = metadata_string(service, "name");
    json regarding = {{"apiVersion", "v1"}, {"kind", "Service"}, {"namespace", ns}, {"name", name}};
    if (std::string uid = metadata_string(service, "uid"); !uid.empty())
        regarding["uid"] = uid;
    std::string note = event.note.size() > kMaxNote ? event.note.substr(0, kMaxNote) : event.note;
    return {
        {"apiVersion", "events.k8s.io/v1"},
        {"kind", "Event"},
        {"metadata", event.name.empty() ? json{{"generateName", (name.empty() ? std::string("service") : name) + "."},
                                               {"namespace", ns}}
                                        : json{{"name", event.name}, {"namespace", ns}}},
        {"eventTime", format_micro_time(now)},
        {"reportingController", kReportingController},
        {"reportingInstance", k8s::reporting_instance(reporting_instance)},
        {"type", event.type == ServiceEvent::Type::Warning ? "Warning" : "Normal"},
        {"reason", event.reason},
        {"action", event.action},
        {"note", note},
        {"regarding", regarding},
    };
}

ServiceEvent normal_event(std::string reason, std::string action, std::string note) {
    return {ServiceEvent::Type::Normal, std::move(reason), std::move(action), std::move(note), {}};
}

ServiceEvent warning_event(std::string reason, std::string action, std::string note) {
    return {ServiceEvent::Type::Warning, std::move(reason), std::move(action), std::move(note), {}};
}

std::string shared_event_name(const json &service, const std::string &reason, const std::string &note) {
    const std::uint64_t hash = fnv1a(metadata_string(service, "uid") + '\0' + reason + '\0' + note);
    std::string lower;
    for (char c : reason)
        lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
    std::string name = metadata_string(service, "name");
    return (name.empty() ? std::string("service") : name) + ".bpfnet-" + lower + "-" + hex;
}

std::string events_path(const std::string &namespace_) {
    return "/apis/events.k8s.io/v1/namespaces/" + namespace_ + "/events";
}

} // namespace bpfnet::k8s
