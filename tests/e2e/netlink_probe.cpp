// End-to-end probe of loader/netlink and loader/arp_sender against a real kernel. netlink_probe.sh builds
// this topology inside a private network sandbox and passes the pod namespace's path as argv[1]:
//
//   sandbox netns: vethpod 198.18.100.1/24 02:00:00:00:01:01 <-> netns nlh-pod: eth0 198.18.100.2/24 02:00:00:00:01:02
//                  vetha 198.18.101.1/24 <-> vethb (a pair inside the sandbox netns)
//                  blackhole route 198.18.200.0/24
//                  flannel.1: a VXLAN device with 198.18.120.0/24 (another node's pods) routed through it
//
// Prints one line per check and "N passed, M failed"; exits non-zero on any failure.
#include "core/arp_sender.hpp"
#include "core/backend_locator.hpp"
#include "core/netlink.hpp"
#include "maps/system_error.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/ethernet.h>
#include <net/if_arp.h>
#include <netinet/if_ether.h>
#include <netpacket/packet.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <utility>

using bpfnet::MacAddress;

namespace {

constexpr MacAddress kVethpodMac = {0x02, 0x00, 0x00, 0x00, 0x01, 0x01};
constexpr MacAddress kPodMac = {0x02, 0x00, 0x00, 0x00, 0x01, 0x02};
constexpr MacAddress kBroadcastMac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
constexpr MacAddress kZeroMac = {};
constexpr int kMissingIfindex = 999999;

uint32_t ip(const char *text) {
    in_addr address{};
    inet_pton(AF_INET, text, &address);
    return address.s_addr;
}

// A backend pod at an IPv4 address, here, its veth found by the loader.
bpfnet::Backend backend_at(uint32_t ip_be) {
    bpfnet::Backend backend;
    backend.ip_be = ip_be;
    return backend;
}

std::string mac_text(const std::optional<MacAddress> &mac) {
    if (!mac)
        return "none";
    std::string text;
    for (uint8_t byte : *mac) {
        char part[4];
        std::snprintf(part, sizeof(part), text.empty() ? "%02x" : ":%02x", byte);
        text += part;
    }
    return text;
}

class Checks {
public:
    void expect(bool ok, const std::string &what) {
        std::cout << (ok ? "PASS " : "FAIL ") << what << '\n';
        ++(ok ? passed_ : failed_);
    }
    // Runs one group of checks; an exception it did not expect is one more failure, not the end of the run.
    void group(const std::string &name, const std::function<void()> &body) {
        try {
            body();
        } catch (const std::exception &error) {
            expect(false, name + ": unexpected exception: " + error.what());
        }
    }
    // Passes if `call` throws SystemError with errno `code` and a message naming `subject`.
    void expect_error(const std::string &what, std::errc code, const std::string &subject,
                      const std::function<void()> &call) {
        try {
            call();
            expect(false, what + ": no exception");
        } catch (const bpfnet::SystemError &error) {
            std::string message = error.what();
            expect(error.code() == code && message.find(subject) != std::string::npos, what + ": \"" + message + "\"");
        }
    }
    int report() const {
        std::cout << passed_ << " passed, " << failed_ << " failed\n";
        return failed_ == 0 ? 0 : 1;
    }

private:
    int passed_ = 0;
    int failed_ = 0;
};

class FileDescriptor {
public:
    explicit FileDescriptor(int fd) : fd_(fd) {}
    ~FileDescriptor() {
        if (fd_ >= 0)
            close(fd_);
    }
    FileDescriptor(const FileDescriptor &) = delete;
    FileDescriptor &operator=(const FileDescriptor &) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

// Moves this (single-threaded) process into another network namespace for the guard's lifetime. Sockets
// opened meanwhile stay in that namespace after the guard returns home.
class InNetns {
public:
    explicit InNetns(const std::string &path)
        : home_(open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)), target_(open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
        if (home_.get() < 0 || target_.get() < 0 || setns(target_.get(), CLONE_NEWNET) < 0)
            bpfnet::throw_errno("setns " + path);
    }
    ~InNetns() {
        if (setns(home_.get(), CLONE_NEWNET) < 0)
            std::terminate(); // every later check would run in the wrong namespace
    }
    InNetns(const InNetns &) = delete;
    InNetns &operator=(const InNetns &) = delete;

private:
    FileDescriptor home_;
    FileDescriptor target_;
};

struct ArpFrame {
    ethhdr ethernet;
    ether_arp arp;
};

bool ipv4_equals(const uint8_t (&field)[4], uint32_t ip_be) {
    return std::memcmp(field, &ip_be, sizeof(ip_be)) == 0;
}

bool mac_equals(const uint8_t (&field)[ETH_ALEN], const MacAddress &mac) {
    return std::equal(mac.begin(), mac.end(), field);
}

// An AF_PACKET socket that sees every ARP frame arriving on one interface of the current namespace.
class ArpCapture {
public:
    explicit ArpCapture(int ifindex) : socket_(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ARP))) {
        sockaddr_ll address{};
        address.sll_family = AF_PACKET;
        address.sll_protocol = htons(ETH_P_ARP);
        address.sll_ifindex = ifindex;
        if (socket_.get() < 0 || bind(socket_.get(), reinterpret_cast<sockaddr *>(&address), sizeof(address)) < 0)
            bpfnet::throw_errno("ARP capture on ifindex " + std::to_string(ifindex));
        timeval poll_interval{.tv_sec = 0, .tv_usec = 100'000};
        setsockopt(socket_.get(), SOL_SOCKET, SO_RCVTIMEO, &poll_interval, sizeof(poll_interval));
    }

    // The first received ARP frame that `wanted` accepts within two seconds.
    std::optional<ArpFrame> wait_for(const std::function<bool(const ArpFrame &)> &wanted) {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while (std::chrono::steady_clock::now() < deadline) {
            ArpFrame frame{};
            ssize_t received = recv(socket_.get(), &frame, sizeof(frame), 0);
            if (received == static_cast<ssize_t>(sizeof(frame)) && wanted(frame))
                return frame;
        }
        return std::nullopt;
    }

private:
    FileDescriptor socket_;
};

