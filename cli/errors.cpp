#include "cli/errors.hpp"

#include <cerrno>
#include <exception>
#include <system_error>

namespace bpfnet::cli {

int to_int(ExitCode code) {
    return static_cast<int>(code);
}

ExitCode exit_code_for_errno(int err) {
    return err == EPERM || err == EACCES ? ExitCode::Permission : ExitCode::Failure;
}

void rethrow_as_cli_error() {
    try {
        throw;
    } catch (const CliError &) {
        throw;
    } catch (const std::system_error &e) {
        throw CliError(exit_code_for_errno(e.code().value()), e.what());
    } catch (const std::exception &e) {
        throw CliError(ExitCode::Failure, e.what());
    }
}

} // namespace bpfnet::cli
