#include "k8s/lease.hpp"

#include "core/addresses.hpp"
#include "k8s/json_fields.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>

namespace bpfnet::k8s {

using nlohmann::json;

namespace {

std::optional<Clock::time_point> time_at(const json &object, const char *key) {
    return parse_micro_time(string_member(object, key));
}

// An IPv6 address as its eight groups in lower-case hex without leading zeros, '-'-separated: a Lease name
// must be a DNS subdomain (no ':'), and "::" compressed to "--" could end the name with '-'.
std::string ipv6_label(const bpfnet_ip &ip) {
    const auto *bytes = reinterpret_cast<const uint8_t *>(&ip);
    std::string label;
    for (int group = 0; group < 8; ++group) {
        char text[8];
        std::snprintf(text, sizeof(text), "%x", (bytes[2 * group] << 8) | bytes[2 * group + 1]);
        label += (group == 0 ? "" : "-") + std::string(text);
    }
    return label;
}

} // namespace

std::string lease_name(const bpfnet_ip &service_ip) {
    if (!is_v4(service_ip))
        return kLeaseNamePrefix + ipv6_label(service_ip);
    std::string name = kLeaseNamePrefix + format_ipv4(v4_of(service_ip));
    std::replace(name.begin(), name.end(), '.', '-'); // the dots of an IP would read as DNS labels
    return name;
}

std::optional<bpfnet_ip> lease_service_ip(const std::string &name) {
    const std::string prefix = kLeaseNamePrefix;
    if (name.rfind(prefix, 0) != 0)
        return std::nullopt;
    // Eight groups are IPv6 text with ':' for '-', four IPv4 with '.'; parse_ip takes either.
    std::string text = name.substr(prefix.size());
    const bool v6 = std::count(text.begin(), text.end(), '-') == 7;
    std::replace(text.begin(), text.end(), '-', v6 ? ':' : '.');
    const auto ip = parse_ip(text);
    // One spelling only: "bpfnet-198-18-0-010" or "bpfnet-fd00-1-0-0-0-0-0-02" is not ours.
    if (!ip || lease_name(*ip) != name)
        return std::nullopt;
    return ip;
}

LeaseState read_lease(const json &lease) {
    LeaseState state;
    if (!lease.is_object())
        return state;
    const json empty = json::object();
    const json &meta = lease.contains("metadata") && lease["metadata"].is_object() ? lease["metadata"] : empty;
    const json &spec = lease.contains("spec") && lease["spec"].is_object() ? lease["spec"] : empty;
    state.exists = true;
    state.object = lease;
    state.namespace_ = string_member(meta, "namespace");
    state.name = string_member(meta, "name");
    state.resource_version = string_member(meta, "resourceVersion");
    state.holder = string_member(spec, "holderIdentity");
    state.renew_time = time_at(spec, "renewTime");
    // The API takes an int32 here; anything beyond is clamped to it, so that the duration in nanoseconds
    // (lease_claimable compares it with the steady clock's) cannot overflow.
    if (auto it = spec.find("leaseDurationSeconds"); it != spec.end() && it->is_number_integer())
        state.duration = std::chrono::seconds(
            it->is_number_unsigned()
                ? static_cast<std::int64_t>(std::min<std::uint64_t>(it->get<std::uint64_t>(), INT32_MAX))
                : std::clamp<std::int64_t>(it->get<std::int64_t>(), 0, INT32_MAX));
    if (auto it = spec.find("leaseTransitions"); it != spec.end() && it->is_number_integer())
        state.transitions = it->get<std::int64_t>();
    return state;
}

bool lease_claimable(const LeaseState &lease, const std::string &identity,
                     std::chrono::steady_clock::duration unchanged_for) {
    return !lease.exists || lease.holder.empty() || lease.holder == identity || unchanged_for > lease.duration;
}

json lease_to_write(const LeaseState &current, const std::string &namespace_, const std::string &name) {
    json lease = current.exists ? current.object : json::object();
    lease["apiVersion"] = "coordination.k8s.io/v1";
    lease["kind"] = "Lease";
    if (!lease.contains("metadata") || !lease["metadata"].is_object())
        lease["metadata"] = json::object();
    json &meta = lease["metadata"];
    meta["name"] = name;
    meta["namespace"] = namespace_;
    if (!meta.contains("labels") || !meta["labels"].is_object())
        meta["labels"] = json::object();
    meta["labels"][kManagedByLabel] = kManagedByValue;
    return lease;
}

json lease_claim(const LeaseState &current, const std::string &namespace_, const std::string &name,
                 const std::string &identity, std::chrono::seconds duration, Clock::time_point now,
                 const std::string &services) {
    json lease = lease_to_write(current, namespace_, name);
    json &meta = lease["metadata"];
    if (!services.empty()) {
        if (!meta.contains("annotations") || !meta["annotations"].is_object())
            meta["annotations"] = json::object();
        meta["annotations"][kServicesAnnotation] = services;
    }
    if (!lease.contains("spec") || !lease["spec"].is_object())
        lease["spec"] = json::object();
    json &spec = lease["spec"];
    const std::string stamp = format_micro_time(now);
    bool new_holder = current.holder != identity;
    if (new_holder) {
        spec["acquireTime"] = stamp;
        spec["leaseTransitions"] = current.exists ? current.transitions + 1 : 0;
    }
    spec["holderIdentity"] = identity;
    spec["leaseDurationSeconds"] = duration.count();
    spec["renewTime"] = stamp;
    return lease;
}

json lease_release(const LeaseState &current) {
    json lease = current.object;
    if (!lease.contains("spec") || !lease["spec"].is_object())
        lease["spec"] = json::object();
    lease["spec"].erase("holderIdentity");
    lease["spec"].erase("acquireTime");
    lease["spec"].erase("renewTime");
    return lease;
}

std::string format_micro_time(Clock::time_point t) {
    auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
    std::time_t seconds = static_cast<std::time_t>(micros / 1000000);
    long fraction = static_cast<long>(micros % 1000000);
    if (fraction < 0) {
        fraction += 1000000;
        seconds -= 1;
    }
    std::tm tm{};
    gmtime_r(&seconds, &tm);
    char text[96];
    std::snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, fraction);
    return text;
}

std::optional<Clock::time_point> parse_micro_time(const std::string &text) {
    std::tm tm{};
    int consumed = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                    &tm.tm_min, &tm.tm_sec, &consumed) != 6 ||
        consumed != 19)
        return std::nullopt;
    std::size_t pos = 19;
    long micros = 0;
    if (pos < text.size() && text[pos] == '.') {
        long scale = 100000;
        std::size_t digits = 0;
        for (++pos; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos, ++digits) {
            micros += (text[pos] - '0') * scale;
            scale /= 10;
        }
        if (digits == 0)
            return std::nullopt;
    }
    if (pos + 1 != text.size() || text[pos] != 'Z')
        return std::nullopt;
    // Years the clock can hold: system_clock counts nanoseconds, about 292 years either side of 1970.
    if (tm.tm_year < 1970 || tm.tm_year > 2200 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
        tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return std::nullopt;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    std::time_t seconds = timegm(&tm);
    return Clock::time_point(std::chrono::seconds(seconds)) + std::chrono::microseconds(micros);
}

} // namespace bpfnet::k8s
