// The claim state machine (core/claim.hpp), one test per row of the table in docs/design.md ("Claims"), on a
// clock the test moves by hand.
#include "core/addresses.hpp"
#include "core/claim.hpp"

#include <gtest/gtest.h>

#include <ostream>

namespace bpfnet {

// Failures name the states and actions, not their numbers.
void PrintTo(ClaimState state, std::ostream *os) {
    *os << to_string(state);
}
void PrintTo(ClaimAction action, std::ostream *os) {
    *os << to_string(action);
}

namespace {

using namespace std::chrono_literals;
using Actions = std::vector<ClaimAction>;
using TimePoint = ClaimMachine::Clock::time_point;

constexpr auto kLease = 15s;   // a Lease duration
constexpr auto kAnnounce = 2s; // a takeover's announcement interval

class Claims : public ::testing::Test {
protected:
    TimePoint now = TimePoint{} + 1h; // well after the epoch, which an adopted IP is confirmed until
    ClaimMachine claims{[this] {
        return now;
    }};
    const bpfnet_ip ip = *parse_ip("198.18.0.10");

    void serving() { ASSERT_EQ(claims.confirmed(ip, now + kLease).to, ClaimState::Serving); }
    void unconfirmed() {
        serving();
        now += kLease + 1ms;
        ASSERT_EQ(claims.state(ip), ClaimState::Unconfirmed);
    }
    void yielded() {
        unconfirmed();
        ASSERT_EQ(claims.conflict_seen(ip).to, ClaimState::Yielded);
    }
    void announcing() { ASSERT_EQ(claims.taken_over(ip, now + kLease, now + kAnnounce).to, ClaimState::Announcing); }
    void released() {
        serving();
        ASSERT_EQ(claims.dropped(ip).to, ClaimState::Released);
    }
    void held_by_config() { ASSERT_EQ(claims.held_by_config(ip).to, ClaimState::Serving); }

