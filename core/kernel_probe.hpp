// What the running kernel offers that the loader's attach choices depend on. Probed at start by asking the
// kernel (a throwaway program, the helper probe), never guessed from the version number: distribution
// kernels backport features, and the VM matrix shows each probe's answer next to the kernel's release.
#pragma once

#include "core/addresses.hpp"
#include "core/node.hpp"
#include "core/tc_hook.hpp"

#include <string>

namespace bpfnet {

struct KernelFeatures {
    std::string release;        // uname -r, for the logs
    bool tcx = false;           // TC programs as BPF links (BPF_TCX_INGRESS, 6.6+)
    bool redirect_peer = false; // the bpf_redirect_peer helper for TC programs (5.10+)
    // TC programs may read the skb's checksum state (bpf_cast_to_kern_ctx, 6.2+): the programs then compute
    // TCP/UDP checksums themselves instead of calling the kernel's helper for each update.
    bool skb_csum_state = false;
    std::string tcx_detail; // what the tcx probe saw, for the log
};

KernelFeatures probe_kernel();

// The skb checksum-state probe alone (bpf/skb_csum_probe.bpf.c): the tests load the datapath as the loader does.
bool probe_skb_csum_state();

// How this loader attaches, from the config's wishes and the kernel's answers.
struct AttachPlan {
    TcHookKind tc = TcHookKind::Clsact;
    bool redirect_peer = false;
};

// Throws std::runtime_error when the config insists on something this kernel lacks (tcAttach: tcx before
// 6.6): a clear refusal at start beats a datapath that attaches differently from what was asked.
AttachPlan plan_attach(TcAttach tc, RedirectPeer redirect_peer, const KernelFeatures &kernel);

} // namespace bpfnet
