#include "cli/commands_status.hpp"

#include "cli/commands.hpp"
#include "core/control_socket.hpp"
#include "core/monotonic_clock.hpp"
#include "core/ndp_sender.hpp"
#include "core/netlink.hpp"
#include "maps/layout.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace bpfnet::cli {

namespace {

double seconds_since(__u64 then_ns, __u64 now_ns) {
    // A stamp from "the future" (read racing a write) is 0 s old, not a huge unsigned age.
    return then_ns >= now_ns ? 0.0 : static_cast<double>(now_ns - then_ns) / 1e9;
}

bool by_address(const bpfnet_ip &a, const bpfnet_ip &b) {
    return a < b;
}

std::vector<ServiceIpStatus> read_service_ips(const DatapathMaps &maps) {
    std::vector<ServiceIpStatus> out;
    for (const auto &[ip, entry] : maps.service_ips.entries())
        out.push_back({ip, (entry.flags & BPFNET_SERVICE_IP_ACTIVE) != 0, std::nullopt});
    std::sort(out.begin(), out.end(), [](const auto &a, const auto &b) { return by_address(a.ip, b.ip); });
    return out;
}

// The interface of this namespace that holds ip; empty when none does.
std::string holder_of(const bpfnet_ip &ip) {
    try {
        for (const InterfaceAddress &address : local_addresses(!is_v4(ip)))
            if (address.ip == ip)
                return interface_name(static_cast<int>(address.ifindex));
    } catch (const std::exception &) {
    }
    return "";
}

// The shared addresses, from their listed ports' entries (they have no service_ips entry).
std::vector<SharedAddressStatus> read_shared_addresses(const DatapathMaps &maps) {
    std::map<bpfnet_ip, SharedAddressStatus> by_ip;
    for (const auto &[key, entry] : maps.services.entries()) {
        if (!(entry.flags & BPFNET_SERVICE_SHARED))
            continue;
        SharedAddressStatus &shared = by_ip[key.service_ip];
        shared.ip = key.service_ip;
        const bool via_node = (entry.flags & BPFNET_SERVICE_VIA_NODE) != 0;
        shared.ports.push_back({key.proto == BPFNET_PROTO_TCP   ? "tcp"
                                : key.proto == BPFNET_PROTO_UDP ? "udp"
                                                                : "?",
                                ntohs(key.port_be), entry.link.ifindex || via_node ? entry.backend_ip : bpfnet_ip{},
                                ntohs(entry.backend_port_be), via_node ? entry.via_node : bpfnet_ip{}});
    }
    std::vector<SharedAddressStatus> out;
    for (auto &[ip, shared] : by_ip) {
        std::sort(shared.ports.begin(), shared.ports.end(), [](const auto &a, const auto &b) {
            return std::tie(a.protocol, a.port) < std::tie(b.protocol, b.port);
        });
        shared.held_on = holder_of(ip);
        out.push_back(std::move(shared));
    }
    return out;
}

std::vector<BackendStatus> read_backends(const DatapathMaps &maps, const std::string &pin_dir, __u32 map_id) {
    std::vector<BackendStatus> out;
    for (const auto &[ip, entry] : maps.backends.entries())
        out.push_back({ip, entry.ifindex, interface_name(static_cast<int>(entry.ifindex)),
                       query_tc_ingress(static_cast<int>(entry.ifindex), pin_dir, map_id),
                       format_pod_delivery(entry.flags)});
    std::sort(out.begin(), out.end(), [](const auto &a, const auto &b) { return by_address(a.ip, b.ip); });
    return out;
}

std::vector<ConflictStatus> read_conflicts(const DatapathMaps &maps, __u64 now_ns) {
    std::vector<ConflictStatus> out;
    for (const auto &[ip, entry] : maps.conflicts.entries())
        out.push_back({ip, to_mac(entry.mac), seconds_since(entry.last_seen_ns, now_ns)});
    std::sort(out.begin(), out.end(),
              [](const auto &a, const auto &b) { return by_address(a.service_ip, b.service_ip); });
    return out;
}

std::string describe_hook(const HookState &hook) {
    if (!hook.attached)
        return "NOT ATTACHED";
    std::string text = hook.program + " (id " + std::to_string(hook.program_id) + ")";
    if (!hook.mode.empty())
        text += ", " + hook.mode;
    if (hook.dispatcher)
        text += *hook.dispatcher ? ", via libxdp dispatcher" : ", plain attach (no dispatcher)";
    if (!hook.attach.empty())
        text += hook.attach == "tcx" ? ", tcx link" : ", clsact filter";
    return text;
}

std::string describe_heartbeat(const StatusView &status) {
    std::string timeout = "timeout " + format_seconds(status.heartbeat_timeout_seconds);
    switch (status.heartbeat()) {
    case HeartbeatState::Never:
        return "never written (" + timeout + "): no ARP answers";
    case HeartbeatState::Stale:
        return "STALE: " + format_seconds(*status.heartbeat_age_seconds) + " ago (" + timeout +
               "): loader not running, no ARP answers";
    case HeartbeatState::Fresh:
        break;
    }
    return "fresh: " + format_seconds(*status.heartbeat_age_seconds) + " ago (" + timeout + ")";
}

std::string describe_service_ip(const StatusView &status, const ServiceIpStatus &ip) {
    std::string text = format_ip(ip.ip);
    const std::string protocol = is_v4(ip.ip) ? "ARP" : "NDP";
    std::string group;
    if (ip.solicited_node_member)
        group = *ip.solicited_node_member ? ", NIC in its solicited-node group"
                                          : ", NIC NOT in its solicited-node group (MLD-snooping switches may not "
                                            "deliver solicitations)";
    if (!ip.active)
        return text + ": inactive (not the owner here, or no backend; " + protocol +
               " requests for it dropped while the loader runs)" + group;
    text += ": active (owner)";
    return text +
           (status.answering_arp(ip) ? ", answering " + protocol
                                     : ", NOT answering " + protocol + " (heartbeat not fresh)") +
           group;
}

// How the serving loader found a backend's veth (its describe answer's backend_veths, as its log's found_by
// says it): "named in the config", "found by route" (the route to the pod names it), "found by namespace behind
// cni0" (the veth whose peer holds the pod's address, the route naming a bridge or another device of the
// CNI's); "" when no loader said.
std::string veth_found_by(const StatusView &status, const BackendStatus &backend) {
    if (!status.loader || !status.loader->contains("backend_veths"))
        return "";
    for (const Json &veth : (*status.loader)["backend_veths"]) {
        if (veth.value("ifindex", 0) != static_cast<int>(backend.ifindex))
            continue;
        const std::string found_by = veth.value("found_by", std::string());
        if (found_by == "named")
            return "named in the config";
        const bool behind = veth.contains("behind") && veth["behind"].is_string();
        return "found by " + found_by + (behind ? " behind " + veth["behind"].get<std::string>() : "");
    }
    return "";
}

// A backend's pod delivery (its backends entry's), in the words of the status table.
std::string describe_delivery(const std::string &delivery) {
    if (delivery == "route")
        return "delivered by the node's routing";
    if (delivery == "redirect_peer")
        return "delivered by bpf_redirect_peer";
    return "delivered through the veth";
}

std::string describe_backend(const StatusView &status, const BackendStatus &backend) {
    std::string text = format_ip(backend.ip) + " on " + (backend.veth.empty() ? "?" : backend.veth) + " (ifindex " +
                       std::to_string(backend.ifindex);
    if (const std::string found_by = veth_found_by(status, backend); !found_by.empty())
        text += ", " + found_by;
    text += "), " + describe_delivery(backend.delivery) + ", pod hook ";
    if (!backend.pod_hook.attached)
        return text + "NOT ATTACHED: replies cannot leave";
    return text + backend.pod_hook.program +
           (backend.pod_hook.attach.empty() ? "" : " (" + backend.pod_hook.attach + ")");
}

const char *heartbeat_name(HeartbeatState state) {
    switch (state) {
    case HeartbeatState::Fresh:
        return "fresh";
    case HeartbeatState::Stale:
        return "stale";
    case HeartbeatState::Never:
        break;
    }
    return "never";
}

Json optional_ip(__be32 ip_be) {
    return ip_be ? Json(format_ipv4(ip_be)) : Json(nullptr);
}

// The loader serving this datapath, as it describes itself on its control socket; status without a loader is
// still status (the datapath runs on without one until the heartbeat times out).
void describe_serving_loader(StatusView &status, const std::string &socket) {
    try {
        status.loader = call_loader(socket, {{"command", kDescribeCommand}}, std::chrono::seconds(2));
    } catch (const ControlFailure &e) { // a loader from before describe
        status.loader_problem = std::string("the loader does not describe itself: ") + e.what();
    } catch (const std::exception &e) {
        status.loader_problem = e.what();
    }
}

} // namespace

