// bpfnetctl's command line: values are validated before anything is opened, and each failure class has its
// own exit code (docs/cli.md). Runs without root and without a datapath.
#include "cli/app.hpp"
#include "cli/errors.hpp"
#include "cli/options.hpp"
#include "core/addresses.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>
#include <system_error>
#include <vector>

namespace bpfnet::cli {
namespace {

struct Result {
    int code;
    std::string out;
    std::string err;
};

// A directory of this test run, removed with it.
std::string test_dir(const std::string &name) {
    const auto dir =
        std::filesystem::temp_directory_path() / ("bpfnetctl-test-" + std::to_string(getpid()) + "-" + name);
    std::filesystem::create_directories(dir);
    return dir.string();
}

// A pin root that exists and holds no datapath: commands that get as far as opening it find none.
const std::string kEmptyPinRoot = test_dir("empty");

Result run_cli(std::vector<std::string> args) {
    args.insert(args.begin(), "bpfnetctl");
    std::vector<const char *> argv;
    for (const auto &arg : args)
        argv.push_back(arg.c_str());
    std::ostringstream out;
    std::ostringstream err;
    int code = run(static_cast<int>(argv.size()), argv.data(), out, err);
    return {code, out.str(), err.str()};
}

// One line on stderr, naming the problem; nothing on stdout.
void expect_failure(const Result &result, ExitCode code, const std::string &mentions) {
    EXPECT_EQ(result.code, to_int(code)) << result.err;
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(result.err.rfind("bpfnetctl: ", 0), 0u) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_NE(result.err.find(mentions), std::string::npos) << result.err;
}

TEST(CliArgs, IpTakesEitherFamilyIpv6OnlyIpv6) {
    EXPECT_EQ(format_ip(parse_ip("fd00:1::2", "IP")), "fd00:1::2");
    EXPECT_EQ(format_ip(parse_ip("198.18.100.2", "IP")), "198.18.100.2");
    for (const char *bad : {"", "fd00::1::2", "198.18.100", "fd00:1::2/64", "::ffff:1.2.3.4x"})
        EXPECT_THROW(parse_ip(bad, "IP"), CliError) << bad;
    EXPECT_EQ(format_ip(parse_ipv6("2001:db8::7", "--ipv6")), "2001:db8::7");
    EXPECT_THROW(parse_ipv6("198.18.100.2", "--ipv6"), CliError);
}

TEST(CliArgs, Ipv4IsAStrictDottedQuad) {
    EXPECT_EQ(parse_ipv4("198.18.100.2", "IP"), htonl(0xc6126402));
    for (const char *bad : {"", "198.18.100", "198.18.100.256", "198.18.100.2x", "0x1.2.3.4", " 1.2.3.4", "::1"})
        EXPECT_THROW(parse_ipv4(bad, "IP"), CliError) << bad;
    try {
        parse_ipv4("nope", "--host");
        FAIL();
    } catch (const CliError &e) {
        EXPECT_EQ(e.code(), ExitCode::InvalidArgument);
        EXPECT_STREQ(e.what(), "--host: must be an IPv4 address like 198.18.100.2, got 'nope'");
    }
}

TEST(CliArgs, PortIsDecimalBetween1And65535) {
    EXPECT_EQ(parse_port("1", "--port"), 1);
    EXPECT_EQ(parse_port("65535", "--port"), 65535);
    for (const char *bad : {"", "0", "65536", "-1", "80a", "0x50", "8 0", "99999999999"})
        EXPECT_THROW(parse_port(bad, "--port"), CliError) << bad;
}

TEST(CliArgs, IntervalCountOutputAndInterfaceName) {
    EXPECT_EQ(parse_interval("1", "--interval").count(), 1000);
    EXPECT_EQ(parse_interval("0.25", "--interval").count(), 250);
    for (const char *bad : {"0", "-1", "abc", "1s", "", "nan", "inf", "1e9"})
        EXPECT_THROW(parse_interval(bad, "--interval"), CliError) << bad;
    EXPECT_EQ(parse_count("3", "--count"), 3u);
    for (const char *bad : {"0", "-2", "1.5", ""})
        EXPECT_THROW(parse_count(bad, "--count"), CliError) << bad;
    EXPECT_EQ(parse_output_format("json", "-o"), OutputFormat::JsonLines);
    EXPECT_EQ(parse_output_format("table", "-o"), OutputFormat::Table);
    EXPECT_THROW(parse_output_format("yaml", "-o"), CliError);
    EXPECT_EQ(parse_interface_name("prov0", "-i"), "prov0");
    for (const char *bad : {"", "../etc", "a/b", "sixteen-chars-xx", "eth0:1", "."})
        EXPECT_THROW(parse_interface_name(bad, "-i"), CliError) << bad;
}

TEST(CliExitCodes, ErrnoAndExceptionsMapToDistinctCodes) {
    EXPECT_EQ(exit_code_for_errno(EPERM), ExitCode::Permission);
    EXPECT_EQ(exit_code_for_errno(EACCES), ExitCode::Permission);
    EXPECT_EQ(exit_code_for_errno(EINVAL), ExitCode::Failure);
    auto mapped = [](auto thrown) {
        try {
            try {
                throw thrown;
            } catch (...) {
                rethrow_as_cli_error();
            }
        } catch (const CliError &e) {
            return e.code();
        }
        return ExitCode::Ok;
    };
    EXPECT_EQ(mapped(std::system_error(EPERM, std::generic_category(), "bpf")), ExitCode::Permission);
    EXPECT_EQ(mapped(std::system_error(EBUSY, std::generic_category(), "bpf")), ExitCode::Failure);
    EXPECT_EQ(mapped(std::runtime_error("x")), ExitCode::Failure);
    EXPECT_EQ(mapped(CliError(ExitCode::NoDatapath, "x")), ExitCode::NoDatapath);
    // Every code is distinct.
    std::vector<int> codes;
    for (ExitCode c : {ExitCode::Ok, ExitCode::Failure, ExitCode::Usage, ExitCode::NoDatapath, ExitCode::Permission,
                       ExitCode::InvalidArgument, ExitCode::BackendUnavailable, ExitCode::NoLoader})
        codes.push_back(to_int(c));
    std::sort(codes.begin(), codes.end());
    EXPECT_EQ(std::adjacent_find(codes.begin(), codes.end()), codes.end());
    EXPECT_EQ(codes, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(CliRun, UnknownOptionsCommandsAndMissingArgumentsAreUsageErrors) {
    expect_failure(run_cli({"--bogus", "status"}), ExitCode::Usage, "--bogus");
    expect_failure(run_cli({"status", "--bogus"}), ExitCode::Usage, "--bogus");
    expect_failure(run_cli({"frobnicate"}), ExitCode::Usage, "frobnicate");
    expect_failure(run_cli({}), ExitCode::Usage, "no command");
    expect_failure(run_cli({"backend"}), ExitCode::Usage, "subcommand");
    expect_failure(run_cli({"backend", "set"}), ExitCode::Usage, "IP");
    expect_failure(run_cli({"stats", "--count", "2"}), ExitCode::Usage, "--watch");
    expect_failure(run_cli({"status", "--output"}), ExitCode::Usage, "output");
}

TEST(CliRun, BadValuesAreInvalidArgumentsCheckedBeforeTheDatapathIsOpened) {
    // The pin root has no datapath: reaching it would exit NoDatapath, so InvalidArgument proves the order.
    std::vector<std::string> root{"--pin-root", kEmptyPinRoot};
    auto with_root = [&](std::vector<std::string> args) {
        args.insert(args.begin(), root.begin(), root.end());
        return run_cli(args);
    };
    expect_failure(with_root({"backend", "set", "198.18.100"}), ExitCode::InvalidArgument, "'198.18.100'");
    expect_failure(with_root({"backend", "set", "198.18.100.2", "--veth", "a/b"}), ExitCode::InvalidArgument, "--veth");
    expect_failure(with_root({"flows", "--port", "70000"}), ExitCode::InvalidArgument, "--port");
    expect_failure(with_root({"flows", "--port", "http"}), ExitCode::InvalidArgument, "--port");
    expect_failure(with_root({"flows", "--host", "host1"}), ExitCode::InvalidArgument, "--host");
    expect_failure(with_root({"stats", "--watch", "--interval", "0"}), ExitCode::InvalidArgument, "--interval");
    expect_failure(with_root({"stats", "--watch", "--count", "none"}), ExitCode::InvalidArgument, "--count");
    expect_failure(with_root({"-o", "yaml", "status"}), ExitCode::InvalidArgument, "--output");
    expect_failure(run_cli({"-i", "../../etc", "status"}), ExitCode::InvalidArgument, "--interface");
    expect_failure(run_cli({"--pin-root", "relative", "status"}), ExitCode::InvalidArgument, "--pin-root");
}

TEST(CliRun, NoDatapathForTheInterface) {
    for (const char *command : {"status", "services", "backends", "flows", "neighbours", "stats"})
        expect_failure(run_cli({"--pin-root", kEmptyPinRoot, "-i", "nosuchif0", command}), ExitCode::NoDatapath,
                       "no bpfnet datapath on nosuchif0");
    expect_failure(run_cli({"--pin-root", kEmptyPinRoot, "-i", "nosuchif0", "backend", "clear"}), ExitCode::NoDatapath,
                   "nosuchif0");
    expect_failure(run_cli({"--pin-root", kEmptyPinRoot, "-i", "nosuchif0", "backend", "set", "198.18.100.2"}),
                   ExitCode::NoDatapath, "nosuchif0");
}

// A datapath without a loader: backend set and clear have nobody to ask, and say so (they never write the
// maps themselves).
TEST(CliRun, BackendCommandsNeedTheLoader) {
    const std::string root = std::filesystem::temp_directory_path() / ("bpfnetctl-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(root + "/prov9");
    const std::string socket = root + "/prov9.sock";
    for (std::vector<std::string> command :
         {std::vector<std::string>{"backend", "clear"}, std::vector<std::string>{"backend", "set", "198.18.100.2"}}) {
        command.insert(command.begin(), {"--pin-root", root, "-i", "prov9", "--control-socket", socket});
        expect_failure(run_cli(command), ExitCode::NoLoader, "no bpfnet-loader serves " + socket);
    }
    std::filesystem::remove_all(root);
}

// Without --interface: the only interface pinned under the pin root (a VLAN's '.' read back from ':'), prov0
// when none is, and a usage error naming them when several are.
TEST(CliRun, WithoutInterfaceTheOnlyPinnedOneIsChosen) {
    const std::string one = test_dir("one");
    std::filesystem::create_directories(one + "/prov9:100");
    expect_failure(run_cli({"--pin-root", one, "--control-socket", one + "/none.sock", "backend", "clear"}),
                   ExitCode::NoLoader, one + "/none.sock");
    expect_failure(run_cli({"--pin-root", one, "status"}), ExitCode::NoDatapath, one + "/prov9:100/iface");
    EXPECT_EQ(pinned_interfaces(one), std::vector<std::string>{"prov9.100"});

    expect_failure(run_cli({"--pin-root", kEmptyPinRoot, "status"}), ExitCode::NoDatapath,
                   "no bpfnet datapath on prov0");

    const std::string two = test_dir("two");
    std::filesystem::create_directories(two + "/prov1");
    std::filesystem::create_directories(two + "/enp2s0");
    expect_failure(run_cli({"--pin-root", two, "status"}), ExitCode::Usage,
                   "(enp2s0, prov1): choose one with --interface");
    // Named, the choice is the user's; version needs no datapath.
    expect_failure(run_cli({"--pin-root", two, "-i", "prov1", "status"}), ExitCode::NoDatapath, "prov1");
    EXPECT_EQ(run_cli({"--pin-root", two, "version"}).code, 0);
    for (const auto &dir : {one, two})
        std::filesystem::remove_all(dir);
}

TEST(CliRun, GlobalOptionsAlsoAfterTheCommand) {
    expect_failure(run_cli({"status", "--pin-root", kEmptyPinRoot, "--interface", "nosuchif1", "-o", "json"}),
                   ExitCode::NoDatapath, "nosuchif1");
}

TEST(CliRun, VersionInBothFormats) {
    Result table = run_cli({"version"});
    EXPECT_EQ(table.code, 0) << table.err;
    EXPECT_EQ(table.out.rfind("bpfnet  ", 0), 0u) << table.out;
    EXPECT_NE(table.out.find("\nlibbpf  1."), std::string::npos) << table.out;

    Result json = run_cli({"version", "-o", "json"});
    ASSERT_EQ(json.code, 0) << json.err;
    auto doc = nlohmann::json::parse(json.out);
    EXPECT_FALSE(doc["bpfnet"].get<std::string>().empty());
    EXPECT_TRUE(doc.contains("libbpf") && doc.contains("libxdp") && doc.contains("kernel")) << json.out;
}

TEST(CliRun, HelpIsNotAnError) {
    Result help = run_cli({"--help"});
    EXPECT_EQ(help.code, 0);
    for (const char *command : {"status", "services", "backends", "flows", "neighbours", "stats", "backend", "version"})
        EXPECT_NE(help.out.find(command), std::string::npos) << command;
    Result sub = run_cli({"backend", "set", "--help"});
    EXPECT_EQ(sub.code, 0);
    EXPECT_NE(sub.out.find("--veth"), std::string::npos) << sub.out;
}

} // namespace
} // namespace bpfnet::cli
