/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one way both modes' files in YAML (the standalone config, a kubeconfig) reach yaml-cpp. The core knows
 * neither format: only that yaml-cpp 0.7, Debian 12's, loops forever, allocating as it goes, on a token that
 * cannot begin a node at a document's top level (the documents `,`, `"a" ,` and `"a" x\n?`; found by
 * tests/libfuzz). Such a text is refused here, from a first pass of yaml-cpp's own parser that stops when a
 * document makes no progress, before it is loaded: a typo in a config must stop the loader with an error, not
 * hang it.
 */
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace bpfnet {

/* Every document of text, as YAML::LoadAll gives them; throws YAML::Exception (a ParserException at the token
 * yaml-cpp could not move past, for the refused text). */
std::vector<YAML::Node> load_yaml_documents(const std::string &text);

} // namespace bpfnet
