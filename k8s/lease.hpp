// One coordination.k8s.io/v1 Lease per service IP decides which node answers for it (and serves every Service on
// it). Pure functions over the Lease
// objects exactly as the API returns them: reading one never throws (fields of the wrong type count as
// absent), and the bodies for claiming and releasing keep metadata.resourceVersion, so a write based on a
// stale read fails with 409 instead of overwriting another node's claim.
#pragma once

#include "maps/layout.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace bpfnet::k8s {

using Clock = std::chrono::system_clock;

inline constexpr const char *kLeaseNamePrefix = "bpfnet-";
inline constexpr const char *kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr const char *kManagedByValue = "bpfnet-loader";
// On the Lease, for people: the Services (namespace/name, comma-separated) served on its IP when last written.
inline constexpr const char *kServicesAnnotation = "bpfnet.io/services";

struct LeaseState {
    bool exists = false;
    std::string namespace_;
    std::string name;
    std::string resource_version;
    std::string holder; // empty: nobody holds it (released or never claimed)
    std::optional<Clock::time_point> renew_time;
    std::chrono::seconds duration{0};
    std::int64_t transitions = 0;
    nlohmann::json object; // the Lease as read (null when it does not exist)
};

// The Lease that decides the owner of a service IP: "bpfnet-198-18-0-10" for 198.18.0.10, and
// "bpfnet-fd00-1-0-0-0-0-0-10" (all eight groups) for fd00:1::10 (in the loader's Lease namespace). nullopt from
// lease_service_ip when the name is not one of these, spelled exactly so.
std::string lease_name(const bpfnet_ip &service_ip);
std::optional<bpfnet_ip> lease_service_ip(const std::string &lease_name);

LeaseState read_lease(const nlohmann::json &lease);

// identity may write itself as holder: nobody holds it, identity already does, or this node has seen the same
// version of the Lease (no renewal) for longer than its duration. Expiry is judged by how long this node
// has watched the Lease unchanged, not by comparing renewTime with the local clock: clocks of nodes (and of
// two clusters) differ, and after an API server outage the holder gets a full duration to renew before
// anyone takes over, instead of losing the Lease to whichever node re-lists first.
bool lease_claimable(const LeaseState &lease, const std::string &identity,
                     std::chrono::steady_clock::duration unchanged_for);

// current as read (or a new Lease), with the kind, name, namespace and our managed-by label a write needs; the
// rest of the object (its resourceVersion, fields of others) kept.
nlohmann::json lease_to_write(const LeaseState &current, const std::string &namespace_, const std::string &name);
// The Lease with identity as holder, renewed now: the body for POST (when !current.exists) or PUT. A change of
// holder sets acquireTime and counts one transition. services: for kServicesAnnotation.
nlohmann::json lease_claim(const LeaseState &current, const std::string &namespace_, const std::string &name,
                           const std::string &identity, std::chrono::seconds duration, Clock::time_point now,
                           const std::string &services = {});
// The Lease with no holder, for PUT: the next eligible node may claim it at once instead of waiting for it to
// expire.
nlohmann::json lease_release(const LeaseState &current);

// RFC 3339 with microseconds, as the API's MicroTime: "2026-11-29T21:00:00.123456Z".
std::string format_micro_time(Clock::time_point t);
// Accepts RFC 3339 UTC times with or without fractional seconds ("Z" only); nullopt otherwise.
std::optional<Clock::time_point> parse_micro_time(const std::string &text);

} // namespace bpfnet::k8s
