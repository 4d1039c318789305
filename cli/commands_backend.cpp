#include "cli/commands_backend.hpp"

#include "cli/commands.hpp"
#include "cli/output.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <sstream>

namespace bpfnet::cli {

namespace {

// No loader answered: when there is no datapath either, that is the more useful thing to say.
[[noreturn]] void no_loader(const Context &context, const ControlUnavailable &e) {
    struct stat st {};
    const std::string dir = context.options.pin_dir();
    if (::stat(dir.c_str(), &st) != 0 && errno == ENOENT)
        throw CliError(ExitCode::NoDatapath, "no bpfnet datapath on " + context.options.interface + ": " + dir +
                                                 " does not exist, and " + e.what());
    throw CliError(ExitCode::NoLoader, e.what());
}

void send(Context &context, const nlohmann::json &request) {
    nlohmann::json result;
    try {
        result = call_loader(context.options.control_socket_path(), request);
    } catch (const ControlUnavailable &e) {
        no_loader(context, e);
    } catch (const ControlFailure &e) {
        throw CliError(exit_code_for(e.kind()), std::string("the loader refused: ") + e.what());
    } catch (const std::system_error &e) {
        if (e.code().value() == EACCES || e.code().value() == EPERM)
            throw CliError(ExitCode::Permission,
                           std::string(e.what()) + " (the loader's control socket is for root, like its maps)");
        throw;
    }
    if (context.json())
        print_json(context.out, result);
    else
        context.out << describe_backend_change(result) << '\n';
}

std::string veth_label(const nlohmann::json &entry) {
    if (entry.contains("veth") && entry["veth"].is_string())
        return entry["veth"];
    return "ifindex " + std::to_string(entry.value("ifindex", 0));
}

} // namespace

nlohmann::json backend_set_request(const std::string &ip, const std::string &veth, const std::string &ipv6,
                                   const std::string &delivery) {
    nlohmann::json request{{"command", "backend_set"}, {"ip", ip}};
    if (!ipv6.empty())
        request["ipv6"] = ipv6;
    if (!veth.empty())
        request["veth"] = veth;
    if (!delivery.empty())
        request["delivery"] = delivery;
    return request;
}

nlohmann::json backend_clear_request() {
    return {{"command", "backend_clear"}};
}

ExitCode exit_code_for(ControlFailure::Kind kind) {
    switch (kind) {
    case ControlFailure::Kind::InvalidArgument:
        return ExitCode::InvalidArgument;
    case ControlFailure::Kind::BackendUnavailable:
        return ExitCode::BackendUnavailable;
    case ControlFailure::Kind::PermissionDenied:
        return ExitCode::Permission;
    case ControlFailure::Kind::BadRequest:
    case ControlFailure::Kind::Refused:
    case ControlFailure::Kind::Failure:
        break;
    }
    return ExitCode::Failure;
}

std::string describe_backend_change(const nlohmann::json &result) {
    std::ostringstream line;
    std::string ips;
    for (const auto &ip : result.value("service_ips", nlohmann::json::array()))
        ips += (ips.empty() ? "" : ", ") + ip.get<std::string>();
    const nlohmann::json backend = result.value("backend", nlohmann::json());
    if (backend.is_object())
        line << "backend " << backend.value("ip", "") << " on " << veth_label(backend) << " now serves " << ips
             << "; pod hook " << result.value("pod_hook", "already_attached");
    else
        line << "backend cleared: " << ips << " inactive, listed ports dropped (drop_no_backend)";
    line << "; " << result.value("writes", 0) << " map writes, " << result.value("removals", 0) << " removals";
    for (const auto &hook : result.value("detached_pod_hooks", nlohmann::json::array()))
        line << "; pod hook removed from " << veth_label(hook);
    if (!result.value("announced", nlohmann::json::array()).empty())
        line << "; announced with " << result.value("gratuitous_arps", 0) << " gratuitous ARPs";
    line << "\nnote: bpfnet-loader re-applies its config's backend on SIGHUP, a config change or a restart";
    return line.str();
}

void run_backend_set(Context &context, const BackendSetArgs &args) {
    // Malformed values are refused here, before the loader is asked; its config rules are checked there.
    parse_ip(args.ip, "IP");
    if (!args.ipv6.empty())
        parse_ipv6(args.ipv6, "--ipv6");
    if (!args.veth.empty())
        parse_interface_name(args.veth, "--veth");
    send(context, backend_set_request(args.ip, args.veth, args.ipv6, args.delivery));
}

void run_backend_clear(Context &context) {
    send(context, backend_clear_request());
}

} // namespace bpfnet::cli