void check_links(Checks &checks) {
    auto vethpod = bpfnet::link_by_name("vethpod");
    checks.expect(vethpod.name == "vethpod" && vethpod.ifindex > 0, "link_by_name(vethpod) names it");
    checks.expect(vethpod.is_veth, "vethpod is a veth");
    checks.expect(vethpod.peer_ifindex > 0 && vethpod.peer_netnsid >= 0,
                  "vethpod's peer is in another netns (ifindex " + std::to_string(vethpod.peer_ifindex) + ", netnsid " +
                      std::to_string(vethpod.peer_netnsid) + ")");
    checks.expect(vethpod.mac == kVethpodMac, "vethpod's MAC is " + mac_text(vethpod.mac));
    checks.expect(vethpod.up && vethpod.mtu == 1500, "vethpod is up with MTU 1500");
    checks.expect(bpfnet::link_by_index(vethpod.ifindex).name == "vethpod", "link_by_index finds vethpod");

    auto lo = bpfnet::link_by_name("lo");
    checks.expect(!lo.is_veth && lo.peer_ifindex == -1 && lo.peer_netnsid == -1, "lo is no veth and has no peer");
    checks.expect(!bpfnet::peer_mac(lo), "peer_mac(lo) is none");
}

void check_peers(Checks &checks) {
    auto pod_mac = bpfnet::peer_mac(bpfnet::link_by_name("vethpod"));
    checks.expect(pod_mac == kPodMac, "peer_mac(vethpod) across netns is " + mac_text(pod_mac));

    auto vetha = bpfnet::link_by_name("vetha");
    auto vethb = bpfnet::link_by_name("vethb");
    checks.expect(vetha.is_veth && vetha.peer_netnsid == -1 && vetha.peer_ifindex == vethb.ifindex,
                  "vetha's peer is vethb in the same netns");
    checks.expect(bpfnet::peer_mac(vetha) == vethb.mac, "peer_mac(vetha) is vethb's MAC " + mac_text(vethb.mac));
}

void check_errors(Checks &checks) {
    checks.expect_error("link_by_name(nonexistent) throws ENODEV", std::errc::no_such_device, "nonexistent",
                        [] { bpfnet::link_by_name("nonexistent"); });
    checks.expect_error("link_by_index(999999) throws ENODEV", std::errc::no_such_device, "999999",
                        [] { bpfnet::link_by_index(kMissingIfindex); });
    checks.expect_error("link_by_name of a 16-character name throws", std::errc::filename_too_long, "sixteen-chars-xx",
                        [] { bpfnet::link_by_name("sixteen-chars-xx"); });
    checks.expect_error("ArpSender(999999) throws ENODEV", std::errc::no_such_device, "999999",
                        [] { bpfnet::ArpSender sender(kMissingIfindex); });
}

