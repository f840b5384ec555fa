#include "config/config_node.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "config/integers.hpp"
#include "config/text.hpp"
#include "config/units.hpp"

namespace overlapsim::config {

ConfigNode::ConfigNode(YAML::Node node, std::string file, std::string path)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {}

namespace {

// Past this many nodes a file is an alias bomb, not a configuration (the shipped files
// have a few thousand).
constexpr std::size_t kMaxNodes = 1'000'000;
constexpr int kMaxDepth = 200;

[[noreturn]] void fail_at(const std::string& file, const YAML::Mark& mark,
                          const std::string& message) {
  if (mark.is_null()) throw ConfigError(fmt::format("{}: {}", file, message));
  throw ConfigError(fmt::format("{}:{}:{}: {}", file, mark.line + 1, mark.column + 1, message));
}

std::string join_key(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

void check_utf8(const std::string& file, const YAML::Node& node, const std::string& path,
                const std::string& text) {
  const std::size_t bad = first_invalid_utf8(text);
  if (bad != std::string::npos)
    fail_at(file, node.Mark(),
            fmt::format("{}: byte {} is not UTF-8 (expected UTF-8 text)",
                        path.empty() ? "(top level)" : path, bad + 1));
}

// What yaml-cpp accepts but a configuration must not hold: a key given twice (yaml-cpp
// keeps the first silently), a key that is a list or map, text that is not UTF-8.
void check_tree(const std::string& file, const YAML::Node& node, const std::string& path, int depth,
                std::size_t& visited) {
  if (++visited > kMaxNodes)
    fail_at(
        file, node.Mark(),
        fmt::format("more than {} nodes (expected a configuration, not an alias bomb)", kMaxNodes));
  if (depth > kMaxDepth)
    fail_at(file, node.Mark(),
            fmt::format("{}: nested deeper than {} levels", path.empty() ? "(top level)" : path,
                        kMaxDepth));
  if (node.IsScalar()) {
    check_utf8(file, node, path, node.Scalar());
  } else if (node.IsSequence()) {
    std::size_t i = 0;
    for (const auto& item : node)
      check_tree(file, item, fmt::format("{}[{}]", path, i++), depth + 1, visited);
  } else if (node.IsMap()) {
    std::set<std::string> seen;
    for (const auto& kv : node) {
      if (!kv.first.IsScalar())
        fail_at(file, kv.first.Mark(),
                fmt::format("{}: a key that is a {} (expected a plain text key)",
                            path.empty() ? "(top level)" : path,
                            kv.first.IsSequence() ? "list"
                            : kv.first.IsMap()    ? "map"
                                                  : "null"));
      const std::string& key = kv.first.Scalar();
      check_utf8(file, kv.first, join_key(path, "(key)"), key);
      if (!seen.insert(key).second)
        fail_at(file, kv.first.Mark(),
                fmt::format("{}: duplicate key (expected each key once in a map)",
                            join_key(path, key)));
      check_tree(file, kv.second, join_key(path, key), depth + 1, visited);
    }
  }
}

// The longest duration a file may give: 10^6 s (11.6 days), far above any latency, kernel
// or step, and far enough below the double range that sums of a step's events stay finite.
constexpr double kMaxDuration_s = 1e6;

// Records where each document of a stream starts; ignores everything else.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> marks;
  void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

ConfigNode parse_checked(const std::string& text, const std::string& file) {
  // Not YAML::LoadAll: on some malformed streams (a ',' after a top-level flow collection,
  // such as "[1], 2") yaml-cpp 0.7 reports empty documents without end, and LoadAll
  // collects them until memory runs out (jbeder/yaml-cpp issue 1040, fixed upstream by
  // pull request 1319, after the Debian package). Two documents are enough to refuse a file.
  YAML::Node root;
  DocumentStarts starts;
  try {
    root = YAML::Load(text);
    std::istringstream in(text);
    YAML::Parser parser(in);
    while (starts.marks.size() < 2 && parser.HandleNextDocument(starts)) {
    }
  } catch (const YAML::ParserException& e) {
    throw ConfigError(fmt::format("{}:{}:{}: YAML syntax error: {}", file, e.mark.line + 1,
                                  e.mark.column + 1, e.msg));
  }
  if (starts.marks.size() > 1)
    fail_at(file, starts.marks[1],
            "a second YAML document (expected one document per file; remove the '---')");
  std::size_t visited = 0;
  check_tree(file, root, "", 0, visited);
  return ConfigNode(root, file, "");
}

}  // namespace

ConfigNode ConfigNode::load_file(const std::string& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    throw ConfigError(fmt::format("{}: is a directory (expected a readable YAML file)", file));
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad())
    throw ConfigError(fmt::format("{}: cannot open file (expected a readable YAML file)", file));
  return parse_checked(text.str(), file);
}

ConfigNode ConfigNode::load_string(const std::string& text, const std::string& name) {
  return parse_checked(text, name);
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
  for (const auto& kv : node_) {
    if (!kv.first.IsScalar()) fail("a key that is not plain text (expected a plain text key)");
    out.push_back(kv.first.Scalar());
  }
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
  if (auto v = parse_int(s)) return *v;
  fail(fmt::format("'{}' is not an integer (expected an integer between {} and {})", s,
                   std::numeric_limits<std::int64_t>::min(),
                   std::numeric_limits<std::int64_t>::max()));
}

int ConfigNode::as_int32() const {
  const std::int64_t v = as_int();
  if (auto n = narrow_int<int>(v)) return *n;
  fail(fmt::format("{} is out of range (expected an integer between {} and {})", v,
                   std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
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
  // Bytes over a slower rate, summed over a step, leave the double range (1e-320 B/s).
  if (*v < 1) fail(fmt::format("'{}' is below 1 B/s (expected {})", s, kExpectedBandwidth));
  return *v;
}

double ConfigNode::as_duration_s() const {
  std::string s = as_string();
  const auto v = parse_duration_s(s);
  if (!v) fail(fmt::format("'{}' is not a duration (expected {})", s, kExpectedDuration));
  // Latencies and kernel times are microseconds to seconds; a value near the double range
  // (1e308) turns the sums of a step into infinity.
  if (std::abs(*v) > kMaxDuration_s)
    fail(fmt::format("'{}' is longer than 10^6 s (expected {})", s,
                     kExpectedDuration));
  return *v;
}

double ConfigNode::as_flops_per_s() const {
  std::string s = as_string();
  auto v = parse_flops_per_s(s);
  if (!v) fail(fmt::format("'{}' is not a rate (expected {})", s, kExpectedFlops));
  if (*v <= 0) fail(fmt::format("'{}' must be positive (expected {})", s, kExpectedFlops));
  if (*v < 1) fail(fmt::format("'{}' is below 1 FLOP/s (expected {})", s, kExpectedFlops));
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
int ConfigNode::get_int32(const std::string& key) const { return child(key).as_int32(); }
int ConfigNode::get_int32(const std::string& key, int def) const {
  return has(key) ? child(key).as_int32() : def;
}
int ConfigNode::get_positive_int32(const std::string& key) const {
  const int v = get_int32(key);
  if (v < 1) fail_key(key, fmt::format("{} is not positive (expected an integer >= 1)", v));
  return v;
}
int ConfigNode::get_positive_int32(const std::string& key, int def) const {
  return has(key) ? get_positive_int32(key) : def;
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
    if (!kv.first.IsScalar()) fail("a key that is not plain text (expected a plain text key)");
    const std::string key = kv.first.Scalar();
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
