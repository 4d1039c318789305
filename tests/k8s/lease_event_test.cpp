// The Lease and Event bodies the loader writes, and the parsing of what it reads back: pure functions, no
// API server.
#include "core/addresses.hpp"
#include "k8s/event.hpp"
#include "k8s/lease.hpp"
#include "k8s/node_lease.hpp"
#include "k8s/service_model.hpp"

#include <gtest/gtest.h>

namespace bpfnet::k8s {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

json lease_object(const std::string &holder, int duration = 15, const std::string &rv = "42") {
    json spec = {{"leaseDurationSeconds", duration},
                 {"renewTime", "2026-11-29T21:00:00.250000Z"},
                 {"acquireTime", "2026-11-29T20:00:00Z"},
                 {"leaseTransitions", 3}};
    if (!holder.empty())
        spec["holderIdentity"] = holder;
    return {{"apiVersion", "coordination.k8s.io/v1"},
            {"kind", "Lease"},
            {"metadata", {{"name", "bpfnet-ironic"}, {"namespace", "metal3"}, {"resourceVersion", rv}}},
            {"spec", spec}};
}

TEST(MicroTime, FormatsUtcWithMicroseconds) {
    auto t = Clock::time_point(std::chrono::seconds(1795899600)) + 123456us; // 2026-11-28T21:00:00.123456Z
    EXPECT_EQ(format_micro_time(t), "2026-11-28T21:00:00.123456Z");
    EXPECT_EQ(parse_micro_time("2026-11-28T21:00:00.123456Z"), t);
}

TEST(MicroTime, ParsesWithAndWithoutFraction) {
    auto whole = parse_micro_time("2026-11-28T21:00:00Z");
    ASSERT_TRUE(whole);
    EXPECT_EQ(*parse_micro_time("2026-11-28T21:00:00.5Z") - *whole, 500000us);
    EXPECT_EQ(*parse_micro_time("2026-11-28T21:00:00.123456789Z") - *whole, 123456us);
}

TEST(MicroTime, RejectsWhatIsNotRfc3339Utc) {
    for (const char *bad :
         {"", "yesterday", "2026-11-28 21:00:00Z", "2026-11-28T21:00:00", "2026-11-28T21:00:00+01:00",
          "2026-13-28T21:00:00Z", "2026-11-28T24:00:00Z", "2026-11-28T21:00:00.Z", "2026-11-28T21:00:00ZZ"})
        EXPECT_FALSE(parse_micro_time(bad)) << bad;
}

// A time the clock cannot hold (nanoseconds since 1970 in 64 bits: years 1678 to 2262) is no time at all,
// not an overflow (found by tests/libfuzz/fuzz_watch_line: a renewTime in the year 3717).
TEST(MicroTime, RejectsYearsTheClockCannotHold) {
    for (const char *far : {"3717-12-04T23:01:30.123456Z", "9999-01-01T00:00:00Z", "0001-01-01T00:00:00Z",
                            "1969-12-31T23:59:59Z", "2201-01-01T00:00:00Z"})
        EXPECT_FALSE(parse_micro_time(far)) << far;
    EXPECT_TRUE(parse_micro_time("1970-01-01T00:00:00Z"));
    EXPECT_TRUE(parse_micro_time("2200-12-31T23:59:59Z"));
}

// leaseDurationSeconds is an int32 in the API; a larger number is clamped to it, so that comparing it with a
// steady-clock duration (nanoseconds) cannot overflow.
TEST(Lease, DurationBeyondInt32IsClamped) {
    json lease = lease_object("node-a");
    for (const json &huge : {json(std::int64_t{1} << 40), json(INT64_MAX), json(UINT64_MAX)}) {
        lease["spec"]["leaseDurationSeconds"] = huge;
        const LeaseState state = read_lease(lease);
        EXPECT_EQ(state.duration, std::chrono::seconds(INT32_MAX)) << huge;
        EXPECT_FALSE(lease_claimable(state, "node-b", std::chrono::hours(24 * 365)));
    }
    lease["spec"]["leaseDurationSeconds"] = -5;
    EXPECT_EQ(read_lease(lease).duration, 0s);
}

TEST(Lease, ReadsTheFieldsItUses) {
    LeaseState lease = read_lease(lease_object("node-a"));
    EXPECT_TRUE(lease.exists);
    EXPECT_EQ(lease.namespace_, "metal3");
    EXPECT_EQ(lease.name, "bpfnet-ironic");
    EXPECT_EQ(lease.resource_version, "42");
    EXPECT_EQ(lease.holder, "node-a");
    EXPECT_EQ(lease.duration, 15s);
    EXPECT_EQ(lease.transitions, 3);
    EXPECT_EQ(lease.renew_time, parse_micro_time("2026-11-29T21:00:00.25Z"));
}

TEST(Lease, WrongTypesCountAsAbsentAndNeverThrow) {
    json lease = lease_object("node-a");
    lease["spec"]["holderIdentity"] = 7;
    lease["spec"]["leaseDurationSeconds"] = "15";
    lease["spec"]["renewTime"] = json::array();
    lease["metadata"]["resourceVersion"] = 42;
    LeaseState state = read_lease(lease);
    EXPECT_TRUE(state.exists);
    EXPECT_EQ(state.holder, "");
    EXPECT_EQ(state.duration, 0s);
    EXPECT_FALSE(state.renew_time);
    EXPECT_EQ(state.resource_version, "");
    for (const json &garbage : {json(), json(5), json::array(), json{{"spec", "x"}, {"metadata", 1}}})
        EXPECT_NO_THROW(read_lease(garbage));
    EXPECT_FALSE(read_lease(json()).exists);
    EXPECT_FALSE(read_lease(json::array()).exists);
}

TEST(Lease, ClaimableWhenFreeOursOrUnchangedForItsDuration) {
    LeaseState held = read_lease(lease_object("node-b", 15));
    EXPECT_FALSE(lease_claimable(held, "node-a", 0s));
    EXPECT_FALSE(lease_claimable(held, "node-a", 15s)); // exactly the duration: not yet
    EXPECT_TRUE(lease_claimable(held, "node-a", 16s));
    EXPECT_TRUE(lease_claimable(held, "node-b", 0s));
    EXPECT_TRUE(lease_claimable(read_lease(lease_object("")), "node-a", 0s));
    EXPECT_TRUE(lease_claimable(LeaseState{}, "node-a", 0s));
}

TEST(Lease, ClaimOfAnotherHoldersLeaseKeepsVersionAndCountsATransition) {
    LeaseState current = read_lease(lease_object("node-b", 15, "42"));
    auto now = *parse_micro_time("2026-11-29T22:00:00Z");
    json body = lease_claim(current, "metal3", "bpfnet-ironic", "node-a", 9s, now);
    EXPECT_EQ(body["metadata"]["resourceVersion"], "42"); // a stale read fails with 409
    EXPECT_EQ(body["metadata"]["labels"][kManagedByLabel], kManagedByValue);
    EXPECT_EQ(body["spec"]["holderIdentity"], "node-a");
    EXPECT_EQ(body["spec"]["leaseDurationSeconds"], 9);
    EXPECT_EQ(body["spec"]["renewTime"], "2026-11-29T22:00:00.000000Z");
    EXPECT_EQ(body["spec"]["acquireTime"], "2026-11-29T22:00:00.000000Z");
    EXPECT_EQ(body["spec"]["leaseTransitions"], 4);
}

TEST(Lease, RenewalKeepsAcquireTimeAndTransitions) {
    LeaseState current = read_lease(lease_object("node-a"));
    auto now = *parse_micro_time("2026-11-29T22:00:00Z");
    json body = lease_claim(current, "metal3", "bpfnet-ironic", "node-a", 15s, now);
    EXPECT_EQ(body["spec"]["acquireTime"], "2026-11-29T20:00:00Z");
    EXPECT_EQ(body["spec"]["leaseTransitions"], 3);
    EXPECT_EQ(body["spec"]["renewTime"], "2026-11-29T22:00:00.000000Z");
}

TEST(Lease, NewLeaseHasNoVersionAndNoTransitions) {
    auto now = *parse_micro_time("2026-11-29T22:00:00Z");
    json body = lease_claim(LeaseState{}, "bpfnet-system", lease_name(*parse_ip("198.18.0.10")), "node-a", 15s, now,
                            "metal3/images,metal3/ironic");
    EXPECT_EQ(body["metadata"]["name"], "bpfnet-198-18-0-10");
    EXPECT_EQ(body["metadata"]["namespace"], "bpfnet-system");
    EXPECT_EQ(body["metadata"]["annotations"][kServicesAnnotation], "metal3/images,metal3/ironic");
    EXPECT_FALSE(body["metadata"].contains("resourceVersion"));
    EXPECT_EQ(body["spec"]["leaseTransitions"], 0);
    EXPECT_EQ(body["kind"], "Lease");
}

// One Lease per service IP, named after it; only the canonical spelling reads back as an IP, so a Lease of
// another kind that happens to carry our label is never taken for one of ours.
TEST(Lease, NamedAfterTheServiceIp) {
    EXPECT_EQ(lease_name(*parse_ip("172.22.0.2")), "bpfnet-172-22-0-2");
    EXPECT_EQ(lease_service_ip("bpfnet-172-22-0-2"), parse_ip("172.22.0.2"));
    EXPECT_EQ(lease_service_ip("bpfnet-ironic"), std::nullopt);
    EXPECT_EQ(lease_service_ip("bpfnet-172-22-0-02"), std::nullopt);
    EXPECT_EQ(lease_service_ip("bpfnet-172-22-0"), std::nullopt);
    EXPECT_EQ(lease_service_ip("bpfnet-172.22.0.2"), std::nullopt);
    EXPECT_EQ(lease_service_ip("other-172-22-0-2"), std::nullopt);
}

// An IPv6 address is written with all eight groups: a Lease name has no ':', and a compressed "::" written as
// "--" could end the name with '-', which the API refuses.
TEST(Lease, NamedAfterAnIpv6ServiceIp) {
    EXPECT_EQ(lease_name(*parse_ip("fd00:1::2")), "bpfnet-fd00-1-0-0-0-0-0-2");
    EXPECT_EQ(lease_name(*parse_ip("fd00:1::")), "bpfnet-fd00-1-0-0-0-0-0-0");
    EXPECT_EQ(lease_name(*parse_ip("2001:db8:ab:cdef::ffff")), "bpfnet-2001-db8-ab-cdef-0-0-0-ffff");
    EXPECT_EQ(lease_service_ip("bpfnet-fd00-1-0-0-0-0-0-2"), parse_ip("fd00:1::2"));
    EXPECT_EQ(lease_service_ip("bpfnet-2001-db8-ab-cdef-0-0-0-ffff"), parse_ip("2001:db8:ab:cdef::ffff"));
    for (const char *other :
         {"bpfnet-fd00-1-0-0-0-0-0-02", "bpfnet-FD00-1-0-0-0-0-0-2", "bpfnet-fd00-1--2", "bpfnet-fd00-1-0-0-0-0-0",
          "bpfnet-fd00-1-0-0-0-0-0-0-2", "bpfnet-fd00-1-0-0-0-0-0-", "bpfnet-fd00-1-0-0-0-0-0-12345",
          "bpfnet-0-0-0-0-0-ffff-c612-2", "bpfnet-fd00-1-0-0-0-0-0-g"})
        EXPECT_EQ(lease_service_ip(other), std::nullopt) << other;
}

TEST(Lease, ReleaseClearsTheHolderAndKeepsTheVersion) {
    json body = lease_release(read_lease(lease_object("node-a")));
    EXPECT_FALSE(body["spec"].contains("holderIdentity"));
    EXPECT_FALSE(body["spec"].contains("renewTime"));
    EXPECT_EQ(body["metadata"]["resourceVersion"], "42");
    EXPECT_TRUE(read_lease(body).holder.empty());
}

json service() {
    return {{"metadata", {{"name", "ironic"}, {"namespace", "metal3"}, {"uid", "1234-abcd"}}}};
}

// A node Lease as a loader writes it: named after the node, held by it, its address in the annotation.
json node_lease_object(const std::string &name, const std::string &holder, const std::string &address) {
    json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", name}, {"namespace", "metal3"}, {"resourceVersion", "7"}}},
                  {"spec", {{"holderIdentity", holder}}}};
    if (!address.empty())
        lease["metadata"]["annotations"] = {{kNodeAddressAnnotation, address}};
    return lease;
}

