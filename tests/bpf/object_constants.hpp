// Load-time constants (the programs' `const volatile` globals in .rodata) of a BPF object opened from a file,
// by name, for the tools that open objects without a skeleton (the fuzzer, the benchmark's baseline).
#pragma once

struct bpf_object;

namespace bpfnet::test {

// Sets the one-byte constant `name` before the object is loaded; false when the object has no such constant
// (an older build: it runs as it was built).
bool set_byte_constant(bpf_object *obj, const char *name, unsigned char value);

} // namespace bpfnet::test
