#include "core/nic_choice.hpp"

#include "core/addresses.hpp"

#include <optional>
#include <stdexcept>

namespace bpfnet {
namespace {

std::vector<MacAddress> parse_mac_list(std::string_view list) {
    std::vector<MacAddress> macs;
    for (size_t start = 0;;) {
        const size_t comma = list.find(',', start);
        const std::string_view item = list.substr(start, comma == std::string_view::npos ? comma : comma - start);
        const std::optional<MacAddress> mac = parse_mac(item);
        if (!mac)
            throw std::invalid_argument("--interface: '" + std::string(item) +
                                        "' is not a MAC address (aa:bb:cc:dd:ee:ff); give an interface name or MACs");
        macs.push_back(*mac);
        if (comma == std::string_view::npos)
            return macs;
        start = comma + 1;
    }
}

std::string names_and_macs(const std::vector<LinkInfo> &links) {
    std::string text;
    for (const LinkInfo &link : links) {
        if (link.mac == MacAddress{})
            continue;
        text += (text.empty() ? "" : ", ") + link.name + " " + format_mac(link.mac.data());
    }
    return text.empty() ? "none with a MAC" : text;
}

} // namespace

bool lists_macs(std::string_view value) {
    return value.find(':') != std::string_view::npos;
}

std::string link_with_mac(std::string_view mac_list, const std::vector<LinkInfo> &links) {
    const std::vector<MacAddress> macs = parse_mac_list(mac_list);
    std::vector<std::string> found;
    for (const LinkInfo &link : links)
        for (const MacAddress &mac : macs)
            if (link.mac == mac)
                found.push_back(link.name);
    if (found.size() == 1)
        return found.front();
    if (found.empty())
        throw std::invalid_argument("--interface: no link of this node has one of the MACs " + std::string(mac_list) +
                                    " (links: " + names_and_macs(links) + ")");
    std::string names;
    for (const std::string &name : found)
        names += (names.empty() ? "" : ", ") + name;
    throw std::invalid_argument("--interface: several links have one of the MACs " + std::string(mac_list) + " (" +
                                names + "): name the interface instead");
}

} // namespace bpfnet
