#include "core/netlink.hpp"

#include "core/addresses.hpp"

#include "maps/system_error.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <net/if.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

namespace bpfnet {
namespace {

// Large enough for any single link, route or neighbour message; libmnl reports ENOSPC rather than
// silently truncating if one ever is not.
constexpr size_t kReceiveBufferSize = 32 * 1024;

// linux/if.h's IFF_LOWER_UP (the driver's carrier), which glibc's net/if.h does not define.
constexpr unsigned kLowerUp = 1U << 16;

// The attributes of a message or nest indexed by type, each validated on access, so a short or malformed
// attribute reads as absent instead of being read past its end.
template <uint16_t MaxType>
class Attributes {
public:
    Attributes(const nlmsghdr &message, size_t family_header_size) {
        mnl_attr_parse(&message, static_cast<unsigned>(family_header_size), collect, this);
    }
    explicit Attributes(const nlattr &nest) { mnl_attr_parse_nested(&nest, collect, this); }

    std::optional<uint32_t> u32(uint16_t type) const {
        if (!valid(type, MNL_TYPE_U32))
            return std::nullopt;
        return mnl_attr_get_u32(table_[type]);
    }
    std::optional<int32_t> s32(uint16_t type) const {
        if (auto value = u32(type))
            return static_cast<int32_t>(*value);
        return std::nullopt;
    }
    std::optional<std::string> string(uint16_t type) const {
        if (!valid(type, MNL_TYPE_NUL_STRING))
            return std::nullopt;
        return std::string(mnl_attr_get_str(table_[type]));
    }
    std::span<const uint8_t> bytes(uint16_t type) const {
        if (type > MaxType || table_[type] == nullptr)
            return {};
        return {static_cast<const uint8_t *>(mnl_attr_get_payload(table_[type])),
                mnl_attr_get_payload_len(table_[type])};
    }
    const nlattr *nest(uint16_t type) const { return valid(type, MNL_TYPE_NESTED) ? table_[type] : nullptr; }

private:
    static int collect(const nlattr *attribute, void *data) {
        auto &self = *static_cast<Attributes *>(data);
        uint16_t type = mnl_attr_get_type(attribute);
        if (type <= MaxType) // newer kernels may send types this build does not know: skip them
            self.table_[type] = attribute;
        return MNL_CB_OK;
    }
    bool valid(uint16_t type, mnl_attr_data_type data_type) const {
        return type <= MaxType && table_[type] != nullptr && mnl_attr_validate(table_[type], data_type) >= 0;
    }

    std::array<const nlattr *, MaxType + 1> table_{};
};

// One request message: the netlink header, the family header (ifinfomsg, rtmsg, ndmsg) and attributes.
class Request {
public:
    // The ack is what tells a query its reply is complete, and it carries the errno when there is none; a
    // dump ends with NLMSG_DONE instead.
    explicit Request(uint16_t type, uint16_t flags = NLM_F_ACK) : header_(mnl_nlmsg_put_header(buffer_.data())) {
        header_->nlmsg_type = type;
        header_->nlmsg_flags = NLM_F_REQUEST | flags;
    }
    Request(const Request &) = delete;
    Request &operator=(const Request &) = delete;

    template <typename FamilyHeader>
    FamilyHeader &put_family_header() {
        return *static_cast<FamilyHeader *>(mnl_nlmsg_put_extra_header(header_, sizeof(FamilyHeader)));
    }
    nlmsghdr *header() { return header_; }

private:
    // Requests hold one family header and at most an interface name plus an address or two.
    alignas(nlmsghdr) std::array<char, 256> buffer_{};
    nlmsghdr *header_;
};

// A NETLINK_ROUTE socket used for exactly one request, so every message it receives answers that request
// and sequence numbers need no checking.
class RouteSocket {
public:
    explicit RouteSocket(const std::string &context) : socket_(mnl_socket_open(NETLINK_ROUTE)) {
        if (socket_ == nullptr)
            throw_errno(context + ": socket(NETLINK_ROUTE)");
        if (mnl_socket_bind(socket_, 0, MNL_SOCKET_AUTOPID) < 0) {
            int err = errno;
            mnl_socket_close(socket_);
            throw SystemError(context + ": bind(NETLINK_ROUTE)", err);
        }
        // Extended acks add the kernel's own reason to an errno ("Unsupported attribute ..."). Kernels
        // without them send plain acks, so a failure to enable them changes nothing else.
        int enable = 1;
        mnl_socket_setsockopt(socket_, NETLINK_EXT_ACK, &enable, sizeof(enable));
    }
    ~RouteSocket() { mnl_socket_close(socket_); }

