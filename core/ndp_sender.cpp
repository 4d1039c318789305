#include "core/ndp_sender.hpp"

#include "core/addresses.hpp"
#include "maps/system_error.hpp"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace bpfnet {
namespace {

constexpr uint8_t kHopLimit = 255; // RFC 4861: receivers drop neighbour discovery that came through a router
constexpr uint8_t kCurHopLimit = 64;
constexpr uint8_t kOverride = 0x20; // in the advertisement's first flags byte

const uint8_t *bytes_of(const bpfnet_ip &ip) {
    return reinterpret_cast<const uint8_t *>(&ip);
}

void append(Frame &frame, const uint8_t *data, size_t len) {
    frame.insert(frame.end(), data, data + len);
}

// The ICMPv6 checksum (RFC 4443 2.3): over the pseudo-header of RFC 8200 8.1 and the message.
uint16_t icmp6_checksum(const bpfnet_ip &source, const bpfnet_ip &destination, const Frame &message) {
    Frame pseudo;
    append(pseudo, bytes_of(source), 16);
    append(pseudo, bytes_of(destination), 16);
    const auto len = static_cast<uint32_t>(message.size());
    const uint8_t tail[8] = {static_cast<uint8_t>(len >> 24),
                             static_cast<uint8_t>(len >> 16),
                             static_cast<uint8_t>(len >> 8),
                             static_cast<uint8_t>(len),
                             0,
                             0,
                             0,
                             IPPROTO_ICMPV6};
    append(pseudo, tail, sizeof(tail));
    pseudo.insert(pseudo.end(), message.begin(), message.end());
    uint32_t sum = 0;
    for (size_t i = 0; i + 1 < pseudo.size(); i += 2)
        sum += static_cast<uint32_t>(pseudo[i] << 8 | pseudo[i + 1]);
    if (pseudo.size() % 2)
        sum += static_cast<uint32_t>(pseudo.back() << 8);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(~sum & 0xffff);
}

// Ethernet + IPv6 + the ICMPv6 message (type, code 0, checksum, body).
Frame icmp6_frame(const std::array<uint8_t, 6> &dst_mac, const std::array<uint8_t, 6> &src_mac, const bpfnet_ip &source,
                  const bpfnet_ip &destination, uint8_t type, const Frame &body) {
    Frame message = {type, 0, 0, 0};
    message.insert(message.end(), body.begin(), body.end());
    const uint16_t checksum = icmp6_checksum(source, destination, message);
    message[2] = static_cast<uint8_t>(checksum >> 8);
    message[3] = static_cast<uint8_t>(checksum & 0xff);

    Frame frame;
    append(frame, dst_mac.data(), 6);
    append(frame, src_mac.data(), 6);
    frame.push_back(ETHERTYPE_IPV6 >> 8);
    frame.push_back(ETHERTYPE_IPV6 & 0xff);
    const uint8_t header[8] = {0x60,
                               0,
                               0,
                               0,
                               static_cast<uint8_t>(message.size() >> 8),
                               static_cast<uint8_t>(message.size() & 0xff),
                               IPPROTO_ICMPV6,
                               kHopLimit};
    append(frame, header, sizeof(header));
    append(frame, bytes_of(source), 16);
    append(frame, bytes_of(destination), 16);
    frame.insert(frame.end(), message.begin(), message.end());
    return frame;
}

// A group's MAC: 33:33 and the group's last 32 bits (RFC 2464 7).
std::array<uint8_t, 6> group_mac(const bpfnet_ip &group) {
    const uint8_t *b = bytes_of(group);
    return {0x33, 0x33, b[12], b[13], b[14], b[15]};
}

bpfnet_ip all_nodes() {
    bpfnet_ip group{};
    group.w[0] = htonl(0xff020000);
    group.w[3] = htonl(1);
    return group;
}

// The 16-byte target, then the link-layer option.
Frame nd_body(const uint8_t first_flags, const bpfnet_ip &target, uint8_t option, const std::array<uint8_t, 6> &mac) {
    Frame body = {first_flags, 0, 0, 0};
    append(body, bytes_of(target), 16);
    body.push_back(option);
    body.push_back(1); // length in units of 8 bytes
    append(body, mac.data(), 6);
    return body;
}

sockaddr_ll link_address(int ifindex) {
    sockaddr_ll address{};
    address.sll_family = AF_PACKET;
    address.sll_protocol = htons(ETH_P_IPV6);
    address.sll_ifindex = ifindex;
    return address;
}

} // namespace

