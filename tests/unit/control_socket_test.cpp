// The loader's control socket (one writer of the maps) and the pin directory's lock (one loader per
// interface), on real sockets and real flocks in a temporary directory: requests and their answers, refusals
// carried to the client with their kind, no loader, a stale socket, a second server, and who may connect.
#include "core/control_socket.hpp"
#include "core/pin_lock.hpp"
#include "maps/system_error.hpp"

#include <gtest/gtest.h>

#include <grp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <thread>

namespace bpfnet {
namespace {

namespace fs = std::filesystem;

class ControlSocketTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("bpfnet-control-" + std::to_string(getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        path_ = (dir_ / "run" / "prov0.sock").string();
    }
    void TearDown() override { fs::remove_all(dir_); }

    // Serves `server` on a thread, as the loader's epoll loop does, until the returned thread is destroyed:
    // declared after the server, it stops first, so the thread never polls a server that is gone.
    [[nodiscard]] static std::jthread serve(ControlServer &server, ControlHandler handler) {
        return std::jthread([&server, handler = std::move(handler)](const std::stop_token &stop) {
            while (!stop.stop_requested()) {
                pollfd p{server.fd(), POLLIN, 0};
                if (::poll(&p, 1, 20) > 0)
                    server.serve_pending(handler);
            }
        });
    }

    fs::path dir_;
    std::string path_;
};

nlohmann::json echo(const ControlRequest &request) {
    return {{"command", request.body["command"]}, {"peer_pid", request.peer_pid}, {"peer_uid", request.peer_uid}};
}

TEST_F(ControlSocketTest, ARequestIsAnsweredWithTheHandlersResultAndThePeersCredentials) {
    ControlServer server(path_);
    auto serving = serve(server, echo);
    nlohmann::json result = call_loader(path_, {{"command", "backend_clear"}});
    EXPECT_EQ(result["command"], "backend_clear");
    EXPECT_EQ(result["peer_pid"], getpid());
    EXPECT_EQ(result["peer_uid"], geteuid());
}

TEST_F(ControlSocketTest, RefusalsReachTheClientWithTheirKindAndMessage) {
    ControlServer server(path_);
    auto serving = serve(server, [](const ControlRequest &) -> nlohmann::json {
        throw ControlFailure(ControlFailure::Kind::BackendUnavailable, "cannot locate backend 198.18.100.2");
    });
    try {
        call_loader(path_, {{"command", "backend_set"}, {"ip", "198.18.100.2"}});
        FAIL() << "no ControlFailure";
    } catch (const ControlFailure &e) {
        EXPECT_EQ(e.kind(), ControlFailure::Kind::BackendUnavailable);
        EXPECT_STREQ(e.what(), "cannot locate backend 198.18.100.2");
    }
}

TEST_F(ControlSocketTest, AnythingButARequestObjectIsABadRequest) {
    ControlServer server(path_);
    bool handled = false;
    auto serving = serve(server, [&handled](const ControlRequest &) {
        handled = true;
        return nlohmann::json::object();
    });
    for (const nlohmann::json &request : {nlohmann::json::array({1, 2}), nlohmann::json{{"command", 7}}}) {
        try {
            call_loader(path_, request);
            FAIL() << "accepted " << request.dump();
        } catch (const ControlFailure &e) {
            EXPECT_EQ(e.kind(), ControlFailure::Kind::BadRequest) << e.what();
        }
    }
    EXPECT_FALSE(handled);
}

TEST_F(ControlSocketTest, WithoutALoaderTheClientSaysNoneServesThePath) {
    EXPECT_THROW(call_loader(path_, {{"command", "backend_clear"}}), ControlUnavailable);
    // A socket file left by a loader that died: nobody listens.
    fs::create_directories(dir_ / "run");
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strcpy(address.sun_path, path_.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)), 0);
    ::close(fd);
    try {
        call_loader(path_, {{"command", "backend_clear"}});
        FAIL() << "no ControlUnavailable";
    } catch (const ControlUnavailable &e) {
        EXPECT_NE(std::string(e.what()).find("no bpfnet-loader serves " + path_), std::string::npos) << e.what();
    }
    // A new loader replaces the stale file and serves.
    ControlServer server(path_);
    auto serving = serve(server, echo);
    EXPECT_EQ(call_loader(path_, {{"command", "x"}})["command"], "x");
}

