#include "core/link_watch.hpp"

#include "core/log.hpp"
#include "core/netlink.hpp"

#include "maps/system_error.hpp"

#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>

namespace bpfnet {
namespace {

UniqueFd link_notifications(bool addresses) {
    UniqueFd socket(::socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE));
    if (!socket.valid())
        throw_errno("socket(NETLINK_ROUTE) for link notifications");
    sockaddr_nl address{};
    address.nl_family = AF_NETLINK;
    address.nl_groups = RTMGRP_LINK | (addresses ? RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR : 0u);
    if (::bind(socket.get(), reinterpret_cast<const sockaddr *>(&address), sizeof(address)) != 0)
        throw_errno("bind(NETLINK_ROUTE, RTMGRP_LINK)");
    return socket;
}

bool is_address_change(const nlmsghdr &message) {
    return message.nlmsg_type == RTM_NEWADDR || message.nlmsg_type == RTM_DELADDR;
}

} // namespace

std::optional<LinkChange> link_change_of(const nlmsghdr &message) {
    if ((message.nlmsg_type != RTM_NEWLINK && message.nlmsg_type != RTM_DELLINK) ||
        message.nlmsg_len < NLMSG_LENGTH(sizeof(ifinfomsg)))
        return std::nullopt;
    const auto &link = *static_cast<const ifinfomsg *>(NLMSG_DATA(&message));
    const bool gone = message.nlmsg_type == RTM_DELLINK;
    return LinkChange{.ifindex = link.ifi_index, .gone = gone, .carrier = !gone && has_carrier(link.ifi_flags)};
}

LinkWatch::LinkWatch(int nic_ifindex, bool addresses)
    : nic_ifindex_(nic_ifindex), socket_(link_notifications(addresses)) {
    carrier_ = link_by_index(nic_ifindex_).carrier;
}

LinkWatch::Changes LinkWatch::update() {
    const bool before = carrier_;
    Changes changes;
    alignas(nlmsghdr) std::array<char, 16384> buffer{};
    for (;;) {
        ssize_t received = ::recv(socket_.get(), buffer.data(), buffer.size(), 0);
        if (received < 0 && errno == EINTR)
            continue;
        if (received < 0 && errno == ENOBUFS) { // notifications were dropped: ask for the state instead
            carrier_ = link_by_index(nic_ifindex_).carrier;
            changes.addresses_changed = true;
            continue;
        }
        if (received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (received <= 0)
            throw_errno("recv(link notifications)");
        auto remaining = static_cast<unsigned>(received);
        for (auto *message = reinterpret_cast<const nlmsghdr *>(buffer.data()); NLMSG_OK(message, remaining);
             message = NLMSG_NEXT(message, remaining)) {
            if (is_address_change(*message))
                changes.addresses_changed = true;
            auto change = link_change_of(*message);
            if (!change)
                continue;
            if (change->ifindex == nic_ifindex_)
                carrier_ = change->carrier;
            if (!change->carrier)
                changes.lost.insert(change->ifindex);
        }
    }
    changes.carrier_changed = carrier_ != before;
    return changes;
}

void report_carrier(LoaderStatus &status, const std::string &interface, bool carrier, std::string_view on_loss,
                    bool initial) {
    status.set_nic_carrier(interface, carrier);
    if (!carrier)
        log_warn("the provisioning NIC has no carrier", {{"iface", interface}, {"consequence", std::string(on_loss)}});
    else if (!initial)
        log_info("the provisioning NIC has carrier again", {{"iface", interface}});
}

} // namespace bpfnet
