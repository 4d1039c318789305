// events.k8s.io/v1 Events about a Service: what `kubectl describe service` and `kubectl get events` show an
// operator when bpfnet refuses a Service, starts or stops serving it, or sees a second owner on the LAN.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <string>

namespace bpfnet::k8s {

inline constexpr const char *kReportingController = "bpfnet.io/loader";

struct ServiceEvent {
    enum class Type { Normal, Warning };
    Type type = Type::Normal;
    std::string reason; // CamelCase, e.g. "Refused", "Serving"
    std::string action; // what the loader did, e.g. "Refuse", "Activate"
    std::string note;   // one human-readable sentence (the API limits it to 1 kB; longer notes are cut)
    // Empty: a generated name (every report is an Event of its own). Otherwise the Event's exact name, so that
    // every node reporting the same thing about the same Service creates it once (the others get 409).
    std::string name;
};

ServiceEvent normal_event(std::string reason, std::string action, std::string note);
ServiceEvent warning_event(std::string reason, std::string action, std::string note);

// A name for an Event that every node derives alike: "SERVICE.bpfnet-REASON-HASH", the hash (FNV-1a, 64 bits,
// hex) over the Service's uid, the reason and the note. REASON is lower-cased.
std::string shared_event_name(const nlohmann::json &service, const std::string &reason, const std::string &note);

// The Event to POST to /apis/events.k8s.io/v1/namespaces/NS/events about `service` (its metadata.namespace,
// name and uid are copied when they are strings). reporting_instance: this node's name (capped by
// reporting_instance()).
nlohmann::json service_event(const nlohmann::json &service, const ServiceEvent &event,
                             const std::string &reporting_instance, std::chrono::system_clock::time_point now);

// The API limits reportingInstance to 128 characters; a node name may have 253. A longer name keeps its first
// 119 characters and gets "-" and 8 hex digits of its hash, so two long names stay apart.
inline constexpr std::size_t kMaxReportingInstance = 128;
std::string reporting_instance(const std::string &node_name);

// Where service_event's result is created: "/apis/events.k8s.io/v1/namespaces/NS/events".
std::string events_path(const std::string &namespace_);

} // namespace bpfnet::k8s