void check_routes(Checks &checks) {
    int vethpod = bpfnet::link_by_name("vethpod").ifindex;
    checks.expect(bpfnet::route_oif(ip("198.18.100.2")) == vethpod, "route_oif(198.18.100.2) is vethpod");
    checks.expect(bpfnet::route_oif(ip("198.18.101.2")) == bpfnet::link_by_name("vetha").ifindex,
                  "route_oif(198.18.101.2) is vetha");
    checks.expect(bpfnet::route_oif(ip("198.18.100.1")) == bpfnet::link_by_name("lo").ifindex,
                  "route_oif of a local address is lo");
    checks.expect_error("route_oif without a route throws ENETUNREACH", std::errc::network_unreachable, "198.19.0.1",
                        [] { bpfnet::route_oif(ip("198.19.0.1")); });
    checks.expect_error("route_oif into a blackhole throws EINVAL", std::errc::invalid_argument, "198.18.200.1",
                        [] { bpfnet::route_oif(ip("198.18.200.1")); });
}

// Where the backend pod is and how its packets reach it: behind the route's veth here, into it (or, asked for,
// through the node's routing with the pod hook still on the veth); a pod on another node, reached through the
// CNI's overlay, is refused whatever the delivery, saying through which device its route goes and that no veth
// of this node leads to it (its answers would leave from its own node).
void check_backend_locator(Checks &checks) {
    const int vethpod = bpfnet::link_by_name("vethpod").ifindex;
    const int vetha = bpfnet::link_by_name("vetha").ifindex;
    const bpfnet::BackendLocation here = bpfnet::locate_backend(backend_at(ip("198.18.100.2")), vetha);
    checks.expect(here.ifindex == vethpod && here.found_by == "route" && here.pod_mac == kPodMac && !here.route &&
                      here.redirect_peer,
                  "locate_backend(198.18.100.2) is vethpod, found by the route, the pod's MAC " +
                      mac_text(here.pod_mac) + ", into the veth");
    bpfnet::Backend routed = backend_at(ip("198.18.100.2"));
    routed.delivery = bpfnet::PodDelivery::Route;
    const bpfnet::BackendLocation asked = bpfnet::locate_backend(routed, vetha);
    checks.expect(asked.ifindex == vethpod && asked.route && !asked.redirect_peer && asked.pod_mac == kPodMac,
                  "locate_backend(198.18.100.2, delivery route) is vethpod, through the node's routing");
    for (const bpfnet::PodDelivery delivery : {bpfnet::PodDelivery::Auto, bpfnet::PodDelivery::Route}) {
        bpfnet::Backend remote = backend_at(ip("198.18.120.5"));
        remote.delivery = delivery;
        const std::string what = "locate_backend(198.18.120.5, delivery " + bpfnet::to_string(delivery) + ")";
        try {
            bpfnet::locate_backend(remote, vetha);
            checks.expect(false, what + " behind flannel.1: no exception");
        } catch (const bpfnet::BackendNotFound &error) {
            const std::string message = error.detail();
            checks.expect(message.find("goes through flannel.1 (vxlan)") != std::string::npos &&
                              message.find("no veth on this node leads to a network namespace holding 198.18.120.5") !=
                                  std::string::npos,
                          what + " behind flannel.1 is refused: \"" + message + "\"");
        }
    }
}

// Makes this namespace's kernel resolve ip on its own (a datagram to the discard port makes it ARP), as it
// resolves the pod for the loader: the entry is the kernel's, not one the test wrote.
void send_datagram_to(uint32_t ip_be) {
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(9);
    to.sin_addr.s_addr = ip_be;
    ::sendto(fd, "x", 1, 0, reinterpret_cast<const sockaddr *>(&to), sizeof(to));
    ::close(fd);
}

void check_neighbours(Checks &checks) {
    int vethpod = bpfnet::link_by_name("vethpod").ifindex;
    uint32_t pod_ip = ip("198.18.100.2");
    send_datagram_to(pod_ip);
    std::optional<MacAddress> resolved;
    for (int i = 0; i < 200 && !resolved; i++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        resolved = bpfnet::neighbour_mac(vethpod, pod_ip);
    }
    checks.expect(resolved == kPodMac, "neighbour_mac of the pod the kernel resolved is " + mac_text(resolved));
    checks.expect(!bpfnet::neighbour_mac(vethpod, ip("198.18.100.4")), "neighbour_mac without an entry is none");
    checks.expect_error("neighbour_mac on a missing ifindex throws ENODEV", std::errc::no_such_device, "999999",
                        [] { bpfnet::neighbour_mac(kMissingIfindex, ip("198.18.100.3")); });
}

