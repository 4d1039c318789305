// The links the loader depends on, followed from the kernel's link notifications (RTMGRP_LINK): whether the
// provisioning NIC has carrier (a cable pulled, a switch port down, the peer of a veth gone), and which links
// lost theirs or went away (a pod's veth, when its pod is deleted). A node whose NIC has no carrier reaches no host on
// the LAN, so it must not keep claiming the service IPs: Kubernetes mode stops holding their Leases, so another node
// takes them over at once; both modes report it (logs, /readyz, bpfnetctl status). In Kubernetes mode a pod whose veth
// goes is stopped being steered to at the notification, not when the API server gets to say so.
#pragma once

#include "core/loader_status.hpp"
#include "maps/unique_fd.hpp"

#include <cstddef>
#include <linux/netlink.h>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace bpfnet {

// What one link notification says about the link it names.
struct LinkChange {
    int ifindex = 0;
    bool gone = false;    // RTM_DELLINK: the link was deleted
    bool carrier = false; // up (IFF_UP) and with carrier (IFF_LOWER_UP); false for a link that is gone
};

// The change an RTM_NEWLINK or RTM_DELLINK message announces; nullopt for any other message or a short one.
std::optional<LinkChange> link_change_of(const nlmsghdr &message);

class LinkWatch {
public:
    // Subscribes to the link notifications first (addresses: the address notifications too), then reads the
    // NIC's state, so no change between the two is missed. Throws SystemError when netlink cannot be opened or
    // the NIC does not exist.
    explicit LinkWatch(int nic_ifindex, bool addresses = false);

    int fd() const { return socket_.get(); }
    bool carrier() const { return carrier_; }

    // What the notifications waiting on fd() said: whether the NIC's carrier changed, and the links that lost
    // carrier or were deleted (a deleted veth first goes down, in a notification of its own). Notifications
    // lost to a full socket buffer (ENOBUFS) are made up for by reading the NIC again (a link lost meanwhile is
    // then found by the next reconcile, as without this watch).
    struct Changes {
        bool carrier_changed = false;
        std::set<int> lost;
        // An address was added or removed anywhere in the namespace (or notifications were lost): the shared
        // addresses the node holds may have changed (standalone mode's sharedAddresses).
        bool addresses_changed = false;
    };
    Changes update();

private:
    int nic_ifindex_;
    UniqueFd socket_;
    bool carrier_ = false;
};

// Tells the status (/readyz, /metrics) the NIC's carrier and logs a change: a loss as a warning (a cable, a
// switch port, a peer to look at), with what the mode does about it (on_loss); the return as info.
// initial: the state found at start, logged only when it is a loss.
void report_carrier(LoaderStatus &status, const std::string &interface, bool carrier, std::string_view on_loss,
                    bool initial = false);

} // namespace bpfnet
