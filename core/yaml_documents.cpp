/* SPDX-License-Identifier: Apache-2.0 */
#include "core/yaml_documents.hpp"

#include <sstream>
#include <string_view>

namespace bpfnet {

namespace {

/*
 * Whether yaml-cpp's tokens of text (Parser::PrintTokens: one "NAME: value" per line) hold a FLOW_ENTRY outside
 * every flow and block collection. Only lines with a token name and no value count: a scalar's value is
 * printed after its name, on the same line.
 */
bool flow_entry_at_top_level(const std::string &tokens) {
    int flow = 0, block = 0;
    std::istringstream lines(tokens);
    for (std::string line; std::getline(lines, line);) {
        if (!line.ends_with(": "))
            continue;
        const std::string_view name = std::string_view(line).substr(0, line.size() - 2);
        if (name == "FLOW_SEQ_START" || name == "FLOW_MAP_START")
            ++flow;
        else if ((name == "FLOW_SEQ_END" || name == "FLOW_MAP_END") && flow > 0)
            --flow;
        else if (name == "BLOCK_SEQ_START" || name == "BLOCK_MAP_START")
            ++block;
        else if ((name == "BLOCK_SEQ_END" || name == "BLOCK_MAP_END") && block > 0)
            --block;
        else if (name == "FLOW_ENTRY" && flow == 0 && block == 0)
            return true;
    }
    return false;
}

} // namespace

std::vector<YAML::Node> load_yaml_documents(const std::string &text) {
    std::istringstream in(text);
    std::ostringstream tokens;
    YAML::Parser scan(in);
    scan.PrintTokens(tokens);
    if (flow_entry_at_top_level(tokens.str()))
        throw YAML::ParserException(YAML::Mark::null_mark(), "a ',' outside any sequence or map");
    return YAML::LoadAll(text);
}

} // namespace bpfnet
