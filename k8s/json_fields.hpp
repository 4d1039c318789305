// Reading fields of API objects that may hold anything: a field that is missing or of another type reads as
// absent (nullptr, or an empty string), never as an exception. Shared by the Lease, Event and controller code.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace bpfnet::k8s {

// object[key], or nullptr when object is not an object or has no such key.
inline const nlohmann::json *member(const nlohmann::json &object, const char *key) {
    if (!object.is_object())
        return nullptr;
    auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

// object[key], or nullptr also when it is null (a field an API object writes as null is not set).
inline const nlohmann::json *non_null_member(const nlohmann::json &object, const char *key) {
    const nlohmann::json *value = member(object, key);
    return value && !value->is_null() ? value : nullptr;
}

// object[key] when it is a string, else "".
inline std::string string_member(const nlohmann::json &object, const char *key) {
    const nlohmann::json *value = member(object, key);
    return value && value->is_string() ? value->get<std::string>() : std::string();
}

// object.metadata[key] when it is a string, else "".
inline std::string metadata_string(const nlohmann::json &object, const char *key) {
    const nlohmann::json *meta = member(object, "metadata");
    return meta ? string_member(*meta, key) : std::string();
}

} // namespace bpfnet::k8s
