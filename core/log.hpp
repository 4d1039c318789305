// Structured logs: one event per line in logfmt (ts=... level=... msg="..." key=value), so a log shipper or
// a person with grep can follow what the loader decided.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace bpfnet {

enum class LogLevel { Debug, Info, Warn, Error };

struct LogField {
    std::string_view key;
    std::string value;
};

void set_log_level(LogLevel level);
LogLevel log_level();
std::optional<LogLevel> parse_log_level(std::string_view name);
void log(LogLevel level, std::string_view message, std::initializer_list<LogField> fields = {});

inline void log_debug(std::string_view m, std::initializer_list<LogField> f = {}) {
    log(LogLevel::Debug, m, f);
}
inline void log_info(std::string_view m, std::initializer_list<LogField> f = {}) {
    log(LogLevel::Info, m, f);
}
inline void log_warn(std::string_view m, std::initializer_list<LogField> f = {}) {
    log(LogLevel::Warn, m, f);
}
inline void log_error(std::string_view m, std::initializer_list<LogField> f = {}) {
    log(LogLevel::Error, m, f);
}

// Routes libbpf's and libxdp's own messages into this log (their debug chatter only at debug level).
void route_library_logs();

// While one is alive on this thread, the libraries' warnings are logged at debug level: around a call whose
// failure inside the library is expected and handled (libxdp trying its dispatcher before a plain attach), so
// that the outcome is the loader's own line, not the library's alarm about the attempt.
class ExpectedLibraryFailures {
public:
    ExpectedLibraryFailures();
    ~ExpectedLibraryFailures();
    ExpectedLibraryFailures(const ExpectedLibraryFailures &) = delete;
    ExpectedLibraryFailures &operator=(const ExpectedLibraryFailures &) = delete;
};

} // namespace bpfnet
