#pragma once
// A checked view of one YAML node. It remembers the file and the key path, so every
// error reads "file:line:col: key.path: what was wrong (expected ...)". Loaders declare
// the keys they accept (SST-style: key, description, default, unit) and call
// check_keys(), so an unknown key is an error rather than silently ignored.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/error.hpp"

namespace overlapsim::config {

// One documented parameter of a config struct; loaders keep a table of these so the
// CLI can print them and check_keys() can reject what is not listed.
struct ParamDoc {
  std::string key;
  std::string description;
  std::string default_value;  // empty: required
  std::string unit;           // "bytes", "bytes/s", "s", "" ...
};

class ConfigNode {
 public:
  ConfigNode(YAML::Node node, std::string file, std::string path);

  // Parses a file; a syntax error becomes a ConfigError naming the file and position, as
  // do a duplicate key, a key that is a list or map, a second document, text that is
  // not UTF-8 and a directory given as the file.
  static ConfigNode load_file(const std::string& file);
  static ConfigNode load_string(const std::string& text, const std::string& name);

  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  const YAML::Node& yaml() const { return node_; }
  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }
  bool has(const std::string& key) const;
  std::size_t size() const { return node_.size(); }

  ConfigNode child(const std::string& key) const;  // required map child
  std::optional<ConfigNode> optional_child(const std::string& key) const;
  ConfigNode at(std::size_t index) const;          // sequence element
  std::vector<std::string> keys() const;           // map keys in file order

  // Scalars of this node.
  std::string as_string() const;
  double as_double() const;
  std::int64_t as_int() const;  // any int64; text that is not exactly one is an error
  int as_int32() const;         // as_int() that must also fit an int
  bool as_bool() const;
  std::uint64_t as_bytes() const;
  double as_bandwidth_Bps() const;
  double as_duration_s() const;
  double as_flops_per_s() const;

  // Keyed scalars: required if no default is given.
  std::string get_string(const std::string& key) const;
  std::string get_string(const std::string& key, const std::string& def) const;
  std::string get_enum(const std::string& key, const std::vector<std::string>& allowed) const;
  std::string get_enum(const std::string& key, const std::vector<std::string>& allowed,
                       const std::string& def) const;
  double get_double(const std::string& key) const;
  double get_double(const std::string& key, double def) const;
  double get_positive(const std::string& key) const;  // > 0
  std::int64_t get_int(const std::string& key) const;
  std::int64_t get_int(const std::string& key, std::int64_t def) const;
  std::int64_t get_positive_int(const std::string& key) const;  // >= 1
  std::int64_t get_positive_int(const std::string& key, std::int64_t def) const;
  // The same for values held in an int: a value past INT_MAX is an error, never wrapped.
  int get_int32(const std::string& key) const;
  int get_int32(const std::string& key, int def) const;
  int get_positive_int32(const std::string& key) const;  // >= 1
  int get_positive_int32(const std::string& key, int def) const;
  bool get_bool(const std::string& key, bool def) const;
  std::uint64_t get_bytes(const std::string& key) const;
  std::uint64_t get_bytes(const std::string& key, std::uint64_t def) const;
  double get_bandwidth_Bps(const std::string& key) const;  // > 0 required
  double get_duration_s(const std::string& key) const;
  double get_duration_s(const std::string& key, double def) const;
  double get_flops_per_s(const std::string& key) const;  // > 0 required

  // Rejects any key of this map not in `allowed`.
  void check_keys(const std::vector<std::string>& allowed) const;
  void check_keys(const std::vector<ParamDoc>& params) const;

  // Throws a ConfigError located at this node (or its child `key`).
  [[noreturn]] void fail(const std::string& message) const;
  [[noreturn]] void fail_key(const std::string& key, const std::string& message) const;

 private:
  std::string where() const;
  YAML::Node node_;
  std::string file_;
  std::string path_;
};

}  // namespace overlapsim::config
