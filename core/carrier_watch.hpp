// Whether the provisioning NIC has carrier, followed from the kernel's link notifications (RTMGRP_LINK):
// a cable pulled, a switch port down, the peer of a veth gone. A node whose NIC has no carrier reaches no
// host on the LAN, so it must not keep claiming the service IPs: Kubernetes mode stops holding their Leases,
// so another node takes them over at once; both modes report it (logs, /readyz, bpfnetctl status).
#pragma once

#include "core/loader_status.hpp"
#include "maps/unique_fd.hpp"

#include <cstddef>
#include <linux/netlink.h>
#include <optional>
#include <string>
#include <string_view>

namespace bpfnet {

// What one link notification says about the link it names.
struct LinkChange {
    int ifindex = 0;
    bool carrier = false; // up (IFF_UP) and with carrier (IFF_LOWER_UP); false for a link that is gone
};

// The change an RTM_NEWLINK or RTM_DELLINK message announces; nullopt for any other message or a short one.
std::optional<LinkChange> link_change_of(const nlmsghdr &message);

class CarrierWatch {
public:
    // Subscribes to the link notifications first, then reads the link's state, so no change between the two
    // is missed. Throws SystemError when netlink cannot be opened or the link does not exist.
    explicit CarrierWatch(int ifindex);

    int fd() const { return socket_.get(); }
    bool carrier() const { return carrier_; }
    // Reads every notification waiting on fd(); true when the link's carrier changed. Notifications lost to a
    // full socket buffer (ENOBUFS) are made up for by reading the link's state again.
    bool update();

private:
    int ifindex_;
    UniqueFd socket_;
    bool carrier_ = false;
};

// Tells the status (/readyz, /metrics) the NIC's carrier and logs a change: a loss as a warning (a cable, a
// switch port, a peer to look at), with what the mode does about it (on_loss); the return as info.
// initial: the state found at start, logged only when it is a loss.
void report_carrier(LoaderStatus &status, const std::string &interface, bool carrier, std::string_view on_loss,
                    bool initial = false);

} // namespace bpfnet