void run_status(Context &context) {
    DatapathMaps maps = context.open_datapath();
    StatusView status = read_status(maps, context.options.interface, context.options.pin_dir());
    describe_serving_loader(status, context.options.control_socket_path());
    if (context.json())
        print_json(context.out, status_json(status));
    else
        print_status_table(context.out, status);
}

HeartbeatState StatusView::heartbeat() const {
    if (!heartbeat_age_seconds)
        return HeartbeatState::Never;
    return *heartbeat_age_seconds <= heartbeat_timeout_seconds ? HeartbeatState::Fresh : HeartbeatState::Stale;
}

std::string StatusView::subnet_text() const {
    if (subnet_be == 0xffffffff && subnet_mask_be == 0)
        return "none";
    return format_prefix(subnet_be, subnet_mask_be);
}

StatusView read_status(const DatapathMaps &maps, const std::string &interface, const std::string &pin_dir) {
    const __u64 now = monotonic_ns();
    const bpfnet_iface iface = maps.iface.lookup(0).value_or(bpfnet_iface{});
    const __u32 map_id = map_id_of(maps.iface.fd());
    StatusView status;
    status.interface = interface;
    status.ifindex = iface.nic_ifindex;
    status.nic_mac = to_mac(iface.nic_mac);
    try {
        status.carrier = link_by_index(static_cast<int>(iface.nic_ifindex)).carrier;
    } catch (const std::exception &) {
        status.carrier = std::nullopt; // the NIC is gone, or in another namespace than bpfnetctl's
    }
    // The IPv4 subnet's last word: its net and mask as an IPv4 subnet; none reads 255.255.255.255/0.
    status.subnet_be = iface.subnet.len != 0 ? iface.subnet.net.w[3] : 0xffffffff;
    status.subnet_mask_be = iface.subnet.mask.w[3];
    status.dhcp_service_ip_be = v4_of(iface.dhcp_service_ip);
    status.dhcp6_service_ip = iface.dhcp6_service_ip;
    status.subnet6 = iface.subnet6.net;
    status.subnet6_prefix_len = static_cast<__u8>(iface.subnet6.len);
    if (iface.nic_ifindex) {
        status.xdp = query_xdp(static_cast<int>(iface.nic_ifindex), map_id);
        status.tc_ingress = query_tc_ingress(static_cast<int>(iface.nic_ifindex), pin_dir, map_id);
    }
    status.redirect_peer = (iface.hooks & BPFNET_HOOKS_REDIRECT_PEER) != 0;
    auto heartbeat = maps.heartbeat.lookup(0);
    if (heartbeat && heartbeat->monotonic_ns)
        status.heartbeat_age_seconds = seconds_since(heartbeat->monotonic_ns, now);
    status.heartbeat_timeout_seconds = static_cast<double>(iface.heartbeat_timeout_ns) / 1e9;
    status.service_ips = read_service_ips(maps);
    status.shared_addresses = read_shared_addresses(maps);
    const std::vector<bpfnet_ip> groups = ipv6_groups_of(static_cast<int>(iface.nic_ifindex));
    for (ServiceIpStatus &ip : status.service_ips)
        if (!is_v4(ip.ip))
            ip.solicited_node_member =
                std::find(groups.begin(), groups.end(), solicited_node_group(ip.ip)) != groups.end();
    status.dhcp6_group_member =
        std::find(groups.begin(), groups.end(), all_dhcp_relay_agents_and_servers()) != groups.end();
    status.backends = read_backends(maps, pin_dir, map_id);
    status.conflicts_seen = maps.counters.sum(BPFNET_CTR_ARP_CONFLICT);
    status.conflicts = read_conflicts(maps, now);
    return status;
}

