#include "k8s/lease_keeper.hpp"

#include "k8s/json_fields.hpp"

#include "core/addresses.hpp"
#include "core/log.hpp"

#include <stdexcept>

namespace bpfnet::k8s {

using nlohmann::json;

namespace {

// The retry of a delete that failed, or that the watch has not shown yet.
constexpr auto kDeleteRetry = std::chrono::seconds(30);

std::string join(const std::vector<std::string> &items) {
    std::string out;
    for (const std::string &item : items)
        out += (out.empty() ? "" : ",") + item;
    return out;
}

// The Services the Lease's annotation lists, as this node last wrote it.
std::string listed_services(const LeaseState &lease) {
    const json *meta = member(lease.object, "metadata");
    const json *annotations = meta ? member(*meta, "annotations") : nullptr;
    return annotations ? string_member(*annotations, kServicesAnnotation) : std::string();
}

} // namespace

LeaseKeeper::LeaseKeeper(ApiClient &api, Claims &claims, Options options, Now now)
    : api_(api), claims_(claims), options_(std::move(options)), now_(std::move(now)) {}

std::string LeaseKeeper::leases_path() const {
    return "/apis/coordination.k8s.io/v1/namespaces/" + options_.lease_namespace + "/leases";
}

std::chrono::milliseconds LeaseKeeper::renew_period() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(options_.lease_duration) / 3;
}

std::string LeaseKeeper::lease_key(const std::string &name) const {
    return options_.lease_namespace + "/" + name;
}

std::optional<LeaseState> LeaseKeeper::fetch_lease(const std::string &name) {
    Response r = api_.request("GET", leases_path() + "/" + name, nullptr, options_.write_timeout);
    if (r.status == 404)
        return LeaseState{};
    if (r.status < 200 || r.status >= 300)
        throw_api_error(r);
    if (!r.body.is_object())
        return std::nullopt;
    return read_lease(r.body);
}

LeaseKeeper::SteadyClock::duration LeaseKeeper::unchanged_for(const LeaseState &lease) {
    if (!lease.exists)
        return {};
    const auto now = now_();
    auto &seen = observed_[lease.namespace_ + "/" + lease.name];
    if (seen.resource_version != lease.resource_version || seen.since == SteadyClock::time_point{})
        seen = {lease.resource_version, now};
    return now - seen.since;
}

std::uint64_t LeaseKeeper::observation_epoch(const WatchStats &lease_watch) {
    return lease_watch.lists + lease_watch.failures + lease_watch.stalls;
}

void LeaseKeeper::forget_unseen_leases(const Snapshot &leases, std::uint64_t watch_epoch) {
    // While the watch was down (an API server outage, a reconnect) nothing could be observed: every Lease
    // starts a new observation, so its holder gets a full duration to renew once the API server is back.
    if (watch_epoch != lease_watch_epoch_) {
        lease_watch_epoch_ = watch_epoch;
        observed_.clear();
    }
    std::erase_if(observed_, [&](const auto &entry) { return !leases.contains(entry.first); });
    for (const auto &[key, object] : leases)
        unchanged_for(read_lease(object));
}

bool LeaseKeeper::hold_lease(const bpfnet_ip &service_ip, const std::vector<std::string> &services,
                             const Snapshot &leases, Clock::time_point now) {
    const std::string name = lease_name(service_ip);
    auto seen_it = leases.find(lease_key(name));
    LeaseState seen = seen_it == leases.end() ? LeaseState{} : read_lease(seen_it->second);

    auto held = held_.find(service_ip);
    if (held != held_.end()) {
        // The watch shows someone else's write (or is behind ours): only the server can tell which.
        if (seen.exists && seen.holder != options_.node_name &&
            seen.resource_version != held->second.resource_version) {
            std::optional<LeaseState> fresh;
            try {
                fresh = fetch_lease(name);
            } catch (const TransportError &e) {
                // The server cannot say: a held Lease stays held (the LAN arbitrates meanwhile).
                log_warn("lease not re-read; kept", {{"lease", name}, {"error", e.what()}});
                return true;
            }
            if (fresh && fresh->holder != options_.node_name) {
                log_warn("lease taken by another holder", {{"lease", name}, {"holder", fresh->holder}});
                lose_lease(service_ip);
                return lease_claimable(*fresh, options_.node_name, unchanged_for(*fresh)) &&
                       write_claim(service_ip, services, *fresh, now);
            }
            if (fresh)
                held->second = *fresh;
        }
        const bool relist = listed_services(held->second) != join(services);
        if (!relist && now_() - written_at_.at(service_ip) < renew_period())
            return true;
        return write_claim(service_ip, services, held->second, now);
    }
    if (!lease_claimable(seen, options_.node_name, unchanged_for(seen)))
        return false;
    return write_claim(service_ip, services, seen, now);
}