// The announcement must arrive in the pod exactly as RFC 5227 describes it.
void check_gratuitous_arp(Checks &checks, const std::string &pod_netns) {
    auto vethpod = bpfnet::link_by_name("vethpod");
    uint32_t announced = ip("198.18.100.1");
    std::optional<ArpCapture> pod_capture;
    {
        InNetns in_pod(pod_netns);
        pod_capture.emplace(bpfnet::link_by_name("eth0").ifindex);
    }
    bpfnet::ArpSender sender(vethpod.ifindex);
    sender.send_gratuitous(announced, vethpod.mac);
    auto frame = pod_capture->wait_for([&](const ArpFrame &candidate) {
        return ntohs(candidate.arp.arp_op) == ARPOP_REQUEST && ipv4_equals(candidate.arp.arp_spa, announced);
    });
    checks.expect(frame.has_value(), "gratuitous ARP arrives in the pod");
    if (!frame)
        return;
    const ether_arp &arp = frame->arp;
    checks.expect(mac_equals(frame->ethernet.h_dest, kBroadcastMac) &&
                      mac_equals(frame->ethernet.h_source, vethpod.mac) && ntohs(frame->ethernet.h_proto) == ETH_P_ARP,
                  "gratuitous ARP: broadcast from vethpod's MAC");
    checks.expect(ntohs(arp.arp_hrd) == ARPHRD_ETHER && ntohs(arp.arp_pro) == ETH_P_IP && arp.arp_hln == 6 &&
                      arp.arp_pln == 4,
                  "gratuitous ARP: Ethernet/IPv4 header");
    checks.expect(mac_equals(arp.arp_sha, vethpod.mac) && mac_equals(arp.arp_tha, kZeroMac) &&
                      ipv4_equals(arp.arp_tpa, announced),
                  "gratuitous ARP: sender = target = 198.18.100.1, target MAC zero");
}

// The pod's kernel must accept the request: it answers, and it learns the sender as a neighbour.
void check_arp_request(Checks &checks, const std::string &pod_netns) {
    auto vethpod = bpfnet::link_by_name("vethpod");
    uint32_t sender_ip = ip("198.18.100.1");
    uint32_t pod_ip = ip("198.18.100.2");
    int pod_eth0 = 0;
    {
        InNetns in_pod(pod_netns);
        pod_eth0 = bpfnet::link_by_name("eth0").ifindex;
        checks.expect(!bpfnet::neighbour_mac(pod_eth0, sender_ip), "pod has no neighbour entry for 198.18.100.1 yet");
    }
    ArpCapture capture(vethpod.ifindex);
    bpfnet::ArpSender moved_from(vethpod.ifindex);
    bpfnet::ArpSender sender(std::move(moved_from)); // a moved sender keeps working
    sender.send_request(sender_ip, vethpod.mac, pod_ip);
    auto reply = capture.wait_for([&](const ArpFrame &candidate) {
        return ntohs(candidate.arp.arp_op) == ARPOP_REPLY && ipv4_equals(candidate.arp.arp_spa, pod_ip);
    });
    checks.expect(reply && mac_equals(reply->arp.arp_sha, kPodMac) && mac_equals(reply->arp.arp_tha, vethpod.mac) &&
                      ipv4_equals(reply->arp.arp_tpa, sender_ip),
                  "the pod answers the ARP request from 02:00:00:00:01:02 to vethpod");
    InNetns in_pod(pod_netns);
    auto learned = bpfnet::neighbour_mac(pod_eth0, sender_ip);
    checks.expect(learned == vethpod.mac, "pod learned 198.18.100.1 at " + mac_text(learned));
}

} // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::cerr << "usage: " << argv[0] << " POD_NETNS_PATH (run by netlink_probe.sh inside a sandbox)\n";
        return 2;
    }
    std::string pod_netns = argv[1];
    Checks checks;
    checks.group("links", [&] { check_links(checks); });
    checks.group("peers", [&] { check_peers(checks); });
    checks.group("errors", [&] { check_errors(checks); });
    checks.group("routes", [&] { check_routes(checks); });
    checks.group("backend locator", [&] { check_backend_locator(checks); });
    checks.group("gratuitous ARP", [&] { check_gratuitous_arp(checks, pod_netns); });
    // Before the kernel resolves the pod (neighbours): the pod must not have learned vethpod yet.
    checks.group("ARP request", [&] { check_arp_request(checks, pod_netns); });
    checks.group("neighbours", [&] { check_neighbours(checks); });
    return checks.report();
}
