#pragma once
// A YAML double-quoted scalar for text written by hand (not through yaml-cpp's emitter):
// strings YAML could read as numbers or booleans (versions such as 13.0, GPU names) stay
// strings. Header-only, C++17: the kernels-only build uses it too.
#include <string>

namespace overlapsim::config {

inline std::string yaml_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace overlapsim::config