// Whether a port of the shared address is steered to a pod on this node.
bool pod_here(const SharedAddressStatus &shared) {
    return std::any_of(shared.ports.begin(), shared.ports.end(), [](const SharedPortStatus &port) {
        return port.backend_ip != bpfnet_ip{} && port.via_node == bpfnet_ip{};
    });
}

// "198.18.0.5: the node's (held on prov0; its ARP and other ports stay the node's), steered: tcp/6385 to
// 10.244.1.7:6385, ..."
std::string describe_shared_address(const SharedAddressStatus &shared) {
    std::string text = format_ip(shared.ip) + ": the node's, " +
                       (!shared.held_on.empty() ? "held on " + shared.held_on
                        : pod_here(shared)      ? std::string("held by no interface here (its listed ports still "
                                                                   "reach the pod here: a node holding it may hand them on)")
                                                : std::string("held by no interface here (the loader follows)")) +
                       " (its " + (is_v4(shared.ip) ? "ARP" : "NDP") + " and other ports stay the node's); steered: ";
    for (size_t i = 0; i < shared.ports.size(); i++) {
        const SharedPortStatus &port = shared.ports[i];
        text += (i ? ", " : "") + port.protocol + "/" + std::to_string(port.port) + " to " +
                (port.backend_ip == bpfnet_ip{} ? std::string("no backend here (dropped)")
                                                : format_endpoint(port.backend_ip, htons(port.backend_port)));
        if (port.via_node != bpfnet_ip{})
            text += " on the node at " + format_ip(port.via_node);
    }
    return text;
}