bpfnet_ip solicited_node_group(const bpfnet_ip &address) {
    bpfnet_ip group{};
    group.w[0] = htonl(0xff020000);
    group.w[2] = htonl(1);
    auto *b = reinterpret_cast<uint8_t *>(&group);
    b[12] = 0xff;
    std::copy(bytes_of(address) + 13, bytes_of(address) + 16, b + 13);
    return group;
}

Frame unsolicited_advertisement(const bpfnet_ip &address, const std::array<uint8_t, 6> &mac) {
    const bpfnet_ip to = all_nodes();
    return icmp6_frame(group_mac(to), mac, address, to, ND_NEIGHBOR_ADVERT,
                       nd_body(kOverride, address, ND_OPT_TARGET_LINKADDR, mac));
}

Frame neighbour_solicitation(const bpfnet_ip &source, const std::array<uint8_t, 6> &mac, const bpfnet_ip &target) {
    const bpfnet_ip to = solicited_node_group(target);
    return icmp6_frame(group_mac(to), mac, source, to, ND_NEIGHBOR_SOLICIT,
                       nd_body(0, target, ND_OPT_SOURCE_LINKADDR, mac));
}

Frame duplicate_address_probe(const std::array<uint8_t, 6> &mac, const bpfnet_ip &target) {
    const bpfnet_ip to = solicited_node_group(target);
    Frame body = {0, 0, 0, 0};
    append(body, bytes_of(target), 16);
    return icmp6_frame(group_mac(to), mac, bpfnet_ip{}, to, ND_NEIGHBOR_SOLICIT, body);
}

Frame router_advertisement(const bpfnet_ip &source, const std::array<uint8_t, 6> &mac, const bpfnet_ip &prefix,
                           uint8_t prefix_len, uint32_t valid_lifetime_s, const std::optional<RaDestination> &host) {
    const bpfnet_ip to = host ? host->ip : all_nodes();
    auto put32 = [](Frame &f, uint32_t v) {
        for (int shift = 24; shift >= 0; shift -= 8)
            f.push_back(static_cast<uint8_t>(v >> shift));
    };
    // Hop limit, flags, router lifetime 0, reachable time and retransmission timer unspecified (0).
    Frame body = {kCurHopLimit, ND_RA_FLAG_MANAGED | ND_RA_FLAG_OTHER, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    body.push_back(ND_OPT_SOURCE_LINKADDR);
    body.push_back(1);
    append(body, mac.data(), 6);
    body.push_back(ND_OPT_PREFIX_INFORMATION);
    body.push_back(4); // 32 bytes
    body.push_back(prefix_len);
    body.push_back(ND_OPT_PI_FLAG_ONLINK); // on-link, and no A flag: no SLAAC (RFC 4861 4.6.2)
    put32(body, valid_lifetime_s);
    put32(body, valid_lifetime_s); // preferred: the same (no address is formed from it)
    put32(body, 0);                // reserved
    append(body, bytes_of(prefix), 16);
    return icmp6_frame(host ? host->mac : group_mac(to), mac, source, to, ND_ROUTER_ADVERT, body);
}

std::vector<bpfnet_ip> parse_igmp6(const std::string &text, int ifindex) {
    // Each line: ifindex, name, the group as 32 hex digits, users, flags, timer.
    std::vector<bpfnet_ip> groups;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream fields(line);
        int index = 0;
        std::string name, hex;
        if (!(fields >> index >> name >> hex) || index != ifindex || hex.size() != 32)
            continue;
        bpfnet_ip group{};
        auto *bytes = reinterpret_cast<uint8_t *>(&group);
        bool valid = true;
        for (size_t i = 0; i < 16 && valid; i++) {
            unsigned value = 0;
            valid = std::sscanf(hex.c_str() + 2 * i, "%2x", &value) == 1;
            bytes[i] = static_cast<uint8_t>(value);
        }
        if (valid)
            groups.push_back(group);
    }
    return groups;
}

std::vector<bpfnet_ip> ipv6_groups_of(int ifindex) {
    std::ifstream file("/proc/net/igmp6");
    std::stringstream text;
    text << file.rdbuf();
    return parse_igmp6(text.str(), ifindex);
}

