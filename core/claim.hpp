// Who may answer for a service IP: one state machine per IP, fed by whatever arbitrates ownership (a Lease
// keeper in Kubernetes mode, the config file in standalone mode) and by the datapath's conflict reports, and
// read against a steady clock that tests replace. It decides; DatapathRuntime and the modes carry out what it
// decides (the maps, announcements, logs, Events). docs/design.md ("Claims") has the table of its transitions.
//
// Not thread-safe: its owner (DatapathRuntime) calls it under its own lock.
#pragma once

#include "maps/layout.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

namespace bpfnet {

enum class ClaimState {
    Unclaimed,   // this node has never claimed the IP: a conflict is reported
    Probing,     // claimed (a Lease written), not answered yet: asking the LAN whether another MAC answers for it
    Deferred,    // claimed, but another MAC answered the probe (a second cluster): not answered, probed again
    Announcing,  // claimed by a takeover: announced on the LAN, answered only once the announcement is due over
    Serving,     // claimed and confirmed (until a time, or for good: standalone mode's config)
    Unconfirmed, // claimed, but the confirmation ran out (or an IP adopted active at a restart): a conflict yields
    Yielded,     // inactive because another MAC claimed it while unconfirmed, until a claim is confirmed again
    Released,    // the claim ended (the Lease released or taken by another node, the config no longer serves it)
};
std::string_view to_string(ClaimState state);

// What the machine asks its owner to do about one event, in this order.
enum class ClaimAction {
    Reactivate,      // the IP is answered again: bring the maps back to the mode's last desired state
    Deactivate,      // stop answering for the IP now (take it out of the maps) and end its announcement round
    Announce,        // announce the IP on the LAN (gratuitous ARP, unsolicited neighbour advertisement)
    EndAnnouncement, // an announcement round under way for the IP ends
    ReportConflict,  // log the conflict, tell the mode (Event Conflict)
    ReportYield,     // log the yield, tell the mode (Event Yielded)
    Probe,           // start probing the LAN for the IP (rounds until one goes unanswered or EndProbe)
    EndProbe,        // the probing for the IP ends (the claim is gone)
    ReportDeferred,  // log the deferral, tell the mode (Event Deferred)
};
std::string_view to_string(ClaimAction action);

struct ClaimStep {
    ClaimState from = ClaimState::Unclaimed;
    ClaimState to = ClaimState::Unclaimed;
    std::vector<ClaimAction> actions;
    // ReportYield: how long the claim had been unconfirmed when another MAC claimed the IP.
    std::chrono::milliseconds unconfirmed_for{0};
    // A claim answered after it was deferred: for how long (zero: it never was).
    std::chrono::milliseconds deferred_for{0};

    bool has(ClaimAction action) const;
};

class ClaimMachine {
public:
    using Clock = std::chrono::steady_clock;
    using Now = std::function<Clock::time_point()>;

    // A conflict on one IP is reported at most this often (the datapath reports a MAC about once a second):
    // a flood of claims cannot drown the log or the Events.
    static constexpr std::chrono::seconds kConflictReportInterval{10};

    explicit ClaimMachine(Now now = Clock::now);

    // Kubernetes mode: a claim that starts (a Lease written by a node that did not hold it, or a yield lifted)
    // is not answered before the LAN was probed for the IP and no other MAC answered (Probing, Deferred), so a
    // second cluster's node does not answer beside the one that already does (docs/kubernetes.md, "Pivot").
    // Off (standalone mode, and by default): such a claim is answered at once.
    void probe_before_answering(bool on) { probes_ = on; }

