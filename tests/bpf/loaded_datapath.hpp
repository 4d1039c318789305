// One load of bpfnet's BPF object per test process, shared by every case. Loading runs the verifier over
// the whole object: about a second per load in the kernel matrix's emulated guests, once per row before.
// Each case starts from the maps as they were right after the load (reset_maps), so no case sees what an
// earlier one left behind.
#pragma once

struct bpfnet_bpf;

namespace bpfnet::test {

// The object is loaded with kernel_reads_skb_csum from computes_l4_checksums() (object_constants.hpp).
// The object, loaded on first use and destroyed at exit; nullptr (errno set) if the kernel refused it.
bpfnet_bpf *loaded_datapath();

// Every map back to its state right after the load: hash maps emptied, arrays (counters, settings, scratch)
// restored. Ring buffers are left alone: their readers drain what earlier cases wrote.
void reset_maps(bpfnet_bpf &skel);

} // namespace bpfnet::test
