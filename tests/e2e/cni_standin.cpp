// Attaches tests/e2e/cni_standin.bpf.c to a device's TC ingress as a CNI would, and reads what it saw:
//
//   cni_standin attach DEV pass|drop|redirect[:DEV2] PIN   load, attach, pin the link at PIN_link (without
//                                                          tcx, leave the clsact filter) and the counter at
//                                                          PIN_seen (bpffs names take no dots)
//   cni_standin seen PIN                                   the frames the stand-in has seen
//   cni_standin socket-lb CGROUP IP:PORT BACKEND:PORT PIN  a kube-proxy replacement's socket-level load
//                                                          balancing for the processes of CGROUP (a cgroup v2
//                                                          directory): connects to IP:PORT go to BACKEND:PORT
//                                                          (link pinned at PIN_link, connects made at PIN_seen)
//
// With tcx (kernel 6.6+) it attaches last in the device's chain, as Cilium does (its links are anchored at
// the tail); without, as a clsact filter at priority 1, Cilium's default (bpf-filter-priority).
#include "cni_standin.skel.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <net/if.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace {

constexpr auto kTcxIngress = static_cast<bpf_attach_type>(46); // BPF_TCX_INGRESS
constexpr __u32 kAfter = 1U << 4;                              // BPF_F_AFTER

// The skeleton and the link are released when the command ends (no leak for the sanitizer tree's runs): what
// was pinned (the link, the counter) stays, and with it the program.
struct SkeletonDestroy {
    void operator()(cni_standin_bpf *skel) const { cni_standin_bpf::destroy(skel); }
};
using Skeleton = std::unique_ptr<cni_standin_bpf, SkeletonDestroy>;
struct LinkDestroy {
    void operator()(bpf_link *link) const { bpf_link__destroy(link); }
};

int fail(const std::string &what, int err) {
    std::fprintf(stderr, "cni_standin: %s: %s\n", what.c_str(), std::strerror(err));
    return 1;
}

unsigned ifindex_of(const std::string &name) {
    return if_nametoindex(name.c_str());
}

int attach(const std::string &dev, const std::string &mode, const std::string &pin) {
    const unsigned ifindex = ifindex_of(dev);
    if (ifindex == 0)
        return fail("no device " + dev, ENODEV);
    const Skeleton skel(cni_standin_bpf::open());
    if (!skel)
        return fail("open", errno);
    bpf_program__set_autoload(skel->progs.socket_lb_connect4, false);
    if (mode == "pass") {
        skel->rodata->standin_mode = 0;
    } else if (mode == "drop") {
        skel->rodata->standin_mode = 1;
    } else if (mode.rfind("redirect:", 0) == 0) {
        skel->rodata->standin_mode = 2;
        skel->rodata->redirect_ifindex = ifindex_of(mode.substr(9));
        if (skel->rodata->redirect_ifindex == 0)
            return fail("no device " + mode.substr(9), ENODEV);
    } else {
        std::fprintf(stderr, "cni_standin: mode %s: want pass, drop or redirect:DEV\n", mode.c_str());
        return 2;
    }
    if (cni_standin_bpf::load(skel.get()) != 0)
        return fail("load", errno);
    if (bpf_map__pin(skel->maps.seen, (pin + "_seen").c_str()) != 0)
        return fail("pin " + pin + "_seen", errno);
    const int prog = bpf_program__fd(skel->progs.cni_standin);
    LIBBPF_OPTS(bpf_link_create_opts, last, .flags = kAfter);
    int link = bpf_link_create(prog, static_cast<int>(ifindex), kTcxIngress, &last);
    if (link >= 0) {
        if (bpf_obj_pin(link, (pin + "_link").c_str()) != 0)
            return fail("pin " + pin + "_link", errno);
        std::printf("tcx\n");
        return 0;
    }
    // No tcx in this kernel: a clsact filter, which stays attached when this process ends.
    LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = static_cast<int>(ifindex), .attach_point = BPF_TC_INGRESS);
    int err = bpf_tc_hook_create(&hook);
    if (err != 0 && err != -EEXIST)
        return fail("clsact on " + dev, -err);
    LIBBPF_OPTS(bpf_tc_opts, filter, .prog_fd = prog, .handle = 1, .priority = 1);
    if ((err = bpf_tc_attach(&hook, &filter)) != 0)
        return fail("tc filter on " + dev, -err);
    std::printf("clsact\n");
    return 0;
}

