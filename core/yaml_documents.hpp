/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one way both modes' files in YAML (the standalone config, a kubeconfig) reach yaml-cpp. The core knows
 * neither format: only that yaml-cpp 0.7, Debian 12's, loops forever, allocating as it goes, on a ',' at a
 * document's top level outside any collection (the documents `,` and `"a" ,`; found by tests/libfuzz). Such a
 * text is refused here, from yaml-cpp's own tokens, before it is loaded: a typo in a config must stop the
 * loader with an error, not hang it.
 */
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace bpfnet {

/* Every document of text, as YAML::LoadAll gives them; throws YAML::Exception (a ParserException without a
 * position for the refused ','). */
std::vector<YAML::Node> load_yaml_documents(const std::string &text);

} // namespace bpfnet
