#include "core/log.hpp"

#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include <array>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>

namespace bpfnet {

namespace {

LogLevel g_level = LogLevel::Info;
thread_local int g_expected_library_failures = 0; // ExpectedLibraryFailures alive on this thread
std::mutex g_mutex;

constexpr std::array<std::string_view, 4> kLevelNames = {"debug", "info", "warn", "error"};

bool needs_quotes(std::string_view value) {
    if (value.empty())
        return true;
    for (char c : value)
        if (c == ' ' || c == '"' || c == '=' || c == '\\' || c < 0x20)
            return true;
    return false;
}

void append_value(std::string &line, std::string_view value) {
    if (!needs_quotes(value)) {
        line += value;
        return;
    }
    line += '"';
    for (char c : value) {
        if (c == '"' || c == '\\')
            line += '\\';
        line += (c == '\n' || c == '\t') ? ' ' : c;
    }
    line += '"';
}

std::string timestamp() {
    auto now = std::chrono::system_clock::now();
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
    return buf;
}

// Library messages arrive as printf fragments, usually newline-terminated; one log event per call.
void log_library_message(LogLevel level, std::string_view source, const char *format, va_list args) {
    if (level < g_level)
        return;
    char buf[512];
    std::vsnprintf(buf, sizeof(buf), format, args);
    std::string_view text(buf);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.remove_suffix(1);
    if (!text.empty())
        log(level, text, {{"source", std::string(source)}});
}

int libbpf_print(enum libbpf_print_level level, const char *format, va_list args) {
    LogLevel ours = level == LIBBPF_WARN && g_expected_library_failures == 0 ? LogLevel::Warn : LogLevel::Debug;
    // Three kernel extacks are how the loader learns what is already there, not warnings: "Cannot find specified
    // filter chain" (no filter to adopt), "Exclusivity flag on, cannot modify" (the clsact qdisc exists) and
    // "Parent Qdisc doesn't exists" (no clsact qdisc, so no filter of ours to detach: a tcx attachment's teardown).
    if (std::strstr(format, "Kernel error message") && ours == LogLevel::Warn) {
        va_list copy;
        va_copy(copy, args);
        char text[256];
        std::vsnprintf(text, sizeof(text), format, copy);
        va_end(copy);
        if (std::strstr(text, "Cannot find specified filter chain") ||
            std::strstr(text, "Exclusivity flag on, cannot modify") || std::strstr(text, "Parent Qdisc doesn't exists"))
            ours = LogLevel::Debug;
    }
    log_library_message(ours, "libbpf", format, args);
    return 0;
}

int libxdp_print(enum libxdp_print_level level, const char *format, va_list args) {
    // libxdp reports its fallback from the dispatcher as a warning; the loader logs the outcome itself.
    LogLevel ours = level == LIBXDP_WARN ? LogLevel::Info : LogLevel::Debug;
    log_library_message(ours, "libxdp", format, args);
    return 0;
}

} // namespace

ExpectedLibraryFailures::ExpectedLibraryFailures() {
    ++g_expected_library_failures;
}

ExpectedLibraryFailures::~ExpectedLibraryFailures() {
    --g_expected_library_failures;
}

void set_log_level(LogLevel level) {
    g_level = level;
}
LogLevel log_level() {
    return g_level;
}

std::optional<LogLevel> parse_log_level(std::string_view name) {
    for (size_t i = 0; i < kLevelNames.size(); i++)
        if (kLevelNames[i] == name)
            return static_cast<LogLevel>(i);
    return std::nullopt;
}

void log(LogLevel level, std::string_view message, std::initializer_list<LogField> fields) {
    if (level < g_level)
        return;
    std::string line = "ts=" + timestamp() + " level=" + std::string(kLevelNames[static_cast<size_t>(level)]);
    line += " msg=";
    append_value(line, message);
    for (const LogField &field : fields) {
        line += ' ';
        line += field.key;
        line += '=';
        append_value(line, field.value);
    }
    line += '\n';
    std::lock_guard lock(g_mutex);
    std::fputs(line.c_str(), stderr);
}

void route_library_logs() {
    libbpf_set_print(libbpf_print);
    libxdp_set_print(libxdp_print);
}

} // namespace bpfnet
