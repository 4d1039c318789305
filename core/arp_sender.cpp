#include "core/arp_sender.hpp"

#include "maps/system_error.hpp"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if_arp.h>
#include <netinet/if_ether.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <utility>

namespace bpfnet {
namespace {

using MacAddress = std::array<uint8_t, 6>;

constexpr MacAddress kBroadcastMac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

struct ArpFrame {
    ethhdr ethernet;
    ether_arp arp;
};
static_assert(sizeof(ArpFrame) == ETH_HLEN + sizeof(ether_arp) && sizeof(ether_arp) == 28,
              "an Ethernet/IPv4 ARP frame is 42 bytes with no padding");

// A broadcast who-has request. The target hardware address stays zero: RFC 5227 asks for that, and
// receivers ignore it in requests anyway.
ArpFrame arp_request(const MacAddress &sender_mac, uint32_t sender_ip_be, uint32_t target_ip_be) {
    ArpFrame frame{};
    std::ranges::copy(kBroadcastMac, frame.ethernet.h_dest);
    std::ranges::copy(sender_mac, frame.ethernet.h_source);
    frame.ethernet.h_proto = htons(ETH_P_ARP);
    frame.arp.arp_hrd = htons(ARPHRD_ETHER);
    frame.arp.arp_pro = htons(ETH_P_IP);
    frame.arp.arp_hln = ETH_ALEN;
    frame.arp.arp_pln = sizeof(uint32_t);
    frame.arp.arp_op = htons(ARPOP_REQUEST);
    std::ranges::copy(sender_mac, frame.arp.arp_sha);
    std::memcpy(frame.arp.arp_spa, &sender_ip_be, sizeof(sender_ip_be));
    std::memcpy(frame.arp.arp_tpa, &target_ip_be, sizeof(target_ip_be));
    return frame;
}

std::string ipv4_text(uint32_t ip_be) {
    std::array<char, INET_ADDRSTRLEN> text{};
    inet_ntop(AF_INET, &ip_be, text.data(), text.size());
    return text.data();
}

sockaddr_ll link_address(int ifindex, uint16_t protocol_be) {
    sockaddr_ll address{};
    address.sll_family = AF_PACKET;
    address.sll_protocol = protocol_be;
    address.sll_ifindex = ifindex;
    return address;
}

// The socket is bound without a protocol, so the destination address names it (and the ifindex); for
// SOCK_RAW the kernel takes the frame as is, Ethernet header included.
void send_frame(int fd, int ifindex, const ArpFrame &frame, const std::string &what) {
    std::string context = what + " on ifindex " + std::to_string(ifindex);
    sockaddr_ll destination = link_address(ifindex, htons(ETH_P_ARP));
    auto bytes = std::as_bytes(std::span(&frame, 1));
    ssize_t sent = sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<const sockaddr *>(&destination),
                          sizeof(destination));
    if (sent < 0)
        throw_errno(context);
    if (static_cast<size_t>(sent) != bytes.size())
        throw SystemError(context + ": short send", EMSGSIZE);
}

} // namespace

// Protocol 0: the socket only sends. Opened with ETH_P_ARP it would also queue a copy of every ARP frame the
// interface receives, which nobody reads; send_frame() names ETH_P_ARP per frame instead.
ArpSender::ArpSender(int ifindex) : fd_(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0)), ifindex_(ifindex) {
    std::string context = "ArpSender ifindex " + std::to_string(ifindex);
    if (fd_ < 0)
        throw_errno(context + ": socket(AF_PACKET)");
    // Binding checks the ifindex now, so a wrong one fails here and not at the first announcement.
    sockaddr_ll address = link_address(ifindex, 0);
    if (bind(fd_, reinterpret_cast<const sockaddr *>(&address), sizeof(address)) < 0) {
        int err = errno;
        close(fd_);
        throw SystemError(context + ": bind", err);
    }
}

ArpSender::~ArpSender() {
    if (fd_ >= 0)
        close(fd_);
}

ArpSender::ArpSender(ArpSender &&other) noexcept : fd_(std::exchange(other.fd_, -1)), ifindex_(other.ifindex_) {}

ArpSender &ArpSender::operator=(ArpSender &&other) noexcept {
    if (this != &other) {
        if (fd_ >= 0)
            close(fd_);
        fd_ = std::exchange(other.fd_, -1);
        ifindex_ = other.ifindex_;
    }
    return *this;
}

void ArpSender::send_gratuitous(uint32_t ip_be, const std::array<uint8_t, 6> &mac) {
    send_frame(fd_, ifindex_, arp_request(mac, ip_be, ip_be), "ARP announcement of " + ipv4_text(ip_be));
}

void ArpSender::send_request(uint32_t sender_ip_be, const std::array<uint8_t, 6> &sender_mac, uint32_t target_ip_be) {
    send_frame(fd_, ifindex_, arp_request(sender_mac, sender_ip_be, target_ip_be),
               "ARP request for " + ipv4_text(target_ip_be));
}

} // namespace bpfnet