// Protocol 0: the socket only sends (see ArpSender).
NdpSender::NdpSender(int ifindex) : fd_(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0)), ifindex_(ifindex) {
    const std::string context = "NdpSender ifindex " + std::to_string(ifindex);
    if (!fd_.valid())
        throw_errno(context + ": socket(AF_PACKET)");
    sockaddr_ll address = link_address(ifindex);
    address.sll_protocol = 0;
    if (bind(fd_.get(), reinterpret_cast<const sockaddr *>(&address), sizeof(address)) < 0)
        throw_errno(context + ": bind");
}

void NdpSender::send(const Frame &frame, const std::string &what) {
    const std::string context = what + " on ifindex " + std::to_string(ifindex_);
    sockaddr_ll destination = link_address(ifindex_);
    ssize_t sent = sendto(fd_.get(), frame.data(), frame.size(), 0, reinterpret_cast<const sockaddr *>(&destination),
                          sizeof(destination));
    if (sent < 0)
        throw_errno(context);
    if (static_cast<size_t>(sent) != frame.size())
        throw SystemError(context + ": short send", EMSGSIZE);
}

void NdpSender::send_unsolicited_advertisement(const bpfnet_ip &address, const std::array<uint8_t, 6> &mac) {
    send(unsolicited_advertisement(address, mac), "neighbour advertisement of " + format_ip(address));
}

void NdpSender::send_solicitation(const bpfnet_ip &source, const std::array<uint8_t, 6> &mac, const bpfnet_ip &target) {
    send(neighbour_solicitation(source, mac, target), "neighbour solicitation for " + format_ip(target));
}

void NdpSender::send_duplicate_address_probe(const std::array<uint8_t, 6> &mac, const bpfnet_ip &target) {
    send(duplicate_address_probe(mac, target), "duplicate address probe for " + format_ip(target));
}

void NdpSender::send_router_advertisement(const bpfnet_ip &source, const std::array<uint8_t, 6> &mac,
                                          const bpfnet_ip &prefix, uint8_t prefix_len, uint32_t valid_lifetime_s,
                                          const std::optional<RaDestination> &to) {
    send(router_advertisement(source, mac, prefix, prefix_len, valid_lifetime_s, to),
         "router advertisement of " + format_ip(prefix) + "/" + std::to_string(prefix_len));
}

NicMulticastGroups::NicMulticastGroups(int ifindex)
    : fd_(socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0)), ifindex_(ifindex) {
    if (!fd_.valid())
        throw_errno("NicMulticastGroups: socket(AF_INET6)");
}

std::vector<std::pair<bpfnet_ip, std::string>> NicMulticastGroups::set(const std::vector<bpfnet_ip> &groups) {
    auto request = [this](const bpfnet_ip &group) {
        ipv6_mreq mreq{};
        std::memcpy(&mreq.ipv6mr_multiaddr, &group, sizeof(group));
        mreq.ipv6mr_interface = static_cast<unsigned>(ifindex_);
        return mreq;
    };
    auto wanted = [&groups](const bpfnet_ip &g) {
        return std::find(groups.begin(), groups.end(), g) != groups.end();
    };
    for (const bpfnet_ip &group : groups_)
        if (!wanted(group)) {
            ipv6_mreq mreq = request(group);
            setsockopt(fd_.get(), IPPROTO_IPV6, IPV6_LEAVE_GROUP, &mreq, sizeof(mreq)); // gone with the socket anyway
        }
    std::erase_if(groups_, [&](const bpfnet_ip &g) { return !wanted(g); });
    std::vector<std::pair<bpfnet_ip, std::string>> failed;
    for (const bpfnet_ip &group : groups) {
        if (std::find(groups_.begin(), groups_.end(), group) != groups_.end())
            continue;
        ipv6_mreq mreq = request(group);
        if (setsockopt(fd_.get(), IPPROTO_IPV6, IPV6_JOIN_GROUP, &mreq, sizeof(mreq)) < 0 && errno != EADDRINUSE)
            failed.emplace_back(group, std::error_code(errno, std::generic_category()).message());
        else
            groups_.push_back(group);
    }
    return failed;
}

std::vector<bpfnet_ip> NicMulticastGroups::joined() const {
    return groups_;
}