    // Asks the kernel to check a dump request's header and attributes strictly (kernel >= 4.20): it is how
    // the address dumps honour IFA_TARGET_NETNSID. A kernel without it would ignore the attribute and dump
    // our own namespace, which the replies' IFA_TARGET_NETNSID tells apart (addresses_in_namespace).
    void check_strictly() {
        int enable = 1;
        mnl_socket_setsockopt(socket_, NETLINK_GET_STRICT_CHK, &enable, sizeof(enable));
    }
    RouteSocket(const RouteSocket &) = delete;
    RouteSocket &operator=(const RouteSocket &) = delete;

    // Sends `request` and returns the one message of `reply_type` the kernel answers with, copied out of
    // the receive buffer. A kernel error (the errno in the ack) is thrown.
    std::vector<char> query(Request &request, uint16_t reply_type, const std::string &context) {
        std::vector<char> reply;
        exchange(request, context, [&](const nlmsghdr &message) {
            if (message.nlmsg_type == NLMSG_ERROR) {
                throw_if_error(message, context);
                if (reply.empty())
                    throw SystemError(context + ": acknowledged without a reply", ENODATA);
                return true;
            }
            if (message.nlmsg_type == reply_type) {
                const char *bytes = reinterpret_cast<const char *>(&message);
                reply.assign(bytes, bytes + message.nlmsg_len);
            }
            return false;
        });
        return reply;
    }

    // Sends a dump `request` (NLM_F_DUMP) and calls on_message with each message of `reply_type` until the
    // kernel's NLMSG_DONE. A kernel error is thrown.
    template <typename OnMessage>
    void dump(Request &request, uint16_t reply_type, const std::string &context, const OnMessage &on_message) {
        exchange(request, context, [&](const nlmsghdr &message) {
            if (message.nlmsg_type == NLMSG_DONE)
                return true;
            if (message.nlmsg_type == NLMSG_ERROR) {
                throw_if_error(message, context);
                return true;
            }
            if (message.nlmsg_type == reply_type)
                on_message(message);
            return false;
        });
    }

private:
    // Sends `request`, then hands each message the kernel answers with to `handle` until it returns true.
    template <typename Handle>
    void exchange(Request &request, const std::string &context, const Handle &handle) {
        if (mnl_socket_sendto(socket_, request.header(), request.header()->nlmsg_len) < 0)
            throw_errno(context);
        std::vector<char> buffer(kReceiveBufferSize);
        for (;;) {
            ssize_t received = mnl_socket_recvfrom(socket_, buffer.data(), buffer.size());
            if (received < 0)
                throw_errno(context);
            int remaining = static_cast<int>(received);
            for (auto *message = reinterpret_cast<const nlmsghdr *>(buffer.data()); mnl_nlmsg_ok(message, remaining);
                 message = mnl_nlmsg_next(message, &remaining))
                if (handle(*message))
                    return;
        }
    }

    static void throw_if_error(const nlmsghdr &message, const std::string &context) {
        if (message.nlmsg_len < mnl_nlmsg_size(sizeof(nlmsgerr)))
            throw SystemError(context + ": truncated netlink error", EBADMSG);
        const auto &error = *static_cast<const nlmsgerr *>(mnl_nlmsg_get_payload(&message));
        if (error.error != 0)
            throw SystemError(context + kernel_reason(message, error), -error.error);
    }

    // The NLMSGERR_ATTR_MSG text of an extended ack, if any. Its attributes follow the echoed request,
    // which the kernel shortens to the bare header when it sets NLM_F_CAPPED.
    static std::string kernel_reason(const nlmsghdr &message, const nlmsgerr &error) {
        if ((message.nlmsg_flags & NLM_F_ACK_TLVS) == 0)
            return {};
        size_t offset = sizeof(nlmsgerr);
        if ((message.nlmsg_flags & NLM_F_CAPPED) == 0)
            offset += error.msg.nlmsg_len - sizeof(nlmsghdr);
        auto reason = Attributes<NLMSGERR_ATTR_MAX>(message, offset).string(NLMSGERR_ATTR_MSG);
        return reason ? " (" + *reason + ")" : std::string();
    }

