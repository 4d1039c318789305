// The one exception type for failed kernel calls in the loader: it carries errno (so callers can branch on
// code() == std::errc::no_such_device and the like) and a context naming the call and its object, so the
// message alone says what failed, e.g. "RTM_GETLINK prov0: No such device".
#pragma once

#include <cerrno>
#include <string>
#include <system_error>

namespace bpfnet {

class SystemError : public std::system_error {
public:
    SystemError(const std::string &context, int err) : std::system_error(err, std::generic_category(), context) {}
};

// For libbpf's and libxdp's calls, which return a negative error code.
inline void check_libbpf(int err, const std::string &call) {
    if (err < 0)
        throw SystemError(call, -err);
}

// For calls that report failure through errno: capture it before anything else can overwrite it.
[[noreturn]] inline void throw_errno(const std::string &context) {
    throw SystemError(context, errno);
}

} // namespace bpfnet