// An IPv4 address and port, both in network byte order; false if TEXT is not ADDRESS:PORT.
bool parse_endpoint(const std::string &text, __u32 &address, __u16 &port) {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || inet_pton(AF_INET, text.substr(0, colon).c_str(), &address) != 1)
        return false;
    const char *digits = text.c_str() + colon + 1;
    char *end = nullptr;
    const unsigned long value = std::strtoul(digits, &end, 10);
    if (end == digits || *end != '\0' || value == 0 || value > 65535)
        return false;
    port = htons(static_cast<__u16>(value));
    return true;
}

int socket_lb(const std::string &cgroup, const std::string &service, const std::string &backend,
              const std::string &pin) {
    const Skeleton skel(cni_standin_bpf::open());
    if (!skel)
        return fail("open", errno);
    __u32 service_ip = 0, backend_ip = 0;
    __u16 service_port = 0, backend_port = 0;
    if (!parse_endpoint(service, service_ip, service_port) || !parse_endpoint(backend, backend_ip, backend_port)) {
        std::fprintf(stderr, "cni_standin: want IPv4 ADDRESS:PORT, got %s and %s\n", service.c_str(), backend.c_str());
        return 2;
    }
    skel->rodata->service_ip4 = service_ip;
    skel->rodata->service_port = service_port;
    skel->rodata->backend_ip4 = backend_ip;
    skel->rodata->backend_port = backend_port;
    bpf_program__set_autoload(skel->progs.cni_standin, false);
    if (cni_standin_bpf::load(skel.get()) != 0)
        return fail("load", errno);
    const int dir = open(cgroup.c_str(), O_RDONLY | O_DIRECTORY);
    if (dir < 0)
        return fail("open " + cgroup, errno);
    const std::unique_ptr<bpf_link, LinkDestroy> link(bpf_program__attach_cgroup(skel->progs.socket_lb_connect4, dir));
    const int attach_error = errno;
    close(dir);
    if (!link)
        return fail("attach to " + cgroup, attach_error);
    if (bpf_map__pin(skel->maps.seen, (pin + "_seen").c_str()) != 0)
        return fail("pin " + pin + "_seen", errno);
    if (bpf_link__pin(link.get(), (pin + "_link").c_str()) != 0)
        return fail("pin " + pin + "_link", errno);
    return 0;
}

int seen(const std::string &pin) {
    const int map = bpf_obj_get((pin + "_seen").c_str());
    if (map < 0)
        return fail("open " + pin + "_seen", errno);
    __u32 key = 0;
    __u64 count = 0;
    if (bpf_map_lookup_elem(map, &key, &count) != 0)
        return fail("read " + pin + "_seen", errno);
    std::printf("%llu\n", static_cast<unsigned long long>(count));
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    const std::string command = argc > 1 ? argv[1] : "";
    if (command == "attach" && argc == 5)
        return attach(argv[2], argv[3], argv[4]);
    if (command == "seen" && argc == 3)
        return seen(argv[2]);
    if (command == "socket-lb" && argc == 6)
        return socket_lb(argv[2], argv[3], argv[4], argv[5]);
    std::fprintf(stderr, "usage: cni_standin attach DEV pass|drop|redirect:DEV2 PIN | seen PIN | "
                         "socket-lb CGROUP IP:PORT BACKEND:PORT PIN\n");
    return 2;
}