    mnl_socket *socket_;
};

const nlmsghdr &as_message(const std::vector<char> &bytes) {
    return *reinterpret_cast<const nlmsghdr *>(bytes.data());
}

std::optional<MacAddress> as_mac(std::span<const uint8_t> bytes) {
    MacAddress mac{};
    if (bytes.size() != mac.size())
        return std::nullopt;
    std::ranges::copy(bytes, mac.begin());
    return mac;
}

std::string link_kind(const Attributes<IFLA_MAX> &attributes) {
    const nlattr *link_info = attributes.nest(IFLA_LINKINFO);
    if (link_info == nullptr)
        return {};
    return std::string(Attributes<IFLA_INFO_MAX>(*link_info).string(IFLA_INFO_KIND).value_or(""));
}

// A parsed RTM_NEWLINK, plus the namespace id the kernel echoes when it answered for another namespace.
struct LinkReply {
    LinkInfo link;
    std::optional<int32_t> target_netnsid;
};

LinkReply parse_link(const nlmsghdr &message) {
    const auto &ifi = *static_cast<const ifinfomsg *>(mnl_nlmsg_get_payload(&message));
    Attributes<IFLA_MAX> attributes(message, sizeof(ifinfomsg));
    std::string kind = link_kind(attributes);
    bool is_veth = kind == "veth";
    // For a veth, IFLA_LINK is the peer's ifindex, and IFLA_LINK_NETNSID appears only when the peer lives in
    // another namespace (the kernel allocates an id for it on the spot if there was none).
    return LinkReply{
        .link = {.ifindex = ifi.ifi_index,
                 .name = attributes.string(IFLA_IFNAME).value_or(""),
                 .mac = as_mac(attributes.bytes(IFLA_ADDRESS)).value_or(MacAddress{}),
                 .is_veth = is_veth,
                 .peer_ifindex = is_veth ? attributes.s32(IFLA_LINK).value_or(-1) : -1,
                 .peer_netnsid = is_veth ? attributes.s32(IFLA_LINK_NETNSID).value_or(-1) : -1,
                 .up = (ifi.ifi_flags & IFF_UP) != 0,
                 .carrier = has_carrier(ifi.ifi_flags),
                 .mtu = attributes.u32(IFLA_MTU).value_or(0),
                 .kind = kind},
        .target_netnsid = attributes.s32(IFLA_TARGET_NETNSID),
    };
}

LinkReply query_link(Request &request, const std::string &context) {
    return parse_link(as_message(RouteSocket(context).query(request, RTM_NEWLINK, context)));
}

void put_link_header(Request &request, int ifindex) {
    auto &ifi = request.put_family_header<ifinfomsg>();
    ifi.ifi_family = AF_UNSPEC;
    ifi.ifi_index = ifindex;
}

// Runs `query`, turning the one errno that means "not there" into nullopt.
template <typename Query>
auto unless_absent(std::errc absent, const Query &query) -> std::optional<decltype(query())> {
    try {
        return query();
    } catch (const SystemError &error) {
        if (error.code() == absent)
            return std::nullopt;
        throw;
    }
}

} // namespace

bool has_carrier(unsigned link_flags) {
    return (link_flags & IFF_UP) != 0 && (link_flags & kLowerUp) != 0;
}

LinkInfo link_by_name(const std::string &name) {
    std::string context = "RTM_GETLINK " + name;
    // The kernel caps IFLA_IFNAME at IFNAMSIZ - 1 anyway; checking here keeps the request buffer bounded.
    if (name.size() >= IFNAMSIZ)
        throw SystemError(context, ENAMETOOLONG);
    Request request(RTM_GETLINK);
    put_link_header(request, 0); // ifindex 0: the kernel looks the link up by IFLA_IFNAME
    mnl_attr_put_strz(request.header(), IFLA_IFNAME, name.c_str());
    return query_link(request, context).link;
}

std::string interface_name(int ifindex) {
    char name[IF_NAMESIZE] = {};
    return if_indextoname(static_cast<unsigned>(ifindex), name) ? name : "";
}

LinkInfo link_by_index(int ifindex) {
    Request request(RTM_GETLINK);
    put_link_header(request, ifindex);
    return query_link(request, "RTM_GETLINK ifindex " + std::to_string(ifindex)).link;
}

std::optional<bpfnet_ip> link_local_address(const std::string &interface) {
    ifaddrs *all = nullptr;
    if (getifaddrs(&all) < 0)
        return std::nullopt;
    std::optional<bpfnet_ip> found;
    for (const ifaddrs *a = all; a && !found; a = a->ifa_next) {
        if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET6 || interface != a->ifa_name)
            continue;
        const auto *sin6 = reinterpret_cast<const sockaddr_in6 *>(a->ifa_addr);
        if (IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr)) {
            bpfnet_ip ip{};
            std::memcpy(&ip, &sin6->sin6_addr, sizeof(ip));
            found = ip;
        }
    }
    freeifaddrs(all);
    return found;
}

