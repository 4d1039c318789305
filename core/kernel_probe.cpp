#include "core/kernel_probe.hpp"

#include "core/log.hpp"
#include "core/tc_hook.hpp"
#include "maps/unique_fd.hpp"
#include "skb_csum_probe.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/utsname.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace bpfnet {

namespace {

// A TC program that only returns: enough to ask the kernel which attach types it takes for TC programs.
UniqueFd load_trivial_tc_program() {
    const bpf_insn insns[] = {
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .src_reg = 0, .off = 0, .imm = -1},
        {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
    };
    return UniqueFd(bpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, "bpfnet_probe", "Dual BSD/GPL", insns, 2, nullptr));
}

// A tcx link on ifindex 0: a kernel with tcx looks for the device and answers ENODEV; one without refuses
// the attach type itself with EINVAL. Nothing is ever attached.
void probe_tcx(KernelFeatures &features) {
    UniqueFd prog = load_trivial_tc_program();
    if (!prog.valid()) {
        features.tcx_detail = std::string("cannot load a probe program: ") + std::strerror(errno);
        return;
    }
    // An fd (a link on a device 0) cannot happen; the UniqueFd closes it if it ever does.
    UniqueFd link(bpf_link_create(prog.get(), 0, kBpfTcxIngress, nullptr));
    int err = link.valid() ? 0 : -link.get();
    features.tcx = err == ENODEV;
    features.tcx_detail = features.tcx ? "tcx link accepted (no device given: ENODEV)"
                                       : std::string("tcx link refused: ") + std::strerror(err);
}

} // namespace

// The datapath's own read of the checksum state, switched on, in a program of its own: loading it is the
// answer. A refusal is expected on older kernels (the verifier's text is not an operator's concern).
bool probe_skb_csum_state() {
    std::unique_ptr<skb_csum_probe_bpf, void (*)(skb_csum_probe_bpf *)> probe(skb_csum_probe_bpf__open(),
                                                                              skb_csum_probe_bpf__destroy);
    if (!probe)
        return false;
    probe->rodata->kernel_reads_skb_csum = 1;
    ExpectedLibraryFailures expected;
    return skb_csum_probe_bpf__load(probe.get()) == 0;
}

KernelFeatures probe_kernel() {
    KernelFeatures features;
    utsname name{};
    if (uname(&name) == 0)
        features.release = name.release;
    probe_tcx(features);
    features.redirect_peer = libbpf_probe_bpf_helper(BPF_PROG_TYPE_SCHED_CLS, BPF_FUNC_redirect_peer, nullptr) == 1;
    features.skb_csum_state = probe_skb_csum_state();
    return features;
}

AttachPlan plan_attach(TcAttach tc, RedirectPeer redirect_peer, const KernelFeatures &kernel) {
    if (tc == TcAttach::Tcx && !kernel.tcx)
        throw std::runtime_error("tcAttach tcx: this kernel (" + kernel.release + ") has no tcx links (" +
                                 kernel.tcx_detail + "); use auto or clsact");
    AttachPlan plan;
    plan.tc = tc == TcAttach::Clsact || !kernel.tcx ? TcHookKind::Clsact : TcHookKind::Tcx;
    plan.redirect_peer = redirect_peer == RedirectPeer::Auto && kernel.redirect_peer;
    return plan;
}

} // namespace bpfnet
