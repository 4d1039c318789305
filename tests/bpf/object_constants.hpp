// Load-time constants (the programs' `const volatile` globals in .rodata): set by name in a BPF object opened
// from a file, for the tools that open objects without a skeleton (the fuzzer, the benchmark's baseline), and
// the value the tests give the checksum-state constant.
#pragma once

struct bpf_object;

namespace bpfnet::test {

// Sets the one-byte constant `name` before the object is loaded; false when the object has no such constant
// (an older build: it runs as it was built).
bool set_byte_constant(bpf_object *obj, const char *name, unsigned char value);

// What the tests set kernel_reads_skb_csum to: as the loader sets it on this kernel (the kernel probe), or 0
// with BPFNET_TEST_L4_CHECKSUMS=helper, so that the programs checksum through the kernel's helpers as they do
// on kernels before 6.2.
bool computes_l4_checksums();

} // namespace bpfnet::test