TEST(NodeLease, NamedAfterTheNodeAndNeverAServiceIpsLease) {
    EXPECT_EQ(node_lease_name("worker-0"), "bpfnet-node-worker-0");
    EXPECT_FALSE(lease_service_ip(node_lease_name("198-18-0-2")));
}

TEST(NodeLease, WrittenWithTheAddressAndReadBack) {
    const auto now = Clock::time_point(std::chrono::seconds(1795899600));
    const json body = node_lease(LeaseState{}, "metal3", "cp-1", *parse_ip("198.18.0.11"), now);
    EXPECT_EQ(body["metadata"]["name"], "bpfnet-node-cp-1");
    EXPECT_EQ(body["metadata"]["namespace"], "metal3");
    EXPECT_EQ(body["metadata"]["labels"][kManagedByLabel], kManagedByValue);
    EXPECT_EQ(body["spec"]["holderIdentity"], "cp-1");
    EXPECT_FALSE(body["metadata"].contains("resourceVersion")); // a POST
    EXPECT_EQ(published_node_address(read_lease(body)), parse_ip("198.18.0.11"));
}

// The update of a Lease read back keeps its version (a stale write fails with 409) and drops an address the
// node no longer has.
TEST(NodeLease, UpdateKeepsTheVersionAndRemovesAnAddressGone) {
    const LeaseState current = read_lease(node_lease_object("bpfnet-node-cp-1", "cp-1", "198.18.0.11"));
    const json body = node_lease(current, "metal3", "cp-1", std::nullopt, Clock::now());
    EXPECT_EQ(body["metadata"]["resourceVersion"], "7");
    EXPECT_FALSE(body["metadata"]["annotations"].contains(kNodeAddressAnnotation));
    EXPECT_FALSE(published_node_address(read_lease(body)));
}

