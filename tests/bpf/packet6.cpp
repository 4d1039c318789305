#include "packet6.hpp"

#include <arpa/inet.h>

#include <stdexcept>

namespace bpfnet::test {

namespace {

void append(Bytes &b, const uint8_t *data, size_t len) {
    b.insert(b.end(), data, data + len);
}

// The ones' complement checksum of RFC 1071 over the pseudo-header (RFC 8200 8.1) and the upper-layer bytes.
uint16_t upper_layer_checksum(const std::string &saddr, const std::string &daddr, uint8_t next, const Bytes &l4) {
    Bytes pseudo;
    auto s = ip6(saddr), d = ip6(daddr);
    append(pseudo, s.data(), s.size());
    append(pseudo, d.data(), d.size());
    const auto len = static_cast<uint32_t>(l4.size());
    const uint8_t tail[8] = {static_cast<uint8_t>(len >> 24),
                             static_cast<uint8_t>(len >> 16),
                             static_cast<uint8_t>(len >> 8),
                             static_cast<uint8_t>(len),
                             0,
                             0,
                             0,
                             next};
    append(pseudo, tail, sizeof(tail));
    pseudo.insert(pseudo.end(), l4.begin(), l4.end());
    uint32_t acc = 0;
    for (size_t i = 0; i + 1 < pseudo.size(); i += 2)
        acc += static_cast<uint32_t>(pseudo[i] << 8 | pseudo[i + 1]);
    if (pseudo.size() % 2)
        acc += static_cast<uint32_t>(pseudo.back() << 8);
    while (acc >> 16)
        acc = (acc & 0xffff) + (acc >> 16);
    return static_cast<uint16_t>(~acc & 0xffff);
}

Bytes link_layer_option(uint8_t type, const Mac &mac) {
    Bytes opt = {type, 1};
    opt.insert(opt.end(), mac.begin(), mac.end());
    return opt;
}

} // namespace

std::array<uint8_t, 16> ip6(const std::string &text) {
    std::array<uint8_t, 16> a{};
    if (inet_pton(AF_INET6, text.c_str(), a.data()) != 1)
        throw std::invalid_argument("bad IPv6 " + text);
    return a;
}

std::string solicited_node(const std::string &address) {
    auto a = ip6(address);
    std::array<uint8_t, 16> group = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, a[13], a[14], a[15]};
    char text[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, group.data(), text, sizeof(text));
    return text;
}

Mac multicast_mac(const std::string &group) {
    auto a = ip6(group);
    return {0x33, 0x33, a[12], a[13], a[14], a[15]};
}

Bytes ns_body(const std::string &target, std::optional<Mac> source_lladdr) {
    Bytes body(4, 0); // reserved
    auto t = ip6(target);
    append(body, t.data(), t.size());
    if (source_lladdr) {
        Bytes opt = link_layer_option(1, *source_lladdr);
        body.insert(body.end(), opt.begin(), opt.end());
    }
    return body;
}

Bytes na_body(const std::string &target, uint8_t flags, std::optional<Mac> target_lladdr) {
    Bytes body = {flags, 0, 0, 0};
    auto t = ip6(target);
    append(body, t.data(), t.size());
    if (target_lladdr) {
        Bytes opt = link_layer_option(2, *target_lladdr);
        body.insert(body.end(), opt.begin(), opt.end());
    }
    return body;
}

Packet6 Packet6::tcp(const Endpoint &from, const Endpoint &to) {
    Packet6 p;
    p.saddr_ = from.ip;
    p.daddr_ = to.ip;
    p.sport_ = from.port;
    p.dport_ = to.port;
    p.proto_ = kTcp;
    return p;
}

Packet6 Packet6::udp(const Endpoint &from, const Endpoint &to) {
    Packet6 p = tcp(from, to);
    p.proto_ = kUdp;
    return p;
}

