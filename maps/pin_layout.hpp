// Where an interface's maps and programs are pinned, for the loader and bpfnetctl alike.
#pragma once

#include <algorithm>
#include <string>

namespace bpfnet {

// <pin root>/<interface>, with each '.' of the interface name written as ':'. bpffs refuses names with a
// dot (reserved for its own use), and a VLAN sub-interface is usually named prov0.100; interface names
// never hold a ':' (the kernel's dev_valid_name()), so no two interfaces share a directory.
inline std::string interface_pin_dir(const std::string &pin_root, std::string interface) {
    std::replace(interface.begin(), interface.end(), '.', ':');
    return pin_root + "/" + interface;
}

// The interface whose pin directory is named dir_name (the inverse of interface_pin_dir's last component).
inline std::string interface_of_pin_dir(std::string dir_name) {
    std::replace(dir_name.begin(), dir_name.end(), ':', '.');
    return dir_name;
}

} // namespace bpfnet
