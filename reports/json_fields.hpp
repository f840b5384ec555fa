#pragma once
// Tolerant reads of the planner's results.json: a missing key, a null or a value of the
// wrong type reads as absent, so a report from an older or partial document still renders.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace overlapsim::reports {

// j[key] when j is an object holding a non-null key; nullptr otherwise.
inline const nlohmann::json* field(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

inline std::optional<double> number(const nlohmann::json& j, const char* key) {
  const nlohmann::json* v = field(j, key);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

inline std::string text(const nlohmann::json& j, const char* key) {
  const nlohmann::json* v = field(j, key);
  if (v == nullptr) return {};
  if (v->is_string()) return v->get<std::string>();
  if (v->is_boolean() || v->is_number()) return v->dump();
  return {};
}

// j[key] when it is an array; an empty array otherwise.
inline const nlohmann::json& list(const nlohmann::json& j, const char* key) {
  static const nlohmann::json empty = nlohmann::json::array();
  const nlohmann::json* v = field(j, key);
  return v != nullptr && v->is_array() ? *v : empty;
}

inline bool flag(const nlohmann::json& j, const char* key) {
  const nlohmann::json* v = field(j, key);
  return v != nullptr && v->is_boolean() && v->get<bool>();
}

}  // namespace overlapsim::reports
