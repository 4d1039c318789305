#include "packet.hpp"

#include <arpa/inet.h>

#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace bpfnet::test {

void put16(Bytes &b, size_t off, uint16_t host_value) {
    b[off] = static_cast<uint8_t>(host_value >> 8);
    b[off + 1] = static_cast<uint8_t>(host_value & 0xff);
}

namespace {

void put32be(Bytes &b, size_t off, uint32_t be_value) {
    const auto *p = reinterpret_cast<const uint8_t *>(&be_value);
    for (int i = 0; i < 4; i++)
        b[off + i] = p[i];
}

// RFC 1071 ones' complement sum over bytes, folded to 16 bits.
uint32_t sum16(const uint8_t *data, size_t len, uint32_t acc = 0) {
    for (size_t i = 0; i + 1 < len; i += 2)
        acc += static_cast<uint32_t>(data[i] << 8 | data[i + 1]);
    if (len % 2)
        acc += static_cast<uint32_t>(data[len - 1] << 8);
    return acc;
}

uint16_t fold(uint32_t acc) {
    while (acc >> 16)
        acc = (acc & 0xffff) + (acc >> 16);
    return static_cast<uint16_t>(~acc & 0xffff);
}

} // namespace

uint32_t ip(const std::string &dotted) {
    in_addr a{};
    if (inet_pton(AF_INET, dotted.c_str(), &a) != 1)
        throw std::invalid_argument("bad IPv4 " + dotted);
    return a.s_addr;
}

bpfnet_ip key_ip(const std::string &text) {
    bpfnet_ip key{};
    in_addr v4{};
    if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
        key.w[2] = htonl(0xffff);
        key.w[3] = v4.s_addr;
        return key;
    }
    if (inet_pton(AF_INET6, text.c_str(), &key) != 1)
        throw std::invalid_argument("bad IP " + text);
    return key;
}