std::string describe_dhcp6_relay(const StatusView &status) {
    if (status.dhcp6_service_ip == bpfnet_ip{})
        return "off";
    return "for " + format_ip(status.dhcp6_service_ip) +
           (status.dhcp6_group_member ? ", NIC in ff02::1:2"
                                      : ", NIC NOT in ff02::1:2 (MLD-snooping switches may not forward clients' "
                                        "messages)");
}

// "kubernetes mode, NIC chosen by MAC (one of 02:..., ...)", or why no loader answered.
std::string describe_loader_line(const StatusView &status) {
    if (!status.loader)
        return "none answered: " + status.loader_problem;
    const Json &loader = *status.loader;
    const std::string mode = loader.value("mode", std::string("?")) + " mode";
    if (loader.value("interface_chosen_by", std::string()) == "mac")
        return mode + ", NIC chosen by MAC (the one link with one of " + loader.value("interface_macs", std::string()) +
               ")";
    return mode + ", NIC named " + loader.value("interface", std::string());
}

void print_status_table(std::ostream &out, const StatusView &status) {
    KeyValueList list;
    list.add("interface", status.interface + " (ifindex " + std::to_string(status.ifindex) + ", mac " +
                              format_mac(status.nic_mac) + ")");
    if (status.carrier)
        list.add("carrier", *status.carrier ? "yes"
                                            : "NO: no host on the LAN can be reached (a cable, a switch port, the "
                                              "link down); in Kubernetes mode another node serves the service IPs");
    list.add("loader", describe_loader_line(status));
    list.add("subnet", status.subnet_text());
    if (status.subnet6_prefix_len)
        list.add("subnet ipv6", format_prefix6(status.subnet6, status.subnet6_prefix_len));
    list.add("xdp", describe_hook(status.xdp));
    list.add("tc ingress", describe_hook(status.tc_ingress));
    // Each family's neighbour protocol, on the LAN's families only: an IPv6-only LAN has no ARP to speak of.
    const std::string responder = status.tc_ingress.attached
                                      ? "answered at tc ingress, out of the NIC's egress (every NIC kind)"
                                      : "not answered: tc ingress is not attached";
    if (status.has_ipv4_subnet())
        list.add("arp", responder);
    if (status.subnet6_prefix_len)
        list.add("ndp", responder);
    list.add("pod delivery", status.redirect_peer ? "bpf_redirect_peer"
                                                  : "through the veth (no bpf_redirect_peer, or redirectPeer off)");
    list.add("heartbeat", describe_heartbeat(status));
    for (const auto &ip : status.service_ips)
        list.add("service IP", describe_service_ip(status, ip));
    if (status.service_ips.empty())
        list.add("service IP", "none");
    for (const auto &shared : status.shared_addresses)
        list.add("shared address", describe_shared_address(shared));
    list.add("dhcp relay", status.dhcp_service_ip_be ? "for " + format_ipv4(status.dhcp_service_ip_be) : "off");
    list.add("dhcpv6 relay", describe_dhcp6_relay(status));
    for (const auto &backend : status.backends)
        list.add("backend", describe_backend(status, backend));
    if (status.backends.empty())
        list.add("backend", "none: service traffic is dropped (drop_no_backend)");
    list.add("conflicts", status.conflicts_seen ? std::to_string(status.conflicts_seen) +
                                                      " seen (ARP and NDP claims: counter arp_conflict)"
                                                : "none seen");
    for (const auto &conflict : status.conflicts)
        list.add("conflict", format_ip(conflict.service_ip) + " claimed by " + format_mac(conflict.mac) + ", " +
                                 format_seconds(conflict.age_seconds) + " ago");
    list.print(out);
}