void LeaseKeeper::lose_lease(const bpfnet_ip &service_ip) {
    held_.erase(service_ip);
    written_at_.erase(service_ip);
    claims_.dropped(service_ip);
}

// Claims or renews; on 409 reads the Lease again and tries once more if it is still ours to take. An API
// server that cannot be reached keeps a held Lease held: the datapath keeps serving through an outage, and
// the runtime yields the IP if another node claims it on the LAN after this claim could not be renewed.
bool LeaseKeeper::write_claim(const bpfnet_ip &service_ip, const std::vector<std::string> &services, LeaseState base,
                              Clock::time_point now) {
    const std::string name = lease_name(service_ip);
    const std::string key = lease_key(name);
    bool holding = held_.contains(service_ip);
    for (int attempt = 0; attempt < 2; attempt++) {
        json body = lease_claim(base, options_.lease_namespace, name, options_.node_name, options_.lease_duration, now,
                                join(services));
        // Another node can take the Lease over only after it has watched this write unchanged for a full
        // duration, and it sees the write only after it was sent: the claim is good for that long from here.
        const auto sent = now_();
        try {
            json written = base.exists ? api_.put(leases_path() + "/" + name, body, options_.write_timeout)
                                       : api_.post(leases_path(), body, options_.write_timeout);
            LeaseState state = read_lease(written);
            if (!state.exists || state.holder != options_.node_name)
                throw std::runtime_error("the API server answered the Lease write with an unexpected object");
            // The previous holder did not release: it may still answer (cut off from the API server, not from
            // the LAN). The IP is announced first and answered one announcement interval later: the old
            // holder yields when it sees the claim.
            const bool takeover = !holding && base.exists && !base.holder.empty() && base.holder != options_.node_name;
            if (takeover)
                claims_.taken_over(service_ip, sent + options_.lease_duration, sent + options_.announce_interval);
            else
                claims_.confirmed(service_ip, sent + options_.lease_duration);
            held_[service_ip] = std::move(state);
            written_at_[service_ip] = sent;
            if (holding) {
                // Repeated on every renewal: a holder cut off from the API that missed the takeover's
                // announcement sees this one and yields.
                claims_.renewed(service_ip);
                return true;
            }
            log_info("lease acquired", {{"lease", key},
                                        {"service_ip", format_ip(service_ip)},
                                        {"services", join(services)},
                                        {"previous_holder", takeover ? base.holder : std::string("none")}});
            if (takeover) {
                ++takeovers_;
                taken_from_[service_ip] = base.holder;
            }
            return true;
        } catch (const ConflictError &) {
            std::optional<LeaseState> fresh;
            try {
                fresh = fetch_lease(name);
            } catch (const TransportError &e) {
                log_warn("API server unreachable; lease not re-read", {{"lease", key}, {"error", e.what()}});
                return holding;
            }
            if (!fresh || !lease_claimable(*fresh, options_.node_name, unchanged_for(*fresh))) {
                lose_lease(service_ip);
                return false;
            }
            if (holding && fresh->holder != options_.node_name) {
                // Not ours any more (expired, released by hand): the retry is a new claim, with a takeover's
                // announcement when someone else held it, and nothing to keep if the server is away.
                lose_lease(service_ip);
                holding = false;
            }
            base = *fresh;
        } catch (const TransportError &e) {
            log_warn("API server unreachable; lease not written", {{"lease", key}, {"error", e.what()}});
            return holding;
        } catch (const ApiError &e) {
            if (e.status() == 404 && base.exists) {
                base = LeaseState{}; // deleted (or an API server that lost its data): create it again
                continue;
            }
            log_warn("lease write refused",
                     {{"lease", key}, {"status", std::to_string(e.status())}, {"error", e.what()}});
            return holding;
        }
    }
    lose_lease(service_ip);
    return false;
}

