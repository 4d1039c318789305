#include "core/claim.hpp"

#include <algorithm>
#include <utility>

namespace bpfnet {

std::string_view to_string(ClaimState state) {
    switch (state) {
    case ClaimState::Unclaimed:
        return "unclaimed";
    case ClaimState::Probing:
        return "probing";
    case ClaimState::Deferred:
        return "deferred";
    case ClaimState::Announcing:
        return "announcing";
    case ClaimState::Serving:
        return "serving";
    case ClaimState::Unconfirmed:
        return "unconfirmed";
    case ClaimState::Yielded:
        return "yielded";
    case ClaimState::Released:
        return "released";
    }
    return "?";
}

std::string_view to_string(ClaimAction action) {
    switch (action) {
    case ClaimAction::Reactivate:
        return "reactivate";
    case ClaimAction::Deactivate:
        return "deactivate";
    case ClaimAction::Announce:
        return "announce";
    case ClaimAction::EndAnnouncement:
        return "end announcement";
    case ClaimAction::ReportConflict:
        return "report conflict";
    case ClaimAction::ReportYield:
        return "report yield";
    case ClaimAction::Probe:
        return "probe";
    case ClaimAction::EndProbe:
        return "end probe";
    case ClaimAction::ReportDeferred:
        return "report deferred";
    }
    return "?";
}

bool ClaimStep::has(ClaimAction action) const {
    return std::find(actions.begin(), actions.end(), action) != actions.end();
}

ClaimMachine::ClaimMachine(Now now) : now_(std::move(now)) {}

// The time-driven transitions (announcing -> serving at answer_at, serving -> unconfirmed after the
// confirmation) need no event: the state is read against the clock whenever it matters.
ClaimState ClaimMachine::state_of(const Claim &claim, Clock::time_point now) const {
    if (claim.yielded)
        return ClaimState::Yielded;
    if (!claim.held)
        return claim.ever_held ? ClaimState::Released : ClaimState::Unclaimed;
    if (now < claim.answer_at)
        return ClaimState::Announcing; // a takeover's: probed once its announcement interval is over
    if (claim.probe == Claim::Probe::Running)
        return ClaimState::Probing;
    if (claim.probe == Claim::Probe::Deferred)
        return ClaimState::Deferred;
    if (claim.confirmed_until && now > *claim.confirmed_until)
        return ClaimState::Unconfirmed;
    if (now < claim.answer_at)
        return ClaimState::Announcing;
    return ClaimState::Serving;
}

ClaimState ClaimMachine::state(const bpfnet_ip &ip) const {
    auto it = claims_.find(ip);
    return it == claims_.end() ? ClaimState::Unclaimed : state_of(it->second, now_());
}

bool ClaimMachine::probe_pending(const bpfnet_ip &ip) const {
    const ClaimState now = state(ip);
    return now == ClaimState::Probing || now == ClaimState::Deferred;
}

bool ClaimMachine::announcing(const bpfnet_ip &ip) const {
    auto it = claims_.find(ip);
    return it != claims_.end() && it->second.held && now_() < it->second.answer_at;
}

ClaimStep ClaimMachine::step(const bpfnet_ip &ip, ClaimState from, std::vector<ClaimAction> actions) const {
    return ClaimStep{.from = from, .to = state(ip), .actions = std::move(actions), .unconfirmed_for = {}};
}

ClaimStep ClaimMachine::held_by_config(const bpfnet_ip &ip) {
    const ClaimState from = state(ip);
    Claim &claim = claims_[ip];
    claim.held = claim.ever_held = true;
    claim.confirmed_until.reset();
    claim.answer_at = {};
    return step(ip, from);
}

ClaimStep ClaimMachine::confirmed(const bpfnet_ip &ip, Clock::time_point until) {
    return confirm(ip, until, probes_);
}

ClaimStep ClaimMachine::confirm(const bpfnet_ip &ip, Clock::time_point until, bool probe) {
    const ClaimState from = state(ip);
    Claim &claim = claims_[ip];
    const bool starts = !claim.held;
    claim.held = claim.ever_held = true;
    claim.confirmed_until = until;
    // A confirmation already over when it arrives (a write slower than the Lease duration) lifts no yield.
    if (claim.yielded && until > now_()) {
        claim.yielded = false;
        if (probe) // the MAC it yielded to may be a second cluster's, which answers on
            return start_probing(ip, from);
        return step(ip, from, {ClaimAction::Reactivate});
    }
    if (starts && !claim.yielded && probe)
        return start_probing(ip, from);
    return step(ip, from);
}

ClaimStep ClaimMachine::start_probing(const bpfnet_ip &ip, ClaimState from) {
    claims_[ip].probe = Claim::Probe::Running;
    return step(ip, from, {ClaimAction::Probe});
}

ClaimStep ClaimMachine::probe_unanswered(const bpfnet_ip &ip) {
    const ClaimState from = state(ip);
    if (from != ClaimState::Probing && from != ClaimState::Deferred)
        return step(ip, from);
    Claim &claim = claims_[ip];
    const auto deferred_for = from == ClaimState::Deferred ? now_() - claim.deferred_since : Clock::duration{};
    claim.probe = Claim::Probe::None;
    ClaimStep answered = step(ip, from, {ClaimAction::Reactivate}); // activated: announced by the apply
    answered.deferred_for = std::chrono::duration_cast<std::chrono::milliseconds>(deferred_for);
    return answered;
}

ClaimStep ClaimMachine::probe_answered(const bpfnet_ip &ip) {
    const ClaimState from = state(ip);
    if (from != ClaimState::Probing)
        return step(ip, from); // deferred already (reported when it began), or no probe of this machine's
    Claim &claim = claims_[ip];
    claim.probe = Claim::Probe::Deferred;
    claim.deferred_since = now_();
    return step(ip, from, {ClaimAction::ReportDeferred});
}

ClaimStep ClaimMachine::taken_over(const bpfnet_ip &ip, Clock::time_point until, Clock::time_point answer_at) {
    const ClaimState from = state(ip);
    ClaimStep confirm = this->confirm(ip, until, probes_);
    claims_[ip].answer_at = answer_at;
    std::vector<ClaimAction> actions = std::move(confirm.actions);
    if (!yielded(ip))
        actions.push_back(ClaimAction::Announce);
    return step(ip, from, std::move(actions));
}

ClaimStep ClaimMachine::dropped(const bpfnet_ip &ip) {
    const ClaimState from = state(ip);
    bool probing = false;
    if (auto it = claims_.find(ip); it != claims_.end()) {
        it->second.held = false;
        it->second.confirmed_until.reset();
        it->second.answer_at = {};
        probing = std::exchange(it->second.probe, Claim::Probe::None) != Claim::Probe::None;
    }
    if (probing)
        return step(ip, from, {ClaimAction::EndAnnouncement, ClaimAction::EndProbe});
    return step(ip, from, {ClaimAction::EndAnnouncement});
}

ClaimStep ClaimMachine::adopted_active(const bpfnet_ip &ip) {
    const ClaimState from = state(ip);
    Claim &claim = claims_[ip];
    if (!claim.held) {
        claim.held = claim.ever_held = true;
        claim.confirmed_until = Clock::time_point{}; // confirmed never: unconfirmed from the start
    }
    return step(ip, from);
}

ClaimStep ClaimMachine::standby(const bpfnet_ip &ip) {
    const ClaimState from = state(ip);
    auto it = claims_.find(ip);
    if (it != claims_.end() && it->second.held && it->second.confirmed_until == Clock::time_point{}) {
        it->second.held = false;
        it->second.confirmed_until.reset();
    }
    return step(ip, from);
}

ClaimStep ClaimMachine::conflict_seen(const bpfnet_ip &ip) {
    const ClaimState from = state(ip);
    const Clock::time_point now = now_();
    Claim &claim = claims_[ip];
    if (from == ClaimState::Unconfirmed) {
        claim.yielded = true;
        ClaimStep yield = step(ip, from, {ClaimAction::Deactivate, ClaimAction::ReportYield});
        yield.unconfirmed_for = std::chrono::duration_cast<std::chrono::milliseconds>(now - *claim.confirmed_until);
        return yield;
    }
    if (claim.last_report != Clock::time_point{} && now - claim.last_report < kConflictReportInterval)
        return step(ip, from);
    claim.last_report = now;
    return step(ip, from, {ClaimAction::ReportConflict});
}

ClaimStep ClaimMachine::announce_requested(const bpfnet_ip &ip) {
    const ClaimState from = state(ip);
    // A node that yielded an IP never claims it on the LAN, nor one that has not probed it clear.
    if (withheld(ip))
        return step(ip, from);
    return step(ip, from, {ClaimAction::Announce});
}

} // namespace bpfnet
