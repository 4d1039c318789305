#include "core/node.hpp"

#include "core/addresses.hpp"

#include <array>
#include <utility>

namespace bpfnet {

static_assert(static_cast<uint8_t>(Protocol::Tcp) == BPFNET_PROTO_TCP);
static_assert(static_cast<uint8_t>(Protocol::Udp) == BPFNET_PROTO_UDP);
#define BPFNET_PORT_KIND_MATCHES(id, cxx, spelling, value)                                                             \
    static_assert(static_cast<uint8_t>(PortKind::cxx) == BPFNET_KIND_##id);
BPFNET_PORT_KINDS(BPFNET_PORT_KIND_MATCHES)
#undef BPFNET_PORT_KIND_MATCHES

namespace {

template <typename T>
using Spelling = std::pair<std::string_view, T>;

constexpr std::array kProtocols{Spelling<Protocol>{"tcp", Protocol::Tcp}, Spelling<Protocol>{"udp", Protocol::Udp}};
#define BPFNET_PORT_KIND_SPELLING(id, cxx, spelling, value) Spelling<PortKind>{#spelling, PortKind::cxx},
constexpr std::array kPortKinds{BPFNET_PORT_KINDS(BPFNET_PORT_KIND_SPELLING)};
#undef BPFNET_PORT_KIND_SPELLING
constexpr std::array kXdpModes{Spelling<XdpMode>{"auto", XdpMode::Auto}, Spelling<XdpMode>{"native", XdpMode::Native},
                               Spelling<XdpMode>{"generic", XdpMode::Generic}};
constexpr std::array kTcAttaches{Spelling<TcAttach>{"auto", TcAttach::Auto}, Spelling<TcAttach>{"tcx", TcAttach::Tcx},
                                 Spelling<TcAttach>{"clsact", TcAttach::Clsact}};
constexpr std::array kRedirectPeers{Spelling<RedirectPeer>{"auto", RedirectPeer::Auto},
                                    Spelling<RedirectPeer>{"off", RedirectPeer::Off}};
constexpr std::array kPodDeliveries{Spelling<PodDelivery>{"auto", PodDelivery::Auto},
                                    Spelling<PodDelivery>{"route", PodDelivery::Route}};

template <typename T, size_t N>
std::optional<T> parse_spelling(std::string_view text, const std::array<Spelling<T>, N> &spellings) {
    for (const auto &[name, value] : spellings)
        if (name == text)
            return value;
    return std::nullopt;
}

// A value outside the table (a map entry of another version) is shown by number rather than hidden.
template <typename T, size_t N>
std::string spelling_of(T value, const std::array<Spelling<T>, N> &spellings) {
    for (const auto &[name, choice] : spellings)
        if (choice == value)
            return std::string(name);
    return std::to_string(static_cast<unsigned>(value));
}

template <typename T, size_t N>
std::vector<std::string_view> names_of(const std::array<Spelling<T>, N> &table) {
    std::vector<std::string_view> names;
    for (const auto &[name, value] : table)
        names.push_back(name);
    return names;
}

} // namespace

template <>
std::vector<std::string_view> spellings<Protocol>() {
    return names_of(kProtocols);
}
template <>
std::vector<std::string_view> spellings<PortKind>() {
    return names_of(kPortKinds);
}
template <>
std::vector<std::string_view> spellings<XdpMode>() {
    return names_of(kXdpModes);
}
template <>
std::vector<std::string_view> spellings<TcAttach>() {
    return names_of(kTcAttaches);
}
template <>
std::vector<std::string_view> spellings<RedirectPeer>() {
    return names_of(kRedirectPeers);
}
template <>
std::vector<std::string_view> spellings<PodDelivery>() {
    return names_of(kPodDeliveries);
}

std::string default_control_socket(const std::string &interface) {
    return std::string(kDefaultControlDir) + "/" + interface + ".sock";
}

uint32_t NodeSettings::subnet_mask_be() const {
    return prefix_mask_be(prefix_len);
}

bool same_attachment(const NodeSettings &a, const NodeSettings &b) {
    return a.interface == b.interface && a.pin_root == b.pin_root && a.control_socket == b.control_socket &&
           a.xdp_mode == b.xdp_mode && a.tc_attach == b.tc_attach && a.redirect_peer == b.redirect_peer;
}

NodeSettings reloaded(const NodeSettings &running, NodeSettings next) {
    next.interface = running.interface;
    next.pin_root = running.pin_root;
    next.control_socket = running.control_socket;
    next.xdp_mode = running.xdp_mode;
    next.tc_attach = running.tc_attach;
    next.redirect_peer = running.redirect_peer;
    return next;
}

std::string NodeSettings::control_socket_path() const {
    return control_socket.empty() ? default_control_socket(interface) : control_socket;
}

std::string to_string(Protocol protocol) {
    return spelling_of(protocol, kProtocols);
}
std::string to_string(PortKind kind) {
    return spelling_of(kind, kPortKinds);
}
std::string to_string(XdpMode mode) {
    return spelling_of(mode, kXdpModes);
}
std::string to_string(TcAttach attach) {
    return spelling_of(attach, kTcAttaches);
}
std::string to_string(RedirectPeer redirect_peer) {
    return spelling_of(redirect_peer, kRedirectPeers);
}
std::string to_string(PodDelivery delivery) {
    return spelling_of(delivery, kPodDeliveries);
}

std::optional<Protocol> parse_protocol(std::string_view text) {
    return parse_spelling(text, kProtocols);
}
std::optional<PortKind> parse_port_kind(std::string_view text) {
    return parse_spelling(text, kPortKinds);
}
std::optional<XdpMode> parse_xdp_mode(std::string_view text) {
    return parse_spelling(text, kXdpModes);
}
std::optional<TcAttach> parse_tc_attach(std::string_view text) {
    return parse_spelling(text, kTcAttaches);
}
std::optional<RedirectPeer> parse_redirect_peer(std::string_view text) {
    return parse_spelling(text, kRedirectPeers);
}
std::optional<PodDelivery> parse_pod_delivery(std::string_view text) {
    return parse_spelling(text, kPodDeliveries);
}

} // namespace bpfnet