TEST_F(ControlSocketTest, ASecondServerOnALiveSocketIsRefusedNamingThePid) {
    ControlServer first(path_);
    try {
        ControlServer second(path_);
        FAIL() << "a second server bound the live socket";
    } catch (const SystemError &e) {
        EXPECT_NE(std::string(e.what()).find("pid " + std::to_string(getpid())), std::string::npos) << e.what();
    }
    // The refused one did not remove the first one's socket.
    auto serving = serve(first, echo);
    EXPECT_EQ(call_loader(path_, {{"command", "x"}})["command"], "x");
}

TEST_F(ControlSocketTest, TheSocketGoesWithItsServer) {
    { ControlServer server(path_); }
    EXPECT_FALSE(fs::exists(path_));
}

// Runs `connect_as_other_user` in a child with uid/gid 65534 (nobody); returns its exit status.
int as_nobody(const std::function<int()> &body) {
    pid_t child = fork();
    if (child == 0) {
        if (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
            _exit(90);
        _exit(body());
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

constexpr int kRefusedByMode = 10, kRefusedByLoader = 11, kServed = 12, kOtherOutcome = 13;

int try_request(const std::string &path) {
    try {
        call_loader(path, {{"command", "backend_clear"}});
        return kServed;
    } catch (const SystemError &e) {
        return e.code().value() == EACCES ? kRefusedByMode : kOtherOutcome;
    } catch (const ControlFailure &e) {
        return e.kind() == ControlFailure::Kind::PermissionDenied ? kRefusedByLoader : kOtherOutcome;
    } catch (...) {
        return kOtherOutcome;
    }
}

TEST_F(ControlSocketTest, OnlyRootOrTheLoadersUserMayUseIt) {
    if (geteuid() != 0)
        GTEST_SKIP() << "needs root (to run a client as another user)";
    ControlServer server(path_);
    struct stat st {};
    ASSERT_EQ(::stat(path_.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    ASSERT_EQ(::stat((dir_ / "run").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    bool handled = false;
    auto serving = serve(server, [&handled](const ControlRequest &request) {
        handled = true;
        return echo(request);
    });
    // The directory and the socket's mode keep another user out...
    fs::permissions(dir_, fs::perms::all);
    EXPECT_EQ(as_nobody([this] { return try_request(path_); }), kRefusedByMode);
    // ...and with the modes widened by hand, the loader's check of the peer's credentials still does.
    fs::permissions(dir_ / "run", fs::perms::all);
    fs::permissions(path_, fs::perms::all);
    EXPECT_EQ(as_nobody([this] { return try_request(path_); }), kRefusedByLoader);
    EXPECT_FALSE(handled);
    EXPECT_EQ(try_request(path_), kServed);
}

// ---- the pin directory's lock ----

TEST_F(ControlSocketTest, ASecondHolderOfThePinDirectoryIsRefusedNamingTheFirst) {
    const std::string pin_dir = (dir_ / "bpf" / "prov0").string();
    std::optional<PinDirLock> first(std::in_place, pin_dir);
    EXPECT_TRUE(fs::is_directory(pin_dir));
    try {
        PinDirLock second(pin_dir);
        FAIL() << "a second lock was granted";
    } catch (const PinDirBusy &e) {
        const std::string message = e.what();
        EXPECT_NE(message.find(pin_dir + " is held by another bpfnet-loader (pid " + std::to_string(getpid()) + ": "),
                  std::string::npos)
            << message;
        EXPECT_NE(message.find("unit_tests"), std::string::npos) << message; // the holder's command line
    }
    // Another process is refused too (flock is per open file, so the same process proves little alone).
    EXPECT_EQ(
        as_nobody([&pin_dir] {
            try {
                PinDirLock other(pin_dir);
                return kServed;
            } catch (const PinDirBusy &) {
                return kRefusedByLoader;
            } catch (...) {
                return kOtherOutcome; // nobody cannot even open the directory: that is a refusal, but not this one
            }
        }),
        kRefusedByLoader);
    first.reset();
    EXPECT_NO_THROW(PinDirLock again(pin_dir));
}

// A loader that stops before pinning anything leaves no directory behind; one with pins keeps them.
TEST_F(ControlSocketTest, ThePinDirectoryGoesWithTheLockOnlyWhileEmpty) {
    const fs::path root = dir_ / "bpf";
    fs::create_directories(root);
    { PinDirLock lock((root / "new" / "prov0").string()); }
    EXPECT_FALSE(fs::exists(root / "new"));
    EXPECT_TRUE(fs::exists(root)); // only what the lock created goes
    {
        PinDirLock lock((root / "pinned" / "prov0").string());
        std::ofstream(root / "pinned" / "prov0" / "iface") << "pin";
    }
    EXPECT_TRUE(fs::exists(root / "pinned" / "prov0" / "iface"));
}

} // namespace
} // namespace bpfnet