// Only a node's own Lease with a unicast IPv4 address counts: a service IP's Lease, one held by another name,
// or an address that is no unicast IPv4 address names no node.
TEST(NodeLease, OnlyANodesOwnLeaseWithAUnicastAddressCounts) {
    EXPECT_EQ(published_node_address(read_lease(node_lease_object("bpfnet-node-cp-1", "cp-1", "198.18.0.11"))),
              parse_ip("198.18.0.11"));
    const std::vector<json> none = {
        node_lease_object("bpfnet-node-cp-2", "cp-3", "198.18.0.12"),     // held by another node than it names
        node_lease_object("bpfnet-198-18-0-2", "cp-1", "198.18.0.13"),    // a service IP's Lease
        node_lease_object("bpfnet-node-cp-4", "cp-4", "255.255.255.255"), // not unicast
        node_lease_object("bpfnet-node-cp-5", "cp-5", "fd00::5"),         // IPv6: not handed on
        node_lease_object("bpfnet-node-cp-6", "cp-6", ""),                // none published
        node_lease_object("bpfnet-node-cp-7", "cp-7", "198.18.0.017"),    // not an address
        json::array(),                                                    // not an object at all
    };
    for (const json &lease : none)
        EXPECT_FALSE(published_node_address(read_lease(lease))) << lease.dump();
}