bpfnet_ip all_dhcp_relay_agents_and_servers() {
    bpfnet_ip group{};
    group.w[0] = htonl(0xff020000);
    group.w[3] = htonl(0x00010002);
    return group;
}

bpfnet_ip all_routers() {
    bpfnet_ip group{};
    group.w[0] = htonl(0xff020000);
    group.w[3] = htonl(2);
    return group;
}

std::vector<bpfnet_ip> nic_groups(const std::vector<bpfnet_ip> &service_ips, bool relays_dhcp6,
                                  bool advertises_router) {
    std::vector<bpfnet_ip> groups;
    auto add = [&groups](const bpfnet_ip &group) {
        if (std::find(groups.begin(), groups.end(), group) == groups.end())
            groups.push_back(group);
    };
    for (const bpfnet_ip &address : service_ips)
        if (!is_v4(address))
            add(solicited_node_group(address));
    if (relays_dhcp6)
        add(all_dhcp_relay_agents_and_servers());
    if (advertises_router)
        add(all_routers());
    return groups;
}

std::optional<RouterSolicitation> parse_router_solicitation(const uint8_t *message, size_t length,
                                                            const bpfnet_ip &source, int hop_limit) {
    if (hop_limit != 255 || length < 8 || message[0] != ND_ROUTER_SOLICIT || message[1] != 0)
        return std::nullopt;
    RouterSolicitation rs{source, std::nullopt};
    const bool unspecified = source == bpfnet_ip{};
    for (size_t at = 8; at < length;) {
        if (length - at < 2 || message[at + 1] == 0 || length - at < 8u * message[at + 1])
            return std::nullopt;
        if (message[at] == ND_OPT_SOURCE_LINKADDR) {
            if (unspecified)
                return std::nullopt;
            if (message[at + 1] == 1) {
                std::array<uint8_t, 6> mac{};
                std::memcpy(mac.data(), message + at + 2, mac.size());
                rs.link_layer = mac;
            }
        }
        at += 8u * message[at + 1];
    }
    return rs;
}

RouterSolicitations::RouterSolicitations(const std::string &interface)
    : fd_(socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_ICMPV6)) {
    const std::string context = "RouterSolicitations on " + interface;
    if (!fd_.valid())
        throw_errno(context + ": socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6)");
    icmp6_filter filter{};
    ICMP6_FILTER_SETBLOCKALL(&filter);
    ICMP6_FILTER_SETPASS(ND_ROUTER_SOLICIT, &filter);
    if (setsockopt(fd_.get(), IPPROTO_ICMPV6, ICMP6_FILTER, &filter, sizeof(filter)) < 0)
        throw_errno(context + ": ICMP6_FILTER");
    // The hop limit comes with each message: a solicitation that crossed a router is not the LAN's.
    const int on = 1;
    if (setsockopt(fd_.get(), IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &on, sizeof(on)) < 0)
        throw_errno(context + ": IPV6_RECVHOPLIMIT");
    if (setsockopt(fd_.get(), SOL_SOCKET, SO_BINDTODEVICE, interface.c_str(),
                   static_cast<socklen_t>(interface.size())) < 0)
        throw_errno(context + ": SO_BINDTODEVICE");
}

std::vector<RouterSolicitation> RouterSolicitations::drain() {
    std::vector<RouterSolicitation> solicitations;
    uint8_t message[1500];
    alignas(cmsghdr) uint8_t control[CMSG_SPACE(sizeof(int))];
    for (;;) {
        sockaddr_in6 from{};
        iovec iov{message, sizeof(message)};
        msghdr msg{};
        msg.msg_name = &from;
        msg.msg_namelen = sizeof(from);
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof(control);
        const ssize_t got = recvmsg(fd_.get(), &msg, 0);
        if (got < 0)
            return solicitations; // EAGAIN: nothing more queued
        int hop_limit = -1;
        for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
            if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT)
                std::memcpy(&hop_limit, CMSG_DATA(c), sizeof(hop_limit));
        bpfnet_ip source{};
        std::memcpy(&source, &from.sin6_addr, sizeof(source));
        // The kernel checked the ICMPv6 checksum; the raw socket gives the message without the IPv6 header.
        if (auto rs = parse_router_solicitation(message, static_cast<size_t>(got), source, hop_limit))
            solicitations.push_back(*rs);
    }
}

} // namespace bpfnet
