// When a router solicitation is answered (core/announcer.hpp, RFC 4861 section 6.2.6): delayed into the next
// slot the rate limit allows, never dropped.
#include "core/announcer.hpp"

#include <gtest/gtest.h>

#include <chrono>

using namespace bpfnet;
using namespace std::chrono_literals;

namespace {

using Time = std::chrono::steady_clock::time_point;
const Time kStart = Time{} + 1h;

} // namespace

// Long after the last advertisement: after the random delay alone.
TEST(RaAnswer, AfterTheRandomDelayWhenTheLastAdvertisementIsOld) {
    EXPECT_EQ(ra_answer_time(kStart, kStart - 10s, 0ms), kStart);
    EXPECT_EQ(ra_answer_time(kStart, kStart - 10s, 370ms), kStart + 370ms);
    EXPECT_EQ(ra_answer_time(kStart, kStart - kMinDelayBetweenRas, 120ms), kStart + 120ms);
}

// Within MIN_DELAY_BETWEEN_RAS of the last advertisement: at its end, plus the random delay (the answer the
// earlier code dropped).
TEST(RaAnswer, InTheNextSlotWhenAnAdvertisementWentOutLately) {
    EXPECT_EQ(ra_answer_time(kStart, kStart - 1s, 0ms), kStart + 2s);
    EXPECT_EQ(ra_answer_time(kStart, kStart - 1s, 500ms), kStart + 2500ms);
    EXPECT_EQ(ra_answer_time(kStart, kStart, 250ms), kStart + kMinDelayBetweenRas + 250ms);
}

// Never before the solicitation, never more than MIN_DELAY_BETWEEN_RAS + MAX_RA_DELAY_TIME after it.
TEST(RaAnswer, BoundedWhateverTheLastAdvertisement) {
    for (auto since : {0ms, 1ms, 999ms, 2999ms, 3000ms, 60000ms})
        for (auto delay : {0ms, kMaxRaDelay}) {
            const Time at = ra_answer_time(kStart, kStart - since, delay);
            EXPECT_GE(at, kStart);
            EXPECT_LE(at, kStart + kMinDelayBetweenRas + kMaxRaDelay);
        }
}