Json hook_json(const HookState &hook) {
    Json json;
    json["attached"] = hook.attached;
    json["program"] = hook.attached ? Json(hook.program) : Json(nullptr);
    json["program_id"] = hook.attached ? Json(hook.program_id) : Json(nullptr);
    return json;
}

// A TC hook also says how it is attached: "tcx" or "clsact".
Json tc_hook_json(const HookState &hook) {
    Json json = hook_json(hook);
    json["attach"] = hook.attached ? Json(hook.attach) : Json(nullptr);
    return json;
}

Json status_json(const StatusView &status) {
    Json json;
    json["interface"] = {{"name", status.interface},
                         {"ifindex", status.ifindex},
                         {"mac", format_mac(status.nic_mac)},
                         {"carrier", status.carrier ? Json(*status.carrier) : Json(nullptr)}};
    json["loader"] = status.loader ? *status.loader : Json({{"problem", status.loader_problem}});
    json["subnet"] =
        status.subnet_be == 0xffffffff && status.subnet_mask_be == 0 ? Json(nullptr) : Json(status.subnet_text());
    json["subnet_ipv6"] =
        status.subnet6_prefix_len ? Json(format_prefix6(status.subnet6, status.subnet6_prefix_len)) : Json(nullptr);
    json["dhcp_service_ip"] = optional_ip(status.dhcp_service_ip_be);
    json["dhcp6_relay"] =
        status.dhcp6_service_ip == bpfnet_ip{}
            ? Json(nullptr)
            : Json({{"service_ip", format_ip(status.dhcp6_service_ip)}, {"nic_in_group", status.dhcp6_group_member}});

    Json xdp = hook_json(status.xdp);
    xdp["mode"] = status.xdp.attached ? Json(status.xdp.mode) : Json(nullptr);
    xdp["dispatcher"] = status.xdp.dispatcher ? Json(*status.xdp.dispatcher) : Json(nullptr);
    json["hooks"] = {{"xdp", xdp}, {"tc_ingress", tc_hook_json(status.tc_ingress)}};
    json["pod_delivery"] = status.redirect_peer ? "redirect_peer" : "veth";
    json["arp_responder"] = status.tc_ingress.attached ? Json("tc_egress") : Json(nullptr);

    json["heartbeat"] = {
        {"state", heartbeat_name(status.heartbeat())},
        {"age_seconds", status.heartbeat_age_seconds ? Json(json_seconds(*status.heartbeat_age_seconds)) : Json()},
        {"timeout_seconds", json_seconds(status.heartbeat_timeout_seconds)}};

    json["service_ips"] = Json::array();
    for (const auto &ip : status.service_ips)
        json["service_ips"].push_back(
            {{"ip", format_ip(ip.ip)},
             {"active", ip.active},
             {"answering_arp", status.answering_arp(ip)},
             {"solicited_node_group", ip.solicited_node_member ? Json(*ip.solicited_node_member) : Json(nullptr)}});

    json["shared_addresses"] = Json::array();
    for (const auto &shared : status.shared_addresses) {
        Json ports = Json::array();
        for (const auto &port : shared.ports)
            ports.push_back(
                {{"protocol", port.protocol},
                 {"port", port.port},
                 {"backend", port.backend_ip == bpfnet_ip{}
                                 ? Json(nullptr)
                                 : Json(format_endpoint(port.backend_ip, htons(port.backend_port)))},
                 {"via_node", port.via_node == bpfnet_ip{} ? Json(nullptr) : Json(format_ip(port.via_node))}});
        json["shared_addresses"].push_back({{"ip", format_ip(shared.ip)},
                                            {"held_on", shared.held_on.empty() ? Json(nullptr) : Json(shared.held_on)},
                                            {"ports", ports}});
    }

    json["backends"] = Json::array();
    for (const auto &backend : status.backends)
        json["backends"].push_back({{"ip", format_ip(backend.ip)},
                                    {"veth", backend.veth.empty() ? Json(nullptr) : Json(backend.veth)},
                                    {"ifindex", backend.ifindex},
                                    {"pod_delivery", backend.delivery},
                                    {"pod_hook", tc_hook_json(backend.pod_hook)}});

    Json entries = Json::array();
    for (const auto &conflict : status.conflicts)
        entries.push_back({{"service_ip", format_ip(conflict.service_ip)},
                           {"mac", format_mac(conflict.mac)},
                           {"age_seconds", json_seconds(conflict.age_seconds)}});
    json["conflicts"] = {{"seen", status.conflicts_seen}, {"entries", entries}};
    return json;
}

} // namespace bpfnet::cli