    static void expect(const ClaimStep &step, ClaimState from, ClaimState to, const Actions &actions = {}) {
        EXPECT_EQ(step.from, from);
        EXPECT_EQ(step.to, to);
        EXPECT_EQ(step.actions, actions);
    }
};

// --- a Lease written: confirmed ---------------------------------------------------------------------------

TEST_F(Claims, UnclaimedConfirmedServes) {
    EXPECT_EQ(claims.state(ip), ClaimState::Unclaimed);
    expect(claims.confirmed(ip, now + kLease), ClaimState::Unclaimed, ClaimState::Serving);
    EXPECT_FALSE(claims.announcing(ip));
}

TEST_F(Claims, ReleasedConfirmedServes) {
    released();
    expect(claims.confirmed(ip, now + kLease), ClaimState::Released, ClaimState::Serving);
}

TEST_F(Claims, ServingRenewedStaysServingUntilTheNewTime) {
    serving();
    now += kLease - 1s;
    expect(claims.confirmed(ip, now + kLease), ClaimState::Serving, ClaimState::Serving);
    now += kLease - 1s; // past the first confirmation, not the second
    EXPECT_EQ(claims.state(ip), ClaimState::Serving);
}

TEST_F(Claims, UnconfirmedConfirmedServesAgain) {
    unconfirmed();
    expect(claims.confirmed(ip, now + kLease), ClaimState::Unconfirmed, ClaimState::Serving);
}

TEST_F(Claims, YieldedConfirmedAheadIsReactivated) {
    yielded();
    expect(claims.confirmed(ip, now + kLease), ClaimState::Yielded, ClaimState::Serving, {ClaimAction::Reactivate});
    EXPECT_FALSE(claims.yielded(ip));
}

TEST_F(Claims, YieldedConfirmedUntilAPastTimeStaysYielded) {
    yielded();
    expect(claims.confirmed(ip, now - 1ms), ClaimState::Yielded, ClaimState::Yielded);
    expect(claims.confirmed(ip, now), ClaimState::Yielded, ClaimState::Yielded); // "until now" is over too
}

TEST_F(Claims, AnnouncingRenewedKeepsAnnouncing) {
    announcing();
    expect(claims.confirmed(ip, now + kLease), ClaimState::Announcing, ClaimState::Announcing);
    EXPECT_TRUE(claims.announcing(ip));
}

// --- a Lease taken over -------------------------------------------------------------------------------------

TEST_F(Claims, UnclaimedTakenOverAnnouncesBeforeItIsAnswered) {
    expect(claims.taken_over(ip, now + kLease, now + kAnnounce), ClaimState::Unclaimed, ClaimState::Announcing,
           {ClaimAction::Announce});
    EXPECT_TRUE(claims.announcing(ip));
}

TEST_F(Claims, ReleasedTakenOverAnnounces) {
    released();
    expect(claims.taken_over(ip, now + kLease, now + kAnnounce), ClaimState::Released, ClaimState::Announcing,
           {ClaimAction::Announce});
}

TEST_F(Claims, YieldedTakenOverIsReactivatedAndAnnounces) {
    yielded();
    expect(claims.taken_over(ip, now + kLease, now + kAnnounce), ClaimState::Yielded, ClaimState::Announcing,
           {ClaimAction::Reactivate, ClaimAction::Announce});
}

TEST_F(Claims, YieldedTakenOverUntilAPastTimeStaysYieldedAndSilent) {
    yielded();
    expect(claims.taken_over(ip, now - 1ms, now + kAnnounce), ClaimState::Yielded, ClaimState::Yielded);
}

// --- the clock -----------------------------------------------------------------------------------------------

TEST_F(Claims, AnnouncingIsServingOnceTheAnnouncementIntervalIsOver) {
    announcing();
    now += kAnnounce - 1ms;
    EXPECT_EQ(claims.state(ip), ClaimState::Announcing);
    now += 1ms;
    EXPECT_EQ(claims.state(ip), ClaimState::Serving);
    EXPECT_FALSE(claims.announcing(ip));
}

TEST_F(Claims, ServingIsUnconfirmedOnceTheConfirmationIsOver) {
    serving();
    now += kLease;
    EXPECT_EQ(claims.state(ip), ClaimState::Serving); // "until" is inclusive
    now += 1ms;
    EXPECT_EQ(claims.state(ip), ClaimState::Unconfirmed);
}

TEST_F(Claims, HeldByConfigServesForGood) {
    held_by_config();
    now += 1000h;
    EXPECT_EQ(claims.state(ip), ClaimState::Serving);
}

// --- a restart finds the IP active ----------------------------------------------------------------------------

TEST_F(Claims, UnclaimedAdoptedActiveIsUnconfirmed) {
    expect(claims.adopted_active(ip), ClaimState::Unclaimed, ClaimState::Unconfirmed);
}

TEST_F(Claims, ServingAdoptedActiveKeepsItsClaim) {
    serving();
    expect(claims.adopted_active(ip), ClaimState::Serving, ClaimState::Serving);
}

// --- another MAC claims the IP ----------------------------------------------------------------------------------

TEST_F(Claims, UnconfirmedConflictYields) {
    unconfirmed();
    const ClaimStep step = claims.conflict_seen(ip);
    expect(step, ClaimState::Unconfirmed, ClaimState::Yielded, {ClaimAction::Deactivate, ClaimAction::ReportYield});
    EXPECT_EQ(step.unconfirmed_for, 1ms);
    EXPECT_TRUE(claims.yielded(ip));
}

TEST_F(Claims, AdoptedActiveConflictYields) {
    claims.adopted_active(ip);
    const ClaimStep step = claims.conflict_seen(ip);
    expect(step, ClaimState::Unconfirmed, ClaimState::Yielded, {ClaimAction::Deactivate, ClaimAction::ReportYield});
    EXPECT_EQ(step.unconfirmed_for, std::chrono::duration_cast<std::chrono::milliseconds>(1h));
}

TEST_F(Claims, ServingConflictIsReportedAtMostOncePerInterval) {
    serving();
    expect(claims.conflict_seen(ip), ClaimState::Serving, ClaimState::Serving, {ClaimAction::ReportConflict});
    now += ClaimMachine::kConflictReportInterval - 1ms;
    expect(claims.conflict_seen(ip), ClaimState::Serving, ClaimState::Serving);
    now += 1ms;
    expect(claims.conflict_seen(ip), ClaimState::Serving, ClaimState::Serving, {ClaimAction::ReportConflict});
}

TEST_F(Claims, AnnouncingConflictIsReported) {
    announcing();
    expect(claims.conflict_seen(ip), ClaimState::Announcing, ClaimState::Announcing, {ClaimAction::ReportConflict});
}

TEST_F(Claims, YieldedConflictIsReported) {
    yielded();
    expect(claims.conflict_seen(ip), ClaimState::Yielded, ClaimState::Yielded, {ClaimAction::ReportConflict});
}

TEST_F(Claims, UnclaimedConflictIsReported) {
    expect(claims.conflict_seen(ip), ClaimState::Unclaimed, ClaimState::Unclaimed, {ClaimAction::ReportConflict});
}

TEST_F(Claims, ReleasedConflictIsReported) {
    released();
    now += 1000h; // no confirmation left to run out
    expect(claims.conflict_seen(ip), ClaimState::Released, ClaimState::Released, {ClaimAction::ReportConflict});
}

TEST_F(Claims, HeldByConfigConflictIsReportedNeverYields) {
    held_by_config();
    now += 1000h;
    expect(claims.conflict_seen(ip), ClaimState::Serving, ClaimState::Serving, {ClaimAction::ReportConflict});
}

// --- the claim ends ------------------------------------------------------------------------------------------------

TEST_F(Claims, ServingDroppedIsReleased) {
    serving();
    expect(claims.dropped(ip), ClaimState::Serving, ClaimState::Released, {ClaimAction::EndAnnouncement});
}

TEST_F(Claims, UnconfirmedDroppedIsReleased) {
    unconfirmed();
    expect(claims.dropped(ip), ClaimState::Unconfirmed, ClaimState::Released, {ClaimAction::EndAnnouncement});
}

TEST_F(Claims, AnnouncingDroppedIsReleasedAndEndsTheAnnouncement) {
    announcing();
    expect(claims.dropped(ip), ClaimState::Announcing, ClaimState::Released, {ClaimAction::EndAnnouncement});
    EXPECT_FALSE(claims.announcing(ip));
    // A later claim that is no takeover is answered at once.
    expect(claims.confirmed(ip, now + kLease), ClaimState::Released, ClaimState::Serving);
}

TEST_F(Claims, YieldedDroppedStaysYielded) {
    yielded();
    expect(claims.dropped(ip), ClaimState::Yielded, ClaimState::Yielded, {ClaimAction::EndAnnouncement});
}

TEST_F(Claims, HeldByConfigDroppedIsReleased) {
    held_by_config();
    expect(claims.dropped(ip), ClaimState::Serving, ClaimState::Released, {ClaimAction::EndAnnouncement});
}

TEST_F(Claims, ReleasedHeldByConfigServes) {
    released();
    expect(claims.held_by_config(ip), ClaimState::Released, ClaimState::Serving);
}

// --- the mode asks for an announcement --------------------------------------------------------------------------

TEST_F(Claims, ServingAnnounces) {
    serving();
    expect(claims.announce_requested(ip), ClaimState::Serving, ClaimState::Serving, {ClaimAction::Announce});
}

TEST_F(Claims, YieldedNeverAnnounces) {
    yielded();
    expect(claims.announce_requested(ip), ClaimState::Yielded, ClaimState::Yielded);
}

// --- the node leaves with a grace --------------------------------------------------------------------------------

TEST_F(Claims, LeavingWithGraceIsForGoodAndKeepsEveryClaim) {
    serving();
    EXPECT_FALSE(claims.leaving());
    claims.leave_with_grace();
    EXPECT_TRUE(claims.leaving());
    EXPECT_EQ(claims.state(ip), ClaimState::Serving);
    now += kLease + 1ms;
    expect(claims.conflict_seen(ip), ClaimState::Unconfirmed, ClaimState::Yielded,
           {ClaimAction::Deactivate, ClaimAction::ReportYield});
    EXPECT_TRUE(claims.leaving());
}

// One machine per IP: what happens to one leaves the others as they are.
TEST_F(Claims, EachIpHasItsOwnMachine) {
    const bpfnet_ip other = *parse_ip("fd00:1::10");
    unconfirmed();
    claims.confirmed(other, now + kLease);
    claims.conflict_seen(ip);
    EXPECT_EQ(claims.state(ip), ClaimState::Yielded);
    EXPECT_EQ(claims.state(other), ClaimState::Serving);
    expect(claims.conflict_seen(other), ClaimState::Serving, ClaimState::Serving, {ClaimAction::ReportConflict});
}

// --- Probing before answering (Kubernetes mode): docs/design.md's rows for probing and deferred --------------

class ProbingClaims : public Claims {
protected:
    void SetUp() override { claims.probe_before_answering(true); }
    void probing() { ASSERT_EQ(claims.confirmed(ip, now + kLease).to, ClaimState::Probing); }
    void deferred() {
        probing();
        ASSERT_EQ(claims.probe_answered(ip).to, ClaimState::Deferred);
    }
};

TEST_F(ProbingClaims, UnclaimedLeaseWrittenProbesFirst) {
    const ClaimStep step = claims.confirmed(ip, now + kLease);
    expect(step, ClaimState::Unclaimed, ClaimState::Probing, {ClaimAction::Probe});
    EXPECT_TRUE(claims.withheld(ip));
}

TEST_F(ProbingClaims, ReleasedLeaseWrittenProbesFirst) {
    probing();
    ASSERT_EQ(claims.probe_unanswered(ip).to, ClaimState::Serving);
    ASSERT_EQ(claims.dropped(ip).to, ClaimState::Released);
    expect(claims.confirmed(ip, now + kLease), ClaimState::Released, ClaimState::Probing, {ClaimAction::Probe});
}

TEST_F(ProbingClaims, ProbingUnansweredServes) {
    probing();
    const ClaimStep step = claims.probe_unanswered(ip);
    expect(step, ClaimState::Probing, ClaimState::Serving, {ClaimAction::Reactivate});
    EXPECT_EQ(step.deferred_for, 0ms);
    EXPECT_FALSE(claims.withheld(ip));
}

TEST_F(ProbingClaims, ProbingAnsweredDefers) {
    probing();
    expect(claims.probe_answered(ip), ClaimState::Probing, ClaimState::Deferred, {ClaimAction::ReportDeferred});
    EXPECT_TRUE(claims.withheld(ip));
}

TEST_F(ProbingClaims, DeferredAnsweredAgainIsNotReportedAgain) {
    deferred();
    expect(claims.probe_answered(ip), ClaimState::Deferred, ClaimState::Deferred);
}

TEST_F(ProbingClaims, DeferredUnansweredServesAndSaysForHowLong) {
    deferred();
    now += 12s;
    const ClaimStep step = claims.probe_unanswered(ip);
    expect(step, ClaimState::Deferred, ClaimState::Serving, {ClaimAction::Reactivate});
    EXPECT_EQ(step.deferred_for, 12s);
}

TEST_F(ProbingClaims, RenewalWhileProbingOrDeferredChangesNothing) {
    probing();
    expect(claims.confirmed(ip, now + kLease), ClaimState::Probing, ClaimState::Probing);
    ASSERT_EQ(claims.probe_answered(ip).to, ClaimState::Deferred);
    now += 5s;
    expect(claims.confirmed(ip, now + kLease), ClaimState::Deferred, ClaimState::Deferred);
}

TEST_F(ProbingClaims, DeferredStaysDeferredPastItsConfirmation) {
    deferred();
    now += kLease + 1ms;
    EXPECT_EQ(claims.state(ip), ClaimState::Deferred);
}

TEST_F(ProbingClaims, DroppedWhileProbingOrDeferredEndsTheProbe) {
    probing();
    expect(claims.dropped(ip), ClaimState::Probing, ClaimState::Released,
           {ClaimAction::EndAnnouncement, ClaimAction::EndProbe});
    deferred();
    expect(claims.dropped(ip), ClaimState::Deferred, ClaimState::Released,
           {ClaimAction::EndAnnouncement, ClaimAction::EndProbe});
    // A probe that ends after the claim did is nobody's: nothing is answered.
    expect(claims.probe_unanswered(ip), ClaimState::Released, ClaimState::Released);
}

TEST_F(ProbingClaims, YieldLiftedProbesFirst) {
    probing();
    ASSERT_EQ(claims.probe_unanswered(ip).to, ClaimState::Serving);
    now += kLease + 1ms;
    ASSERT_EQ(claims.conflict_seen(ip).to, ClaimState::Yielded);
    expect(claims.confirmed(ip, now + kLease), ClaimState::Yielded, ClaimState::Probing, {ClaimAction::Probe});
}

TEST_F(ProbingClaims, AdoptedClaimThatWentStandbyProbesWhenClaimedAgain) {
    ASSERT_EQ(claims.adopted_active(ip).to, ClaimState::Unconfirmed);
    expect(claims.standby(ip), ClaimState::Unconfirmed, ClaimState::Released);
    expect(claims.confirmed(ip, now + kLease), ClaimState::Released, ClaimState::Probing, {ClaimAction::Probe});
}

TEST_F(ProbingClaims, AdoptedClaimStillAnsweredIsRenewedWithoutAProbe) {
    ASSERT_EQ(claims.adopted_active(ip).to, ClaimState::Unconfirmed);
    expect(claims.confirmed(ip, now + kLease), ClaimState::Unconfirmed, ClaimState::Serving);
}

TEST_F(ProbingClaims, StandbyEndsNoClaimThisNodeMadeOrConfirmed) {
    probing();
    expect(claims.standby(ip), ClaimState::Probing, ClaimState::Probing);
    ASSERT_EQ(claims.probe_unanswered(ip).to, ClaimState::Serving);
    now += kLease + 1ms;
    expect(claims.standby(ip), ClaimState::Unconfirmed, ClaimState::Unconfirmed);
    held_by_config();
    expect(claims.standby(ip), ClaimState::Serving, ClaimState::Serving);
}

TEST_F(ProbingClaims, TakeoverAnnouncesThenIsProbedFromItsAnswerTime) {
    expect(claims.taken_over(ip, now + kLease, now + kAnnounce), ClaimState::Unclaimed, ClaimState::Announcing,
           {ClaimAction::Probe, ClaimAction::Announce});
    EXPECT_FALSE(claims.withheld(ip)); // not answered while announcing: the mode holds its backend back
    now += kAnnounce;
    EXPECT_EQ(claims.state(ip), ClaimState::Probing);
    EXPECT_TRUE(claims.withheld(ip));
    expect(claims.probe_unanswered(ip), ClaimState::Probing, ClaimState::Serving, {ClaimAction::Reactivate});
}

TEST_F(ProbingClaims, TakeoverAnsweredAtItsAnswerTimeDefers) {
    ASSERT_EQ(claims.taken_over(ip, now + kLease, now + kAnnounce).to, ClaimState::Announcing);
    now += kAnnounce;
    expect(claims.probe_answered(ip), ClaimState::Probing, ClaimState::Deferred, {ClaimAction::ReportDeferred});
}

TEST_F(ProbingClaims, YieldLiftedByATakeoverProbesInsteadOfReactivating) {
    probing();
    ASSERT_EQ(claims.probe_unanswered(ip).to, ClaimState::Serving);
    now += kLease + 1ms;
    ASSERT_EQ(claims.conflict_seen(ip).to, ClaimState::Yielded);
    expect(claims.taken_over(ip, now + kLease, now + kAnnounce), ClaimState::Yielded, ClaimState::Announcing,
           {ClaimAction::Probe, ClaimAction::Announce});
}

TEST_F(ProbingClaims, NoAnnouncementWhileProbingOrDeferred) {
    probing();
    expect(claims.announce_requested(ip), ClaimState::Probing, ClaimState::Probing);
    ASSERT_EQ(claims.probe_answered(ip).to, ClaimState::Deferred);
    expect(claims.announce_requested(ip), ClaimState::Deferred, ClaimState::Deferred);
}

TEST_F(ProbingClaims, ConfigClaimsAreNeverProbed) {
    held_by_config();
}

TEST_F(Claims, WithoutProbingALeaseWrittenServesAtOnce) {
    expect(claims.confirmed(ip, now + kLease), ClaimState::Unclaimed, ClaimState::Serving);
    expect(claims.probe_answered(ip), ClaimState::Serving, ClaimState::Serving);
}

} // namespace
} // namespace bpfnet