Mac mac(const std::string &text) {
    Mac m{};
    unsigned v[6];
    if (std::sscanf(text.c_str(), "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
        throw std::invalid_argument("bad MAC " + text);
    for (int i = 0; i < 6; i++)
        m[i] = static_cast<uint8_t>(v[i]);
    return m;
}

Packet Packet::tcp(const Endpoint &from, const Endpoint &to) {
    Packet p;
    p.proto_ = kTcp;
    p.saddr_ = ip(from.ip);
    p.daddr_ = ip(to.ip);
    p.sport_ = from.port;
    p.dport_ = to.port;
    return p;
}

Packet Packet::udp(const Endpoint &from, const Endpoint &to) {
    Packet p = tcp(from, to);
    p.proto_ = kUdp;
    return p;
}

Packet Packet::icmp_echo(const std::string &from, const std::string &to) {
    Packet p = tcp({from, 0}, {to, 0});
    p.proto_ = kIcmp;
    return p;
}

Packet Packet::icmp_error(const std::string &from, const std::string &to, uint8_t type, uint8_t code,
                          const Packet &about, uint32_t rest) {
    Packet p = icmp_echo(from, to);
    p.icmp_type_ = type;
    p.icmp_code_ = code;
    p.icmp_rest_ = rest;
    Bytes quoted = about.bytes();
    size_t ihl = static_cast<size_t>(quoted.at(14) & 0x0f) * 4;
    p.payload_.assign(quoted.begin() + 14, quoted.begin() + static_cast<long>(14 + ihl + 8));
    return p;
}

Packet &Packet::macs(const Mac &dst, const Mac &src) {
    dst_mac_ = dst;
    src_mac_ = src;
    return *this;
}
Packet &Packet::payload(const std::string &text) {
    payload_ = text;
    return *this;
}
Packet &Packet::payload(const Bytes &bytes) {
    payload_.assign(bytes.begin(), bytes.end());
    return *this;
}
Packet &Packet::ip_options(size_t words) {
    option_words_ = words;
    return *this;
}
Packet &Packet::more_fragments() {
    more_fragments_ = true;
    return *this;
}
Packet &Packet::ttl(uint8_t hops) {
    ttl_ = hops;
    return *this;
}
Packet &Packet::fragment_offset(uint16_t eight_byte_units) {
    fragment_offset_ = eight_byte_units;
    return *this;
}
Packet &Packet::partial_checksum() {
    partial_checksum_ = true;
    return *this;
}
Packet &Packet::udp_checksum_none() {
    udp_no_checksum_ = true;
    return *this;
}
Packet &Packet::tcp_flags(uint8_t flags) {
    tcp_flags_ = flags;
    return *this;
}

Bytes Packet::bytes() const {
    size_t ihl = 20 + option_words_ * 4;
    size_t l4_header = proto_ == kTcp ? 20 : 8;
    size_t l4_len = l4_header + payload_.size();
    Bytes b(14 + ihl + l4_len, 0);

    std::copy(dst_mac_.begin(), dst_mac_.end(), b.begin());
    std::copy(src_mac_.begin(), src_mac_.end(), b.begin() + 6);
    put16(b, 12, 0x0800);

    size_t ipo = 14;
    b[ipo] = static_cast<uint8_t>(0x40 | (ihl / 4));
    put16(b, ipo + 2, static_cast<uint16_t>(ihl + l4_len));
    put16(b, ipo + 4, 0x1234);                                                   // identification
    uint16_t flags = more_fragments_ ? 0x2000 : (fragment_offset_ ? 0 : 0x4000); // MF, or DF
    put16(b, ipo + 6, static_cast<uint16_t>(flags | (fragment_offset_ & 0x1fff)));
    b[ipo + 8] = ttl_;
    b[ipo + 9] = proto_;
    put32be(b, ipo + 12, saddr_);
    put32be(b, ipo + 16, daddr_);
    for (size_t i = 20; i < ihl; i++)
        b[ipo + i] = 1; // NOP options
    put16(b, ipo + 10, fold(sum16(&b[ipo], ihl)));

    size_t l4 = ipo + ihl;
    std::copy(payload_.begin(), payload_.end(), b.begin() + static_cast<long>(l4 + l4_header));
    if (proto_ == kIcmp) {
        b[l4] = icmp_type_;
        b[l4 + 1] = icmp_code_;
        put32be(b, l4 + 4, htonl(icmp_rest_));
        put16(b, l4 + 2, fold(sum16(&b[l4], l4_len)));
        return b;
    }
    put16(b, l4, sport_);
    put16(b, l4 + 2, dport_);
    size_t csum_off;
    if (proto_ == kTcp) {
        put32be(b, l4 + 4, htonl(1000)); // seq
        put32be(b, l4 + 8,
                htonl(0x50607080)); // ack; its first byte would read as a valid TCP data offset if IHL were ignored
        b[l4 + 12] = 5 << 4;
        b[l4 + 13] = tcp_flags_;
        put16(b, l4 + 14, 65535);
        csum_off = l4 + 16;
    } else {
        put16(b, l4 + 4, static_cast<uint16_t>(l4_len));
        csum_off = l4 + 6;
    }
    if (proto_ == kUdp && udp_no_checksum_)
        return b;
    // Pseudo-header: source, destination, zero, protocol, L4 length.
    uint32_t acc = sum16(&b[ipo + 12], 8);
    acc += proto_;
    acc += static_cast<uint32_t>(l4_len);
    if (partial_checksum_) {
        put16(b, csum_off, static_cast<uint16_t>(~fold(acc))); // fold() complements: undo it
        return b;
    }
    uint16_t csum = fold(sum16(&b[l4], l4_len, acc));
    if (proto_ == kUdp && csum == 0)
        csum = 0xffff; // RFC 768: a computed 0 is sent as all ones
    put16(b, csum_off, csum);
    return b;
}

Dhcp &Dhcp::option(uint8_t code, Bytes value) {
    options.emplace_back(code, std::move(value));
    return *this;
}

Dhcp &Dhcp::option(uint8_t code, const std::string &ipv4) {
    uint32_t be = ip(ipv4);
    const auto *p = reinterpret_cast<const uint8_t *>(&be);
    return option(code, Bytes(p, p + 4));
}

Bytes Dhcp::bytes() const {
    Bytes b(240, 0);
    b[0] = op;
    b[1] = 1; // Ethernet
    b[2] = 6;
    b[3] = hops;
    put32be(b, 4, htonl(xid));
    put16(b, 10, flags);
    put32be(b, 12, ip(ciaddr));
    put32be(b, 16, ip(yiaddr));
    put32be(b, 20, ip(siaddr));
    put32be(b, 24, ip(giaddr));
    std::copy(chaddr.begin(), chaddr.end(), b.begin() + 28);
    put32be(b, 236, htonl(0x63825363)); // magic cookie
    for (const auto &[code, value] : options) {
        b.push_back(code);
        if (code == 0)
            continue; // PAD is one byte (RFC 2132 3.1)
        b.push_back(static_cast<uint8_t>(value.size()));
        b.insert(b.end(), value.begin(), value.end());
    }
    if (end_option)
        b.push_back(255);
    if (b.size() < 300)
        b.resize(300, 0);
    return b;
}

Bytes arp(uint16_t op, const Mac &eth_dst, const Mac &sender_mac, const std::string &sender_ip, const Mac &target_mac,
          const std::string &target_ip) {
    Bytes b(42, 0);
    std::copy(eth_dst.begin(), eth_dst.end(), b.begin());
    std::copy(sender_mac.begin(), sender_mac.end(), b.begin() + 6);
    put16(b, 12, 0x0806);
    put16(b, 14, 1);      // Ethernet
    put16(b, 16, 0x0800); // IPv4
    b[18] = 6;
    b[19] = 4;
    put16(b, 20, op);
    std::copy(sender_mac.begin(), sender_mac.end(), b.begin() + 22);
    put32be(b, 28, ip(sender_ip));
    std::copy(target_mac.begin(), target_mac.end(), b.begin() + 32);
    put32be(b, 38, ip(target_ip));
    return b;
}

Bytes vlan_tagged(Bytes frame, uint16_t vid) {
    const Bytes tag = {0x81, 0x00, static_cast<uint8_t>((vid >> 8) & 0x0f), static_cast<uint8_t>(vid & 0xff)};
    frame.insert(frame.begin() + 12, tag.begin(), tag.end());
    return frame;
}

Bytes padded(Bytes frame, size_t length) {
    if (frame.size() < length)
        frame.resize(length, 0);
    return frame;
}

Bytes truncated(Bytes frame, size_t length) {
    frame.resize(length);
    return frame;
}

Bytes with_byte(Bytes frame, size_t offset, uint8_t value) {
    frame.at(offset) = value;
    return frame;
}

Bytes with_u16(Bytes frame, size_t offset, uint16_t value) {
    frame.at(offset + 1);
    put16(frame, offset, value);
    return frame;
}

Bytes from_hex(const std::string &hex_digits) {
    if (hex_digits.size() % 2 != 0)
        throw std::invalid_argument("from_hex: odd number of digits");
    Bytes out;
    for (size_t i = 0; i < hex_digits.size(); i += 2)
        out.push_back(static_cast<uint8_t>(std::stoul(hex_digits.substr(i, 2), nullptr, 16)));
    return out;
}

std::string hex(const Bytes &frame) {
    std::ostringstream out;
    char buf[4];
    for (size_t i = 0; i < frame.size(); i++) {
        std::snprintf(buf, sizeof(buf), "%02x", frame[i]);
        out << buf << ((i % 16 == 15) ? "\n" : " ");
    }
    return out.str();
}

std::string describe_difference(const Bytes &got, const Bytes &want) {
    std::ostringstream out;
    if (got.size() != want.size())
        out << "length " << got.size() << ", want " << want.size() << "; ";
    for (size_t i = 0; i < std::min(got.size(), want.size()); i++) {
        if (got[i] != want[i]) {
            char buf[96];
            std::snprintf(buf, sizeof(buf), "first difference at byte %zu: got 0x%02x, want 0x%02x", i, got[i],
                          want[i]);
            out << buf;
            break;
        }
    }
    out << "\ngot:\n" << hex(got) << "\nwant:\n" << hex(want);
    return out.str();
}

} // namespace bpfnet::test
