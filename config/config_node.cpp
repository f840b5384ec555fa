#include "config/config_node.hpp"

#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/units.hpp"

namespace overlapsim::config {

ConfigNode::ConfigNode(YAML::Node node, std::string file, std::string path)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {}

ConfigNode ConfigNode::load_file(const std::string& file) {
  try {
    return ConfigNode(YAML::LoadFile(file), file, "");
  } catch (const YAML::BadFile&) {
    throw ConfigError(fmt::format("{}: cannot open file (expected a readable YAML file)", file));
  } catch (const YAML::ParserException& e) {
    throw ConfigError(fmt::format("{}:{}:{}: YAML syntax error: {}", file, e.mark.line + 1,
                                  e.mark.column + 1, e.msg));
  }
}

ConfigNode ConfigNode::load_string(const std::string& text, const std::string& name) {
  try {
    return ConfigNode(YAML::Load(text), name, "");
  } catch (const YAML::ParserException& e) {
    throw ConfigError(fmt::format("{}:{}:{}: YAML syntax error: {}", name, e.mark.line + 1,
                                  e.mark.column + 1, e.msg));
  }
}

std::string ConfigNode::where() const {
  const auto mark = node_.Mark();
  std::string pos = file_;
  if (!mark.is_null()) pos += fmt::format(":{}:{}", mark.line + 1, mark.column + 1);
  return fmt::format("{}: {}", pos, path_.empty() ? "(top level)" : path_);
}

void ConfigNode::fail(const std::string& message) const {
  throw ConfigError(fmt::format("{}: {}", where(), message));
}

void ConfigNode::fail_key(const std::string& key, const std::string& message) const {
  std::string full = path_.empty() ? key : path_ + "." + key;
  if (node_.IsMap() && node_[key]) {
    const auto mark = node_[key].Mark();
    throw ConfigError(
        fmt::format("{}:{}:{}: {}: {}", file_, mark.line + 1, mark.column + 1, full, message));
  }
  const auto mark = node_.Mark();
  if (!mark.is_null())
    throw ConfigError(
        fmt::format("{}:{}:{}: {}: {}", file_, mark.line + 1, mark.column + 1, full, message));
  throw ConfigError(fmt::format("{}: {}: {}", file_, full, message));
}

bool ConfigNode::has(const std::string& key) const {
  return node_.IsMap() && node_[key] && !node_[key].IsNull();
}

ConfigNode ConfigNode::child(const std::string& key) const {
  if (!node_.IsMap()) fail(fmt::format("expected a map containing '{}'", key));
  if (!node_[key]) fail_key(key, "missing (required)");
  return ConfigNode(node_[key], file_, path_.empty() ? key : path_ + "." + key);
}

std::optional<ConfigNode> ConfigNode::optional_child(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return child(key);
}

ConfigNode ConfigNode::at(std::size_t index) const {
  if (!node_.IsSequence()) fail("expected a list");
  if (index >= node_.size()) fail(fmt::format("index {} out of range", index));
  return ConfigNode(node_[index], file_, fmt::format("{}[{}]", path_, index));
}

std::vector<std::string> ConfigNode::keys() const {
  std::vector<std::string> out;
  if (!node_.IsMap()) return out;
  for (const auto& kv : node_) out.push_back(kv.first.as<std::string>());
  return out;
}

std::string ConfigNode::as_string() const {
  if (!node_.IsScalar()) fail("expected a scalar value");
  return node_.Scalar();
}

double ConfigNode::as_double() const {
  std::string s = as_string();
  try {
    std::size_t used = 0;
    double v = std::stod(s, &used);
    if (used != s.size() || !std::isfinite(v)) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    fail(fmt::format("'{}' is not a number (expected a finite number)", s));
  }
}

std::int64_t ConfigNode::as_int() const {
  std::string s = as_string();
  try {
    std::size_t used = 0;
    long long v = std::stoll(s, &used);
    if (used != s.size()) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    fail(fmt::format("'{}' is not an integer (expected an integer)", s));
  }
}

bool ConfigNode::as_bool() const {
  std::string s = as_string();
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  fail(fmt::format("'{}' is not a boolean (expected true or false)", s));
}

std::uint64_t ConfigNode::as_bytes() const {
  std::string s = as_string();
  if (auto v = parse_bytes(s)) return *v;
  fail(fmt::format("'{}' is not a size (expected {})", s, kExpectedBytes));
}

double ConfigNode::as_bandwidth_Bps() const {
  std::string s = as_string();
  auto v = parse_bandwidth_Bps(s);
  if (!v) fail(fmt::format("'{}' is not a bandwidth (expected {})", s, kExpectedBandwidth));
  if (*v <= 0) fail(fmt::format("'{}' must be positive (expected {})", s, kExpectedBandwidth));
  return *v;
}

double ConfigNode::as_duration_s() const {
  std::string s = as_string();
  if (auto v = parse_duration_s(s)) return *v;
  fail(fmt::format("'{}' is not a duration (expected {})", s, kExpectedDuration));
}

double ConfigNode::as_flops_per_s() const {
  std::string s = as_string();
  auto v = parse_flops_per_s(s);
  if (!v) fail(fmt::format("'{}' is not a rate (expected {})", s, kExpectedFlops));
  if (*v <= 0) fail(fmt::format("'{}' must be positive (expected {})", s, kExpectedFlops));
  return *v;
}

std::string ConfigNode::get_string(const std::string& key) const { return child(key).as_string(); }
std::string ConfigNode::get_string(const std::string& key, const std::string& def) const {
  return has(key) ? child(key).as_string() : def;
}

std::string ConfigNode::get_enum(const std::string& key,
                                 const std::vector<std::string>& allowed) const {
  std::string v = get_string(key);
  for (const auto& a : allowed)
    if (a == v) return v;
  fail_key(key, fmt::format("'{}' is not allowed (expected one of: {})", v,
                            fmt::join(allowed, ", ")));
}

std::string ConfigNode::get_enum(const std::string& key, const std::vector<std::string>& allowed,
                                 const std::string& def) const {
  return has(key) ? get_enum(key, allowed) : def;
}

double ConfigNode::get_double(const std::string& key) const { return child(key).as_double(); }
double ConfigNode::get_double(const std::string& key, double def) const {
  return has(key) ? child(key).as_double() : def;
}
double ConfigNode::get_positive(const std::string& key) const {
  double v = get_double(key);
  if (!(v > 0)) fail_key(key, fmt::format("{} is not positive (expected a number > 0)", v));
  return v;
}
std::int64_t ConfigNode::get_int(const std::string& key) const { return child(key).as_int(); }
std::int64_t ConfigNode::get_int(const std::string& key, std::int64_t def) const {
  return has(key) ? child(key).as_int() : def;
}
std::int64_t ConfigNode::get_positive_int(const std::string& key) const {
  auto v = get_int(key);
  if (v < 1) fail_key(key, fmt::format("{} is not positive (expected an integer >= 1)", v));
  return v;
}
std::int64_t ConfigNode::get_positive_int(const std::string& key, std::int64_t def) const {
  return has(key) ? get_positive_int(key) : def;
}
bool ConfigNode::get_bool(const std::string& key, bool def) const {
  return has(key) ? child(key).as_bool() : def;
}
std::uint64_t ConfigNode::get_bytes(const std::string& key) const { return child(key).as_bytes(); }
std::uint64_t ConfigNode::get_bytes(const std::string& key, std::uint64_t def) const {
  return has(key) ? child(key).as_bytes() : def;
}
double ConfigNode::get_bandwidth_Bps(const std::string& key) const {
  return child(key).as_bandwidth_Bps();
}
double ConfigNode::get_duration_s(const std::string& key) const {
  return child(key).as_duration_s();
}
double ConfigNode::get_duration_s(const std::string& key, double def) const {
  return has(key) ? child(key).as_duration_s() : def;
}
double ConfigNode::get_flops_per_s(const std::string& key) const {
  return child(key).as_flops_per_s();
}

void ConfigNode::check_keys(const std::vector<std::string>& allowed) const {
  if (!node_.IsMap()) fail("expected a map");
  for (const auto& kv : node_) {
    const std::string key = kv.first.as<std::string>();
    bool ok = false;
    for (const auto& a : allowed) ok = ok || a == key;
    if (!ok) {
      const auto mark = kv.first.Mark();  // the key itself, not its value
      throw ConfigError(fmt::format("{}:{}:{}: {}: unknown key (expected one of: {})", file_,
                                    mark.line + 1, mark.column + 1,
                                    path_.empty() ? key : path_ + "." + key,
                                    fmt::join(allowed, ", ")));
    }
  }
}

void ConfigNode::check_keys(const std::vector<ParamDoc>& params) const {
  std::vector<std::string> allowed;
  allowed.reserve(params.size());
  for (const auto& p : params) allowed.push_back(p.key);
  check_keys(allowed);
}

}  // namespace overlapsim::config
