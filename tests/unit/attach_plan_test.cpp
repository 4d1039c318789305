// How the loader attaches, from the config's choices and what the kernel probe found.
#include "core/kernel_probe.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace bpfnet {
namespace {

KernelFeatures kernel(bool tcx, bool redirect_peer) {
    KernelFeatures features;
    features.release = tcx ? "6.12.0-test" : "6.1.0-test";
    features.tcx = tcx;
    features.redirect_peer = redirect_peer;
    features.tcx_detail = tcx ? "tcx link accepted" : "tcx link refused: Invalid argument";
    return features;
}

TEST(AttachPlan, AutoTakesTcxAndRedirectPeerWhereTheKernelHasThem) {
    AttachPlan plan = plan_attach(TcAttach::Auto, RedirectPeer::Auto, kernel(true, true));
    EXPECT_EQ(plan.tc, TcHookKind::Tcx);
    EXPECT_TRUE(plan.redirect_peer);
}

TEST(AttachPlan, AutoFallsBackToClsactAndVethDelivery) {
    AttachPlan plan = plan_attach(TcAttach::Auto, RedirectPeer::Auto, kernel(false, false));
    EXPECT_EQ(plan.tc, TcHookKind::Clsact);
    EXPECT_FALSE(plan.redirect_peer);
}

TEST(AttachPlan, ExplicitChoicesWinWhereTheKernelAllowsThem) {
    EXPECT_EQ(plan_attach(TcAttach::Clsact, RedirectPeer::Auto, kernel(true, true)).tc, TcHookKind::Clsact);
    EXPECT_EQ(plan_attach(TcAttach::Tcx, RedirectPeer::Auto, kernel(true, true)).tc, TcHookKind::Tcx);
    EXPECT_FALSE(plan_attach(TcAttach::Auto, RedirectPeer::Off, kernel(true, true)).redirect_peer);
}

TEST(AttachPlan, TcxOnAKernelWithoutItIsRefusedWithTheReason) {
    try {
        plan_attach(TcAttach::Tcx, RedirectPeer::Auto, kernel(false, true));
        FAIL() << "tcx was accepted on a kernel without tcx";
    } catch (const std::runtime_error &e) {
        EXPECT_STREQ(e.what(), "tcAttach tcx: this kernel (6.1.0-test) has no tcx links (tcx link refused: Invalid "
                               "argument); use auto or clsact");
    }
}

} // namespace
} // namespace bpfnet