std::optional<MacAddress> peer_mac(const LinkInfo &veth) {
    if (!veth.is_veth)
        return std::nullopt;
    std::string context = "RTM_GETLINK peer ifindex " + std::to_string(veth.peer_ifindex) + " of " + veth.name;
    Request request(RTM_GETLINK);
    put_link_header(request, veth.peer_ifindex);
    bool other_netns = veth.peer_netnsid >= 0;
    if (other_netns) {
        context += " in netnsid " + std::to_string(veth.peer_netnsid);
        mnl_attr_put_u32(request.header(), IFLA_TARGET_NETNSID, static_cast<uint32_t>(veth.peer_netnsid));
    }
    // ENODEV: the pair was deleted since `veth` was read.
    auto reply = unless_absent(std::errc::no_such_device, [&] { return query_link(request, context); });
    if (!reply)
        return std::nullopt;
    // A kernel that does not know IFLA_TARGET_NETNSID ignores it and answers with whatever link has that
    // ifindex in our own namespace; only a reply that echoes the id really comes from the peer's namespace.
    if (other_netns && reply->target_netnsid != veth.peer_netnsid)
        throw SystemError(context + ": kernel ignored IFLA_TARGET_NETNSID", EOPNOTSUPP);
    if (reply->link.mac == MacAddress{})
        return std::nullopt;
    return reply->link.mac;
}

std::vector<LinkInfo> all_links() {
    const std::string context = "RTM_GETLINK dump";
    Request request(RTM_GETLINK, NLM_F_DUMP);
    put_link_header(request, 0);
    std::vector<LinkInfo> links;
    RouteSocket(context).dump(request, RTM_NEWLINK, context,
                              [&](const nlmsghdr &message) { links.push_back(parse_link(message).link); });
    return links;
}

namespace {

// An RTM_GETADDR dump of one family, of this namespace (netnsid nullopt) or of the one this namespace calls
// netnsid (IFA_TARGET_NETNSID, kernel >= 4.20).
std::vector<InterfaceAddress> dump_addresses(std::optional<int> netnsid, bool ipv6) {
    const std::string context = std::string("RTM_GETADDR dump (") + (ipv6 ? "IPv6" : "IPv4") + ")" +
                                (netnsid ? " in netnsid " + std::to_string(*netnsid) : "");
    Request request(RTM_GETADDR, NLM_F_DUMP);
    auto &ifa = request.put_family_header<ifaddrmsg>();
    ifa.ifa_family = ipv6 ? AF_INET6 : AF_INET;
    if (netnsid)
        mnl_attr_put_u32(request.header(), IFA_TARGET_NETNSID, static_cast<uint32_t>(*netnsid));
    RouteSocket socket(context);
    if (netnsid)
        socket.check_strictly();
    std::vector<InterfaceAddress> addresses;
    socket.dump(request, RTM_NEWADDR, context, [&](const nlmsghdr &message) {
        const auto &reply = *static_cast<const ifaddrmsg *>(mnl_nlmsg_get_payload(&message));
        Attributes<IFA_MAX> attributes(message, sizeof(ifaddrmsg));
        // As for peer_mac: only a reply that echoes the id comes from the other namespace.
        if (netnsid && attributes.s32(IFA_TARGET_NETNSID) != *netnsid)
            throw SystemError(context + ": kernel ignored IFA_TARGET_NETNSID", EOPNOTSUPP);
        // IPv4's own address is IFA_LOCAL (IFA_ADDRESS is the far end of a point-to-point link); IPv6 has only
        // IFA_ADDRESS unless point-to-point.
        auto bytes = attributes.bytes(ipv6 ? IFA_ADDRESS : IFA_LOCAL);
        if (bytes.empty())
            bytes = attributes.bytes(IFA_ADDRESS);
        InterfaceAddress address{static_cast<int>(reply.ifa_index), bpfnet_ip{}};
        address.prefix_len = reply.ifa_prefixlen;
        address.secondary = (reply.ifa_flags & IFA_F_SECONDARY) != 0;
        address.tentative = (reply.ifa_flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED)) != 0;
        if (reply.ifa_family == AF_INET && bytes.size() == 4) {
            uint32_t ip_be = 0;
            std::memcpy(&ip_be, bytes.data(), sizeof(ip_be));
            address.ip = ip_from_v4(ip_be);
            addresses.push_back(address);
        } else if (reply.ifa_family == AF_INET6 && bytes.size() == sizeof(bpfnet_ip)) {
            std::memcpy(&address.ip, bytes.data(), sizeof(address.ip));
            addresses.push_back(address);
        }
    });
    return addresses;
}

} // namespace