Packet6 Packet6::icmp(const std::string &from, const std::string &to, uint8_t type, uint8_t code, Bytes body) {
    Packet6 p;
    p.saddr_ = from;
    p.daddr_ = to;
    p.proto_ = kIcmp6;
    p.icmp_type_ = type;
    p.icmp_code_ = code;
    p.icmp_body_ = std::move(body);
    return p;
}

Packet6 &Packet6::macs(const Mac &dst, const Mac &src) {
    dst_mac_ = dst;
    src_mac_ = src;
    return *this;
}

Packet6 &Packet6::payload(const std::string &text) {
    payload_ = text;
    return *this;
}

Packet6 &Packet6::payload(const Bytes &bytes) {
    payload_.assign(bytes.begin(), bytes.end());
    return *this;
}

Packet6 &Packet6::hop_limit(uint8_t hops) {
    hop_limit_ = hops;
    return *this;
}

Packet6 &Packet6::extension(uint8_t type, uint8_t units, uint8_t segments_left) {
    Bytes header(8 * (1 + static_cast<size_t>(units)), 0);
    header[1] = type == 44 ? 0 : units; // a fragment header is always 8 bytes (its second byte is reserved)
    if (type == 43) {
        header[2] = 4; // segment routing; any type with segments left > 0 is not walked
        header[3] = segments_left;
    }
    if (type == 44)
        header.resize(8);
    extensions_.emplace_back(type, std::move(header));
    return *this;
}

Packet6 &Packet6::udp_checksum_zero() {
    udp_checksum_zero_ = true;
    return *this;
}

Bytes Packet6::bytes() const {
    Bytes l4;
    if (proto_ == kTcp) {
        l4.assign(20, 0);
        put16(l4, 0, sport_);
        put16(l4, 2, dport_);
        l4[4] = 0x12; // sequence number, arbitrary
        l4[12] = 5 << 4;
        l4[13] = 0x18; // PSH|ACK
        put16(l4, 14, 65535);
        l4.insert(l4.end(), payload_.begin(), payload_.end());
    } else if (proto_ == kUdp) {
        l4.assign(8, 0);
        put16(l4, 0, sport_);
        put16(l4, 2, dport_);
        l4.insert(l4.end(), payload_.begin(), payload_.end());
        put16(l4, 4, static_cast<uint16_t>(l4.size()));
    } else {
        l4 = {icmp_type_, icmp_code_, 0, 0};
        l4.insert(l4.end(), icmp_body_.begin(), icmp_body_.end());
    }
    if (!(proto_ == kUdp && udp_checksum_zero_)) {
        uint16_t csum = upper_layer_checksum(saddr_, daddr_, proto_, l4);
        if (proto_ == kUdp && csum == 0)
            csum = 0xffff;
        put16(l4, proto_ == kTcp ? 16 : (proto_ == kUdp ? 6 : 2), csum);
    }

    Bytes ext;
    for (size_t i = 0; i < extensions_.size(); i++) {
        Bytes header = extensions_[i].second;
        header[0] = i + 1 < extensions_.size() ? extensions_[i + 1].first : proto_;
        ext.insert(ext.end(), header.begin(), header.end());
    }
    Bytes b;
    append(b, dst_mac_.data(), 6);
    append(b, src_mac_.data(), 6);
    b.push_back(0x86);
    b.push_back(0xdd);
    const size_t l3 = b.size();
    b.resize(l3 + 40, 0);
    b[l3] = 0x60;
    put16(b, l3 + 4, static_cast<uint16_t>(ext.size() + l4.size()));
    b[l3 + 6] = extensions_.empty() ? proto_ : extensions_.front().first;
    b[l3 + 7] = hop_limit_;
    auto s = ip6(saddr_), d = ip6(daddr_);
    std::copy(s.begin(), s.end(), b.begin() + static_cast<long>(l3 + 8));
    std::copy(d.begin(), d.end(), b.begin() + static_cast<long>(l3 + 24));
    b.insert(b.end(), ext.begin(), ext.end());
    b.insert(b.end(), l4.begin(), l4.end());
    return b;
}

} // namespace bpfnet::test
