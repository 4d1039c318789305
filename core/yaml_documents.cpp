/* SPDX-License-Identifier: Apache-2.0 */
#include "core/yaml_documents.hpp"

#include <yaml-cpp/eventhandler.h>

#include <optional>
#include <sstream>

namespace bpfnet {

namespace {

/* Keeps where each document starts; the rest of yaml-cpp's events are not needed to see whether it moves on. */
class DocumentStarts final : public YAML::EventHandler {
public:
    void OnDocumentStart(const YAML::Mark &mark) override { start_ = mark; }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark &, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark &, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark &, const std::string &, YAML::anchor_t, const std::string &) override {}
    void OnSequenceStart(const YAML::Mark &, const std::string &, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark &, const std::string &, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}

    const YAML::Mark &start() const { return start_; }

private:
    YAML::Mark start_ = YAML::Mark::null_mark();
};

std::string stalled_at(const std::string &text, const YAML::Mark &mark) {
    if (mark.pos < 0 || static_cast<std::size_t>(mark.pos) >= text.size())
        return "the end of the text";
    const unsigned char c = static_cast<unsigned char>(text[static_cast<std::size_t>(mark.pos)]);
    if (c < 0x20 || c >= 0x7f)
        return "a byte " + std::to_string(c);
    return "a '" + std::string(1, static_cast<char>(c)) + "'";
}

/*
 * yaml-cpp 0.7 (Debian 12's) loops forever, allocating as it goes, when a token cannot begin a node at a
 * document's top level (a ',' or a '?' outside any collection; found by tests/libfuzz): the parser reports an
 * empty document without consuming the token, and LoadAll asks for the next one at the same place (fixed
 * upstream in 2024, after release 0.8.0: yaml-cpp pull request 1319). A document that starts where the one before it
 * started is that loop; it is refused before LoadAll runs.
 */
void refuse_a_stalled_parse(const std::string &text) {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts documents;
    std::optional<int> previous;
    while (parser.HandleNextDocument(documents)) {
        const YAML::Mark &start = documents.start();
        if (previous && start.pos <= *previous)
            throw YAML::ParserException(start, stalled_at(text, start) + " outside any sequence or map");
        previous = start.pos;
    }
}

} // namespace

std::vector<YAML::Node> load_yaml_documents(const std::string &text) {
    refuse_a_stalled_parse(text);
    return YAML::LoadAll(text);
}

} // namespace bpfnet