std::vector<InterfaceAddress> addresses_in_namespace(int netnsid, bool ipv6) {
    return dump_addresses(netnsid, ipv6);
}

std::vector<InterfaceAddress> local_addresses(bool ipv6) {
    return dump_addresses(std::nullopt, ipv6);
}

int route_oif(uint32_t dst_be) {
    return route_oif(ip_from_v4(dst_be));
}

int route_oif(const bpfnet_ip &dst) {
    std::string context = "RTM_GETROUTE " + format_ip(dst);
    Request request(RTM_GETROUTE);
    auto &rtm = request.put_family_header<rtmsg>();
    rtm.rtm_family = is_v4(dst) ? AF_INET : AF_INET6;
    rtm.rtm_dst_len = is_v4(dst) ? 32 : 128;
    if (is_v4(dst))
        mnl_attr_put_u32(request.header(), RTA_DST, v4_of(dst));
    else
        mnl_attr_put(request.header(), RTA_DST, sizeof(dst), &dst);
    // Unreachable, blackhole and prohibit routes make the kernel answer with an error, which query() throws.
    auto reply = RouteSocket(context).query(request, RTM_NEWROUTE, context);
    auto oif = Attributes<RTA_MAX>(as_message(reply), sizeof(rtmsg)).u32(RTA_OIF);
    if (!oif)
        throw SystemError(context + ": route has no output interface", EHOSTUNREACH);
    return static_cast<int>(*oif);
}

std::optional<MacAddress> neighbour_mac(int ifindex, uint32_t ip_be) {
    return neighbour_mac(ifindex, ip_from_v4(ip_be));
}

std::optional<MacAddress> neighbour_mac(int ifindex, const bpfnet_ip &ip) {
    std::string context = "RTM_GETNEIGH " + format_ip(ip) + " on ifindex " + std::to_string(ifindex);
    // A single-entry get (kernel >= 5.0) rather than a dump: the kernel does the lookup by (ifindex, address).
    Request request(RTM_GETNEIGH);
    auto &ndm = request.put_family_header<ndmsg>();
    ndm.ndm_family = is_v4(ip) ? AF_INET : AF_INET6;
    ndm.ndm_ifindex = ifindex;
    if (is_v4(ip))
        mnl_attr_put_u32(request.header(), NDA_DST, v4_of(ip));
    else
        mnl_attr_put(request.header(), NDA_DST, sizeof(ip), &ip);
    // ENOENT is the kernel's answer for "no entry".
    auto reply = unless_absent(std::errc::no_such_file_or_directory,
                               [&] { return RouteSocket(context).query(request, RTM_NEWNEIGH, context); });
    if (!reply)
        return std::nullopt;
    const nlmsghdr &message = as_message(*reply);
    // DELAY and PROBE are stale entries being reconfirmed: their address is still the last one confirmed.
    // INCOMPLETE and FAILED have no usable address; NOARP entries are not learned from the wire.
    constexpr uint16_t kUsableStates = NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT;
    if ((static_cast<const ndmsg *>(mnl_nlmsg_get_payload(&message))->ndm_state & kUsableStates) == 0)
        return std::nullopt;
    return as_mac(Attributes<NDA_MAX>(message, sizeof(ndmsg)).bytes(NDA_LLADDR));
}

} // namespace bpfnet