void LeaseKeeper::release_leases(const std::set<bpfnet_ip> &kept, const Snapshot &leases) {
    std::map<bpfnet_ip, LeaseState> to_release;
    for (const auto &[ip, lease] : held_)
        if (!kept.contains(ip))
            to_release[ip] = lease;
    // Leases this node held before a restart, for IPs it does not serve now.
    for (const auto &[key, object] : leases) {
        LeaseState lease = read_lease(object);
        auto ip = lease_service_ip(lease.name);
        if (lease.holder != options_.node_name || !ip || kept.contains(*ip))
            continue;
        to_release.emplace(*ip, lease);
    }
    for (auto &[ip, lease] : to_release) {
        try {
            if (release_lease(ip, lease))
                lose_lease(ip);
        } catch (const std::exception &e) {
            log_warn("lease not released; retrying", {{"service_ip", format_ip(ip)}, {"error", e.what()}});
        }
    }
}

bool LeaseKeeper::release_lease(const bpfnet_ip &service_ip, LeaseState lease) {
    const std::string path = leases_path() + "/" + lease.name;
    for (int attempt = 0; attempt < 2; attempt++) {
        json body = lease_release(lease);
        Response r = api_.request("PUT", path, &body, options_.write_timeout);
        if (r.status >= 200 && r.status < 300) {
            log_info("lease released", {{"service_ip", format_ip(service_ip)}, {"lease", lease_key(lease.name)}});
            return true;
        }
        if (r.status == 404)
            return true;
        if (r.status != 409)
            throw_api_error(r);
        auto fresh = fetch_lease(lease.name);
        if (!fresh || fresh->holder != options_.node_name)
            return true; // someone else holds it now: nothing of ours to release
        lease = *fresh;
    }
    return false;
}

// Our Leases outlive their service IPs unless someone deletes them: a Lease whose IP no accepted Service uses
// any more is deleted once nobody holds it (released, or expired as this node observed it). The delete is
// conditional on the resourceVersion seen, so a node that claims it meanwhile (a Service on the IP again)
// wins.
void LeaseKeeper::collect_orphaned_leases(const Snapshot &leases, const std::set<bpfnet_ip> &used_ips) {
    for (const auto &[key, object] : leases) {
        LeaseState lease = read_lease(object);
        auto ip = lease_service_ip(lease.name);
        if (!ip || used_ips.contains(*ip) || held_.contains(*ip))
            continue;
        if (!lease.holder.empty() && unchanged_for(lease) <= lease.duration)
            continue;
        const auto now = now_();
        if (auto retry = lease_delete_retry_.find(key); retry != lease_delete_retry_.end() &&
                                                        retry->second.first == lease.resource_version &&
                                                        now < retry->second.second)
            continue; // asked at this version; the watch will show the result, or a retry is due later
        // Until the watch shows the deletion, or a failure's retry is due.
        lease_delete_retry_[key] = {lease.resource_version, now + kDeleteRetry};
        const json options = {{"kind", "DeleteOptions"},
                              {"apiVersion", "v1"},
                              {"preconditions", {{"resourceVersion", lease.resource_version}}}};
        try {
            Response r = api_.request("DELETE", leases_path() + "/" + lease.name, &options, options_.write_timeout);
            if (r.status >= 200 && r.status < 300)
                log_info("orphaned lease deleted", {{"lease", key}, {"service_ip", format_ip(*ip)}});
            else if (r.status != 404 && r.status != 409)
                log_warn("orphaned lease not deleted; retrying in 30 s",
                         {{"lease", key}, {"status", std::to_string(r.status)}, {"body", r.raw.substr(0, 200)}});
        } catch (const std::exception &e) {
            log_warn("orphaned lease not deleted; retrying in 30 s", {{"lease", key}, {"error", e.what()}});
        }
    }
    std::erase_if(lease_delete_retry_, [&](const auto &entry) { return !leases.contains(entry.first); });
}

bool LeaseKeeper::held_elsewhere(const bpfnet_ip &service_ip, const Snapshot &leases) const {
    auto it = leases.find(lease_key(lease_name(service_ip)));
    if (it == leases.end())
        return false;
    const std::string holder = read_lease(it->second).holder;
    return !holder.empty() && holder != options_.node_name;
}

std::optional<std::string> LeaseKeeper::taken_from(const bpfnet_ip &service_ip) const {
    auto it = taken_from_.find(service_ip);
    if (it == taken_from_.end())
        return std::nullopt;
    return it->second;
}

void LeaseKeeper::forget_previous_holders(const std::set<bpfnet_ip> &answered) {
    std::erase_if(taken_from_,
                  [&](const auto &entry) { return !held_.contains(entry.first) || answered.contains(entry.first); });
}

} // namespace bpfnet::k8s