TEST(Event, NamesTheServiceAndTheReporter) {
    auto now = *parse_micro_time("2026-11-29T22:00:00Z");
    json e = service_event(service(), warning_event("Refused", "Refuse", "why"), "node-a", now);
    EXPECT_EQ(e["apiVersion"], "events.k8s.io/v1");
    EXPECT_EQ(e["type"], "Warning");
    EXPECT_EQ(e["reason"], "Refused");
    EXPECT_EQ(e["action"], "Refuse");
    EXPECT_EQ(e["note"], "why");
    EXPECT_EQ(e["reportingController"], kReportingController);
    EXPECT_EQ(e["reportingInstance"], "node-a");
    EXPECT_EQ(e["eventTime"], "2026-11-29T22:00:00.000000Z");
    EXPECT_EQ(e["regarding"], (json{{"apiVersion", "v1"},
                                    {"kind", "Service"},
                                    {"namespace", "metal3"},
                                    {"name", "ironic"},
                                    {"uid", "1234-abcd"}}));
    EXPECT_EQ(e["metadata"]["generateName"], "ironic.");
    EXPECT_EQ(e["metadata"]["namespace"], "metal3");
    EXPECT_EQ(events_path("metal3"), "/apis/events.k8s.io/v1/namespaces/metal3/events");
    EXPECT_EQ(service_event(service(), normal_event("Serving", "Activate", "n"), "x", now)["type"], "Normal");
}

TEST(Event, LongNotesAreCutToTheApiLimit) {
    json e = service_event(service(), warning_event("Refused", "Refuse", std::string(5000, 'x')), "n", Clock::now());
    EXPECT_EQ(e["note"].get<std::string>().size(), 1024u);
}

TEST(Event, SharedNameIsTheSameOnEveryNodeAndDiffersByWhatItSays) {
    std::string a = shared_event_name(service(), "Refused", "namespace other is not allowed");
    EXPECT_EQ(a, shared_event_name(service(), "Refused", "namespace other is not allowed"));
    EXPECT_EQ(a.rfind("ironic.bpfnet-refused-", 0), 0u) << a;
    EXPECT_EQ(a.size(), std::string("ironic.bpfnet-refused-").size() + 16);
    EXPECT_NE(a, shared_event_name(service(), "Refused", "another reason"));
    json recreated = service();
    recreated["metadata"]["uid"] = "5678";
    EXPECT_NE(a, shared_event_name(recreated, "Refused", "namespace other is not allowed"));
    ServiceEvent named = warning_event("Refused", "Refuse", "n");
    named.name = a;
    json e = service_event(service(), named, "node-a", Clock::now());
    EXPECT_EQ(e["metadata"]["name"], a);
    EXPECT_FALSE(e["metadata"].contains("generateName"));
}

} // namespace
} // namespace bpfnet::k8s
