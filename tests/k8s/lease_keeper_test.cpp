// The Lease keeper (k8s/lease_keeper.hpp), one rule per test, against tests/k8s/apiserver_standin.py on
// 127.0.0.1 (a fresh stand-in per test) and on a steady clock the test moves by hand: nothing sleeps. The
// requests the keeper sends are read back, in order, from the stand-in's request log; what it tells the claim
// machine is recorded by a stand-in for the datapath runtime.
#include "k8s/lease_keeper.hpp"
#include "tests/k8s/standin.hpp"

#include "core/addresses.hpp"

#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

using namespace bpfnet;
using namespace bpfnet::k8s;
using namespace std::chrono_literals;

namespace {

using Lines = std::vector<std::string>;
using SteadyTime = LeaseKeeper::SteadyClock::time_point;

constexpr auto kDuration = 15s;
constexpr auto kAnnounce = 200ms;
const std::string kNamespace = "bpfnet-system";
const std::string kLeases = "/apis/coordination.k8s.io/v1/namespaces/bpfnet-system/leases";

std::string ms(LeaseKeeper::SteadyClock::duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

// What the keeper tells the claim machine, with times relative to the test's clock at the call.
class SaidClaims final : public LeaseKeeper::Claims {
public:
    explicit SaidClaims(const SteadyTime &now) : now_(now) {}
    void confirmed(const bpfnet_ip &ip, SteadyTime until) override {
        said_.push_back("confirmed " + format_ip(ip) + " for " + ms(until - now_));
    }
    void taken_over(const bpfnet_ip &ip, SteadyTime until, SteadyTime answer_at) override {
        said_.push_back("taken over " + format_ip(ip) + " for " + ms(until - now_) + ", answered in " +
                        ms(answer_at - now_));
    }
    void renewed(const bpfnet_ip &ip) override { said_.push_back("renewed " + format_ip(ip)); }
    void dropped(const bpfnet_ip &ip) override { said_.push_back("dropped " + format_ip(ip)); }
    // What was said since the last call.
    Lines take() { return std::exchange(said_, {}); }

private:
    const SteadyTime &now_;
    Lines said_;
};

struct TempDir {
    std::filesystem::path path;
    TempDir() {
        char tmpl[] = "/tmp/bpfnet-lease-XXXXXX";
        path = ::mkdtemp(tmpl);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

class LeaseKeeperTest : public ::testing::Test {
protected:
    TempDir dir;
    const std::string request_log = (dir.path / "requests.log").string();
    StandIn server{{"--request-log", request_log}};
    ApiClient api{server.config()};
    SteadyTime now = SteadyTime{} + 1h;
    Clock::time_point wall = *parse_micro_time("2026-12-01T12:00:00Z");
    // By the holder's time stamps, a Lease renewed then expired long ago: the keeper must not care.
    const Clock::time_point long_ago = *parse_micro_time("2000-01-01T00:00:00Z");
    SaidClaims claims{now};
    LeaseKeeper keeper{api, claims,
                       LeaseKeeper::Options{.node_name = "node-a",
                                            .lease_namespace = kNamespace,
                                            .lease_duration = kDuration,
                                            .announce_interval = kAnnounce,
                                            .write_timeout = 2000ms},
                       [this] {
                           return now;
                       }};
    std::uint64_t watch_epoch = 1;
    const bpfnet_ip ip = *parse_ip("198.18.0.10");
    const bpfnet_ip ip2 = *parse_ip("198.18.0.11");
    const bpfnet_ip ip3 = *parse_ip("198.18.0.12");
    const std::vector<std::string> ironic = {"metal3/ironic"};

    // One reconcile pass's work on one IP: observe the Leases the watch shows, then hold the IP's Lease.
    bool hold(const bpfnet_ip &of, const std::vector<std::string> &services) {
        const Snapshot leases = watched();
        keeper.forget_unseen_leases(leases, watch_epoch);
        return keeper.hold_lease(of, services, leases, wall);
    }
    bool hold() { return hold(ip, ironic); }
    void later(std::chrono::milliseconds d) {
        now += d;
        wall += d;
    }

    // The Leases as the loader's watch would show them.
    Snapshot watched() {
        return own([&] {
            Snapshot leases;
            const json list = api.get(kLeases);
            for (const json &item : list["items"])
                leases.emplace(object_key(item), item);
            return leases;
        });
    }
    // The Lease of an IP as the API server has it (null when there is none).
    json lease(const bpfnet_ip &of) {
        return own([&] {
            Response r = api.request("GET", kLeases + "/" + lease_name(of));
            return r.status == 404 ? json() : r.body;
        });
    }
    LeaseState lease_state(const bpfnet_ip &of) { return read_lease(lease(of)); }
    std::string services_listed(const bpfnet_ip &of) {
        return lease(of)["metadata"]["annotations"][kServicesAnnotation].get<std::string>();
    }
    // Another node (or this one before a restart) writes itself as the holder, renewed at `renewed`.
    void holds(const std::string &node, const bpfnet_ip &of, Clock::time_point renewed) {
        const LeaseState current = lease_state(of);
        const json body = lease_claim(current, kNamespace, lease_name(of), node, kDuration, renewed);
        own([&] { return current.exists ? api.put(kLeases + "/" + lease_name(of), body) : api.post(kLeases, body); });
    }
    void node_b_holds(const bpfnet_ip &of, Clock::time_point renewed) { holds("node-b", of, renewed); }
    void released(const bpfnet_ip &of) {
        const json body = lease_release(lease_state(of));
        own([&] { return api.put(kLeases + "/" + lease_name(of), body); });
    }
    // The next `count` PUTs answer 409, as if another writer had been faster.
    void conflicting_writes(int count) { api.post("/_test/conflict-writes", {{"count", count}}); }
    void api_server_reachable(bool on) { api.post("/_test/offline", {{"on", !on}}); }

    // The requests the keeper sent since the last call: "METHOD name", or "POST" on the collection.
    Lines sent() {
        keeper_requests();
        return std::exchange(sent_, {});
    }
    // The test's own requests (as the watch, or as another node) are no part of what the keeper sent.
    template <typename F>
    std::invoke_result_t<F> own(F request) {
        keeper_requests();
        auto result = request();
        new_requests();
        return result;
    }

private:
    Lines sent_;
    std::size_t logged_ = 0; // lines of the request log already read

    Lines new_requests() {
        std::ifstream in(request_log);
        Lines fresh;
        std::size_t n = 0;
        for (std::string line; std::getline(in, line); ++n) {
            if (n < logged_)
                continue;
            std::string request = line.substr(0, line.find('\t'));
            request = request.substr(0, request.find('?')); // writes name the field manager
            if (auto at = request.find(kLeases); at != std::string::npos) {
                const std::string name = request.substr(at + kLeases.size());
                request = request.substr(0, at - 1) + (name.empty() ? "" : " " + name.substr(1));
            }
            fresh.push_back(request);
        }
        logged_ = n;
        return fresh;
    }
    void keeper_requests() {
        for (std::string &request : new_requests())
            sent_.push_back(std::move(request));
    }
};

// --- claim -------------------------------------------------------------------------------------------------

TEST_F(LeaseKeeperTest, ClaimsAFreeLease) {
    EXPECT_TRUE(hold());
    EXPECT_EQ(sent(), (Lines{"POST"}));
    EXPECT_EQ(claims.take(), (Lines{"confirmed 198.18.0.10 for 15000 ms"}));
    const LeaseState written = lease_state(ip);
    EXPECT_EQ(written.holder, "node-a");
    EXPECT_EQ(written.duration, kDuration);
    EXPECT_EQ(written.renew_time, wall);
    EXPECT_EQ(services_listed(ip), "metal3/ironic");
    EXPECT_EQ(keeper.held_count(), 1u);
    EXPECT_EQ(keeper.takeovers(), 0u);
    EXPECT_FALSE(keeper.taken_from(ip));
}

// Released by its holder: claimed at once, without waiting for a duration, and not a takeover (nobody to
// yield).
TEST_F(LeaseKeeperTest, ClaimsAReleasedLeaseAtOnce) {
    node_b_holds(ip, wall);
    released(ip);
    EXPECT_TRUE(hold());
    EXPECT_EQ(sent(), (Lines{"PUT " + lease_name(ip)}));
    EXPECT_EQ(claims.take(), (Lines{"confirmed 198.18.0.10 for 15000 ms"}));
    EXPECT_EQ(lease_state(ip).holder, "node-a");
    EXPECT_EQ(keeper.takeovers(), 0u);
}

// A Lease this node held before a restart is its own: renewed at once, not taken over.
TEST_F(LeaseKeeperTest, ClaimsItsOwnLeaseAfterARestart) {
    holds("node-a", ip, long_ago);
    EXPECT_TRUE(hold());
    EXPECT_EQ(sent(), (Lines{"PUT " + lease_name(ip)}));
    EXPECT_EQ(claims.take(), (Lines{"confirmed 198.18.0.10 for 15000 ms"}));
    EXPECT_EQ(lease_state(ip).renew_time, wall);
    EXPECT_EQ(keeper.takeovers(), 0u);
}

// --- renewal -----------------------------------------------------------------------------------------------

TEST_F(LeaseKeeperTest, RenewsItsLeaseEveryThirdOfItsDuration) {
    ASSERT_TRUE(hold());
    sent();
    claims.take();
    later(4999ms);
    EXPECT_TRUE(hold());
    EXPECT_EQ(sent(), Lines{});
    EXPECT_EQ(claims.take(), Lines{});
    later(1ms);
    EXPECT_TRUE(hold());
    EXPECT_EQ(sent(), (Lines{"PUT " + lease_name(ip)}));
    // Each renewal confirms the claim again and repeats it on the LAN.
    EXPECT_EQ(claims.take(), (Lines{"confirmed 198.18.0.10 for 15000 ms", "renewed 198.18.0.10"}));
    EXPECT_EQ(lease_state(ip).renew_time, wall);
    EXPECT_EQ(lease_state(ip).holder, "node-a");
}

// Renewals are timed on the steady clock; the wall clock is only what renewTime says. An NTP step of an hour
// back neither stops them (renewTime + period would lie an hour ahead) nor does a step forward hasten them.
TEST_F(LeaseKeeperTest, RenewsOnTheSteadyClockWhateverTheWallClockDoes) {
    ASSERT_TRUE(hold());
    sent();
    now += 5s;
    wall -= 1h;
    EXPECT_TRUE(hold());
    EXPECT_EQ(sent(), (Lines{"PUT " + lease_name(ip)}));
    EXPECT_EQ(lease_state(ip).renew_time, wall); // written as it is: data for other nodes
    now += 1s;
    wall += 2h;
    EXPECT_TRUE(hold());
    EXPECT_EQ(sent(), Lines{});
    now += 4s;
    EXPECT_TRUE(hold());
    EXPECT_EQ(sent(), (Lines{"PUT " + lease_name(ip)}));
}

// The Lease's annotation names the Services on its IP: a change is written at once, before the renewal is due.
TEST_F(LeaseKeeperTest, RenewsAtOnceWhenItsServicesChange) {
    ASSERT_TRUE(hold());
    sent();
    EXPECT_TRUE(hold(ip, {"metal3/ironic", "metal3/ironic-inspector"}));
    EXPECT_EQ(sent(), (Lines{"PUT " + lease_name(ip)}));
    EXPECT_EQ(services_listed(ip), "metal3/ironic,metal3/ironic-inspector");
}

// --- expiry, as this node observes it ------------------------------------------------------------------------

// The holder's renewTime (long ago here) says nothing: a Lease is expired only once this node has watched the
// same version of it for longer than its duration, and every renewal starts that watch over.
TEST_F(LeaseKeeperTest, LeavesALeaseItsHolderRenewsWithinItsDuration) {
    node_b_holds(ip, long_ago);
    EXPECT_FALSE(hold());
    later(kDuration);
    EXPECT_FALSE(hold()); // unchanged for exactly its duration: not expired yet
    node_b_holds(ip, long_ago + 5s);
    later(10s);
    EXPECT_FALSE(hold()); // 25 s since first seen, 10 s since the renewal
    EXPECT_EQ(sent(), Lines{});
    EXPECT_EQ(claims.take(), Lines{});
    EXPECT_EQ(lease_state(ip).holder, "node-b");
    EXPECT_EQ(keeper.held_count(), 0u);
}

TEST_F(LeaseKeeperTest, TakesOverAnExpiredLeaseAndNamesItsHolder) {
    node_b_holds(ip, wall);
    EXPECT_FALSE(hold());
    later(kDuration + 1ms);
    EXPECT_TRUE(hold());
    EXPECT_EQ(sent(), (Lines{"PUT " + lease_name(ip)}));
    // Announced at once, answered one announcement interval later: the old holder yields first.
    EXPECT_EQ(claims.take(), (Lines{"taken over 198.18.0.10 for 15000 ms, answered in 200 ms"}));
    const LeaseState written = lease_state(ip);
    EXPECT_EQ(written.holder, "node-a");
    EXPECT_EQ(written.transitions, 1);
    EXPECT_EQ(keeper.takeovers(), 1u);
    EXPECT_EQ(keeper.taken_from(ip), "node-b");
    // The previous holder is kept for the Serving Event, until the IP is answered.
    keeper.forget_previous_holders({});
    EXPECT_EQ(keeper.taken_from(ip), "node-b");
    keeper.forget_previous_holders({ip});
    EXPECT_FALSE(keeper.taken_from(ip));
}

// While the Lease watch was down nothing was observed: the holder gets a full duration again.
TEST_F(LeaseKeeperTest, ObservesAnewAfterTheWatchReconnects) {
    node_b_holds(ip, wall);
    EXPECT_FALSE(hold());
    later(kDuration - 1s);
    ++watch_epoch; // the watch re-listed
    EXPECT_FALSE(hold());
    later(2s); // 16 s since first seen, 2 s since the watch came back
    EXPECT_FALSE(hold());
    later(kDuration - 1s);
    EXPECT_TRUE(hold());
    EXPECT_EQ(keeper.taken_from(ip), "node-b");
}

// What ends an observation, read off a real Lease watch against the stand-in: watches the server ends after
// their timeoutSeconds (1 s here) are resumed from their resourceVersion and end nothing; failed watch
// requests (the API server away: 503) do.
TEST_F(LeaseKeeperTest, ObservationOutlivesResumedWatchesNotFailedOnes) {
    WatchOptions options;
    options.timeout_seconds = 1;
    options.initial_backoff = 10ms;
    options.max_backoff = 50ms;
    Watcher watch(
        api, kLeases, [](const Snapshot &) {}, options);
    watch.start();
    auto eventually = [](const std::function<bool()> &done) {
        for (int i = 0; i < 200 && !done(); i++)
            std::this_thread::sleep_for(25ms);
        return done();
    };
    ASSERT_TRUE(eventually([&] { return watch.synced() && watch.stats().watches >= 1; }));
    const std::uint64_t epoch = LeaseKeeper::observation_epoch(watch.stats());
    const std::uint64_t watches = watch.stats().watches;
    ASSERT_TRUE(eventually([&] { return watch.stats().watches >= watches + 2; }));
    EXPECT_EQ(LeaseKeeper::observation_epoch(watch.stats()), epoch) << "a resumed watch ended an observation";
    own([&] { return api.post("/_test/block-watches", json{{"on", true}}); });
    EXPECT_TRUE(eventually([&] { return watch.stats().failures >= 1; }));
    EXPECT_NE(LeaseKeeper::observation_epoch(watch.stats()), epoch);
    own([&] { return api.post("/_test/block-watches", json{{"on", false}}); });
    watch.stop();
}

// --- conflicts (409) ---------------------------------------------------------------------------------------

// Another node's claim reached the API server first: this node's write gets 409, it reads the Lease again,
// finds it held (and just renewed) and gives up.
TEST_F(LeaseKeeperTest, LosesARaceForAFreeLease) {
    const Snapshot before = watched(); // no Lease yet
    node_b_holds(ip, wall);
    keeper.forget_unseen_leases(before, watch_epoch);
    EXPECT_FALSE(keeper.hold_lease(ip, ironic, before, wall));
    EXPECT_EQ(sent(), (Lines{"POST", "GET " + lease_name(ip)}));
    EXPECT_EQ(claims.take(), (Lines{"dropped 198.18.0.10"}));
    EXPECT_EQ(lease_state(ip).holder, "node-b");
    EXPECT_EQ(keeper.held_count(), 0u);
}

// A 409 on a renewal of a Lease that is still ours (the write raced with nothing that changed the holder):
// read again, written again.
TEST_F(LeaseKeeperTest, RetriesARenewalOnceAfterAConflict) {
    ASSERT_TRUE(hold());
    sent();
    claims.take();
    conflicting_writes(1);
    later(5s);
    EXPECT_TRUE(hold());
    EXPECT_EQ(sent(), (Lines{"PUT " + lease_name(ip), "GET " + lease_name(ip), "PUT " + lease_name(ip)}));
    EXPECT_EQ(claims.take(), (Lines{"confirmed 198.18.0.10 for 15000 ms", "renewed 198.18.0.10"}));
    EXPECT_EQ(lease_state(ip).renew_time, wall);
}

// Two conflicts in a row: the Lease is given up (the next pass claims it again if it is still free).
TEST_F(LeaseKeeperTest, GivesUpAfterASecondConflict) {
    ASSERT_TRUE(hold());
    sent();
    claims.take();
    conflicting_writes(2);
    later(5s);
    EXPECT_FALSE(hold());
    EXPECT_EQ(sent(), (Lines{"PUT " + lease_name(ip), "GET " + lease_name(ip), "PUT " + lease_name(ip),
                             "GET " + lease_name(ip)}));
    EXPECT_EQ(claims.take(), (Lines{"dropped 198.18.0.10"}));
    EXPECT_EQ(keeper.held_count(), 0u);
}

// The watch shows another holder on a Lease this node holds: the server is asked, and the Lease is lost.
TEST_F(LeaseKeeperTest, LosesAHeldLeaseAnotherNodeWrote) {
    ASSERT_TRUE(hold());
    sent();
    claims.take();
    node_b_holds(ip, wall);
    EXPECT_FALSE(hold());
    EXPECT_EQ(sent(), (Lines{"GET " + lease_name(ip)}));
    EXPECT_EQ(claims.take(), (Lines{"dropped 198.18.0.10"}));
    EXPECT_EQ(lease_state(ip).holder, "node-b");
    EXPECT_EQ(keeper.held_count(), 0u);
}

// --- an API server out of reach -------------------------------------------------------------------------------

// A held Lease stays held (the datapath serves on; the claim runs out unconfirmed and the LAN arbitrates), and
// a free one is not claimed.
TEST_F(LeaseKeeperTest, KeepsAHeldLeaseWhileTheApiServerIsAway) {
    ASSERT_TRUE(hold());
    sent();
    claims.take();
    const Snapshot leases = watched();
    api_server_reachable(false);
    later(5s);
    keeper.forget_unseen_leases(leases, watch_epoch);
    EXPECT_TRUE(keeper.hold_lease(ip, ironic, leases, wall));
    EXPECT_FALSE(keeper.hold_lease(ip2, ironic, leases, wall));
    // libcurl sends a request again, once, when the kept-alive connection it went out on closes unanswered.
    Lines requests = sent();
    requests.erase(std::unique(requests.begin(), requests.end()), requests.end());
    EXPECT_EQ(requests, (Lines{"PUT " + lease_name(ip), "POST"})); // no re-read, no other write
    EXPECT_EQ(claims.take(), Lines{});                             // neither confirmed nor dropped
    EXPECT_EQ(keeper.held_count(), 1u);
    api_server_reachable(true);
}

// --- release -----------------------------------------------------------------------------------------------

// The Leases of IPs no longer served here are released (holder cleared), those held before a restart too;
// kept IPs and other nodes' Leases are left alone.
TEST_F(LeaseKeeperTest, ReleasesTheLeasesOfIpsNoLongerServed) {
    const bpfnet_ip elsewhere = *parse_ip("198.18.0.13");
    ASSERT_TRUE(hold(ip, ironic));
    ASSERT_TRUE(hold(ip3, ironic));
    holds("node-a", ip2, wall); // from before a restart
    node_b_holds(elsewhere, wall);
    sent();
    claims.take();
    keeper.release_leases({ip3}, watched());
    EXPECT_EQ(sent(), (Lines{"PUT " + lease_name(ip), "PUT " + lease_name(ip2)}));
    EXPECT_EQ(claims.take(), (Lines{"dropped 198.18.0.10", "dropped 198.18.0.11"}));
    EXPECT_EQ(lease_state(ip).holder, "");
    EXPECT_FALSE(lease_state(ip).renew_time);
    EXPECT_EQ(lease_state(ip2).holder, "");
    EXPECT_EQ(lease_state(ip3).holder, "node-a");
    EXPECT_EQ(lease_state(elsewhere).holder, "node-b");
    EXPECT_EQ(keeper.held_count(), 1u);
}

// Another node took the Lease before the release was written: its 409 shows the Lease is not ours any more,
// and the new holder's claim stays.
TEST_F(LeaseKeeperTest, ReleaseLeavesALeaseAnotherNodeTook) {
    ASSERT_TRUE(hold());
    const Snapshot ours = watched();
    node_b_holds(ip, wall);
    sent();
    claims.take();
    keeper.release_leases({}, ours);
    EXPECT_EQ(sent(), (Lines{"PUT " + lease_name(ip), "GET " + lease_name(ip)}));
    EXPECT_EQ(claims.take(), (Lines{"dropped 198.18.0.10"}));
    EXPECT_EQ(lease_state(ip).holder, "node-b");
    EXPECT_EQ(keeper.held_count(), 0u);
}

// --- orphaned Leases ---------------------------------------------------------------------------------------

// A Lease whose IP no accepted Service uses is deleted once nobody holds it: released, or expired as observed.
// Leases of used IPs, Leases this node holds and Leases not named after an IP stay.
TEST_F(LeaseKeeperTest, CollectsOrphanedLeasesOnceNobodyHoldsThem) {
    const bpfnet_ip free_ip = *parse_ip("198.18.0.20"), expiring = *parse_ip("198.18.0.21"),
                    used = *parse_ip("198.18.0.22");
    ASSERT_TRUE(hold()); // held here, and not used: released first, then collected
    node_b_holds(free_ip, wall);
    released(free_ip);
    node_b_holds(expiring, wall);
    node_b_holds(used, wall);
    released(used);
    json other = lease_claim(LeaseState{}, kNamespace, "bpfnet-other", "node-b", kDuration, wall);
    other["spec"].erase("holderIdentity");
    own([&] { return api.post(kLeases, other); });
    sent();

    Snapshot leases = watched();
    keeper.forget_unseen_leases(leases, watch_epoch);
    keeper.collect_orphaned_leases(leases, {used});
    EXPECT_EQ(sent(), (Lines{"DELETE " + lease_name(free_ip)}));
    EXPECT_TRUE(lease(free_ip).is_null());

    later(kDuration + 1ms);
    leases = watched();
    keeper.forget_unseen_leases(leases, watch_epoch);
    keeper.collect_orphaned_leases(leases, {used});
    EXPECT_EQ(sent(), (Lines{"DELETE " + lease_name(expiring)}));
    EXPECT_TRUE(lease(expiring).is_null());
    EXPECT_FALSE(lease(ip).is_null());
    EXPECT_FALSE(lease(used).is_null());
    EXPECT_EQ(watched().size(), 3u); // ip's, used's and bpfnet-other
}

// The delete is conditional on the version seen: a node that claimed the Lease meanwhile wins. It is not asked
// again at that version until 30 s later.
TEST_F(LeaseKeeperTest, DeletesAnOrphanedLeaseOnlyAtTheVersionSeen) {
    node_b_holds(ip, wall);
    released(ip);
    const Snapshot before = watched();
    node_b_holds(ip, wall + 1s); // a Service on the IP again, claimed by node-b
    keeper.forget_unseen_leases(before, watch_epoch);
    keeper.collect_orphaned_leases(before, {});
    EXPECT_EQ(sent(), (Lines{"DELETE " + lease_name(ip)}));
    EXPECT_EQ(lease_state(ip).holder, "node-b");
    later(29s);
    keeper.collect_orphaned_leases(before, {});
    EXPECT_EQ(sent(), Lines{});
    later(1s);
    keeper.collect_orphaned_leases(before, {});
    EXPECT_EQ(sent(), (Lines{"DELETE " + lease_name(ip)}));
}

// --- who holds what --------------------------------------------------------------------------------------------

TEST_F(LeaseKeeperTest, HeldElsewhereMeansAnotherNodeHoldsTheLease) {
    node_b_holds(ip, wall);
    ASSERT_TRUE(hold(ip2, ironic));
    Snapshot leases = watched();
    EXPECT_TRUE(keeper.held_elsewhere(ip, leases));
    EXPECT_FALSE(keeper.held_elsewhere(ip2, leases)); // this node's
    EXPECT_FALSE(keeper.held_elsewhere(ip3, leases)); // no Lease
    released(ip);
    EXPECT_FALSE(keeper.held_elsewhere(ip, watched()));
}

} // namespace
