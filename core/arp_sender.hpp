// Sends hand-built ARP requests out of one interface: gratuitous announcements when this node takes over a
// service IP, and who-has requests when the datapath misses a neighbour.
#pragma once

#include <array>
#include <cstdint>

namespace bpfnet {

class ArpSender {
public:
    // Throws bpfnet::SystemError if the socket cannot be opened or ifindex does not exist.
    explicit ArpSender(int ifindex);
    ~ArpSender();
    ArpSender(const ArpSender &) = delete;
    ArpSender &operator=(const ArpSender &) = delete;
    ArpSender(ArpSender &&other) noexcept;
    ArpSender &operator=(ArpSender &&other) noexcept;

    // RFC 5227 announcement: a broadcast request with sender and target address both ip_be, so every
    // neighbour that caches ip_be updates it to mac.
    void send_gratuitous(uint32_t ip_be, const std::array<uint8_t, 6> &mac);

    // Broadcast "who-has target_ip_be tell sender_ip_be"; the owner answers to sender_mac.
    void send_request(uint32_t sender_ip_be, const std::array<uint8_t, 6> &sender_mac, uint32_t target_ip_be);

private:
    int fd_;
    int ifindex_;
};

} // namespace bpfnet
