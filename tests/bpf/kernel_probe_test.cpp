// The loader's kernel probe against the kernel it runs on. The probe asks the kernel (it never reads the
// version); this test checks its answers against the releases that introduced each feature upstream, so
// in the VM matrix a wrong probe shows up on the kernel where it is wrong. (A vendor kernel that backports
// tcx would fail here; Debian's 6.1 and 6.12 do not.)
#include "core/kernel_probe.hpp"

#include <gtest/gtest.h>
#include <sys/utsname.h>

#include <cstdio>

namespace bpfnet {
namespace {

int kernel_version() {
    utsname name{};
    int major = 0, minor = 0;
    if (uname(&name) != 0 || std::sscanf(name.release, "%d.%d", &major, &minor) != 2)
        return 0;
    return major * 100 + minor;
}

TEST(KernelProbe, TcxMatchesTheKernelRelease) {
    const int version = kernel_version();
    ASSERT_NE(version, 0);
    KernelFeatures features = probe_kernel();
    EXPECT_EQ(features.tcx, version >= 606) << features.release << ": " << features.tcx_detail;
}

TEST(KernelProbe, RedirectPeerMatchesTheKernelRelease) {
    const int version = kernel_version();
    ASSERT_NE(version, 0);
    EXPECT_EQ(probe_kernel().redirect_peer, version >= 510);
}

// bpf_cast_to_kern_ctx, which the programs' read of the skb's checksum state needs, came with 6.2.
TEST(KernelProbe, SkbChecksumStateMatchesTheKernelRelease) {
    const int version = kernel_version();
    ASSERT_NE(version, 0);
    EXPECT_EQ(probe_kernel().skb_csum_state, version >= 602);
}

} // namespace
} // namespace bpfnet
