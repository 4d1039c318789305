// One load of bpfnet's BPF object per test process, shared by every case. Loading runs the verifier over
// the whole object: about a second per load in the kernel matrix's emulated guests, once per row before.
// Each case starts from the maps as they were right after the load (reset_maps), so no case sees what an
// earlier one left behind.
#pragma once

struct bpfnet_bpf;

namespace bpfnet::test {

// Whether the object is loaded with the programs computing TCP/UDP checksums (kernel_reads_skb_csum), as the
// loader loads it on this kernel; BPFNET_TEST_L4_CHECKSUMS=helper makes them use the kernel's helpers, the
// way they run on kernels before 6.2.
bool computes_l4_checksums();

// The object, loaded on first use and destroyed at exit; nullptr (errno set) if the kernel refused it.
bpfnet_bpf *loaded_datapath();

// Every map back to its state right after the load: hash maps emptied, arrays (counters, settings, scratch)
// restored. Ring buffers are left alone: their readers drain what earlier cases wrote.
void reset_maps(bpfnet_bpf &skel);

} // namespace bpfnet::test