    // --- events --------------------------------------------------------------------------------------------
    // Standalone mode: the config serves the IP. Nothing confirms such a claim and nothing needs to: it is
    // served for as long as the config says so and never yields.
    ClaimStep held_by_config(const bpfnet_ip &ip);
    // A Lease write succeeded: until `until` another MAC claiming the IP is a conflict (a second cluster), after
    // it the claim is unconfirmed (the Lease could not be renewed) and such a claim makes this node yield. A
    // yielded IP is answered again when `until` is still ahead.
    ClaimStep confirmed(const bpfnet_ip &ip, Clock::time_point until);
    // A Lease taken over from a holder that did not release it: confirmed as above, announced at once, and not
    // answered before `answer_at` (the old holder, if still on the LAN, sees the announcement and yields).
    // With probing, probed from `answer_at` on (Probe: the owner starts the round then), when the holder it takes
    // over from has yielded and only another cluster's node would still answer.
    ClaimStep taken_over(const bpfnet_ip &ip, Clock::time_point until, Clock::time_point answer_at);
    // The claim is gone (released, taken by another node, no longer in the config). A yielded IP stays yielded:
    // the mode stops serving it with its next desired state, and only a new confirmed claim lifts the yield.
    ClaimStep dropped(const bpfnet_ip &ip);
    // A restart found the IP active in the maps (a predecessor's word): unconfirmed until a claim is confirmed,
    // so a loader cut off from the API server yields to another node's claim instead of answering beside it.
    // An IP this machine already has a claim for keeps it.
    ClaimStep adopted_active(const bpfnet_ip &ip);
    // The mode's desired state has no backend for the IP here (a standby node's). A claim adopted at a restart
    // and never confirmed ends with it (released): this node's next Lease write starts a claim (and probes),
    // rather than renewing one it never made. Other claims are the mode's to end.
    ClaimStep standby(const bpfnet_ip &ip);
    // The datapath saw another MAC claim the IP.
    ClaimStep conflict_seen(const bpfnet_ip &ip);
    // A probe round for the IP went unanswered: the claim is answered from now on (Reactivate, which announces
    // the IP as every activation is).
    ClaimStep probe_unanswered(const bpfnet_ip &ip);
    // Another MAC answered a probe for the IP, or probed for it itself: deferred, probed again until a round
    // goes unanswered or the claim ends.
    ClaimStep probe_answered(const bpfnet_ip &ip);
    // The mode asks for the IP to be announced (a takeover, a Lease renewal): never for a yielded IP.
    ClaimStep announce_requested(const bpfnet_ip &ip);
    // The loader stops and leaves the datapath answering for a grace (DatapathRuntime::leave_with_grace): a
    // state of the node, not of an IP. From here on nothing starts the heartbeat again.
    void leave_with_grace() { leaving_ = true; }

    // --- what the machine says now ---------------------------------------------------------------------------
    ClaimState state(const bpfnet_ip &ip) const;
    bool yielded(const bpfnet_ip &ip) const { return state(ip) == ClaimState::Yielded; }
    // The claim's probe has not come back clear: probing, or deferred to another MAC.
    bool probe_pending(const bpfnet_ip &ip) const;
    // Not answered whatever the mode's desired state says: yielded, or its probe pending.
    bool withheld(const bpfnet_ip &ip) const { return yielded(ip) || probe_pending(ip); }
    // The mode answers the IP only once this is false (a takeover's announcement interval is over).
    bool announcing(const bpfnet_ip &ip) const;
    bool leaving() const { return leaving_; }

private:
    struct Claim {
        bool held = false;      // a claim exists (a Lease written, the config, or adopted at a restart)
        bool ever_held = false; // released rather than unclaimed once it is gone
        // While held: the Lease's confirmation, or none (the config's claim, which never runs out).
        std::optional<Clock::time_point> confirmed_until;
        Clock::time_point answer_at{}; // a takeover's: announcing before it
        bool yielded = false;
        enum class Probe { None, Running, Deferred } probe = Probe::None;
        Clock::time_point deferred_since{};
        Clock::time_point last_report{}; // the last conflict reported (zero: never)
    };
    ClaimStep step(const bpfnet_ip &ip, ClaimState from, std::vector<ClaimAction> actions = {}) const;
    ClaimStep confirm(const bpfnet_ip &ip, Clock::time_point until, bool probe);
    ClaimStep start_probing(const bpfnet_ip &ip, ClaimState from);
    ClaimState state_of(const Claim &claim, Clock::time_point now) const;

    Now now_;
    std::map<bpfnet_ip, Claim> claims_;
    bool leaving_ = false;
    bool probes_ = false;
};

} // namespace bpfnet
