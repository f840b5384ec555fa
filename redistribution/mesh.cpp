#include "redistribution/mesh.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>

#include "config/error.hpp"

namespace overlapsim::redistribution {

int Mesh::num_devices() const {
  int n = 1;
  for (int s : axis_sizes) n *= s;
  return n;
}

int Mesh::axis_index(std::string_view name) const {
  for (std::size_t i = 0; i < axis_names.size(); ++i)
    if (axis_names[i] == name) return static_cast<int>(i);
  return -1;
}

std::vector<int> Mesh::coords(int device) const {
  std::vector<int> c(axis_sizes.size());
  for (int a = num_axes() - 1; a >= 0; --a) {
    c[static_cast<std::size_t>(a)] = device % axis_sizes[static_cast<std::size_t>(a)];
    device /= axis_sizes[static_cast<std::size_t>(a)];
  }
  return c;
}

int Mesh::device(const std::vector<int>& c) const {
  int d = 0;
  for (std::size_t a = 0; a < axis_sizes.size(); ++a) d = d * axis_sizes[a] + c[a];
  return d;
}

std::string Mesh::to_string() const {
  std::string s;
  for (std::size_t a = 0; a < axis_sizes.size(); ++a)
    s += fmt::format("{}{}={}", a ? "," : "", axis_names[a], axis_sizes[a]);
  return s;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s.front()))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

}  // namespace

Mesh parse_mesh(std::string_view text, std::string_view what) {
  constexpr const char* kExpected = "axes as name=size separated by commas, e.g. \"x=2,y=4\"";
  Mesh mesh;
  long devices = 1;
  std::string_view rest = text;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    const auto eq = item.find('=');
    const std::string_view name = trim(item.substr(0, eq));
    const std::string_view size_text = eq == std::string_view::npos ? "" : trim(item.substr(eq + 1));
    if (eq == std::string_view::npos || !is_identifier(name) || size_text.empty())
      throw config::ConfigError(
          fmt::format("{}: '{}' is not a mesh (expected {})", what, text, kExpected));
    char* end = nullptr;
    const std::string size_str(size_text);
    const long size = std::strtol(size_str.c_str(), &end, 10);
    if (*end != '\0' || size < 1 || size > (1 << 20))
      throw config::ConfigError(fmt::format(
          "{}: axis '{}' has size '{}' (expected an integer >= 1)", what, name, size_text));
    if (mesh.axis_index(name) >= 0)
      throw config::ConfigError(
          fmt::format("{}: axis '{}' is named twice (expected distinct axis names)", what, name));
    devices *= size;
    if (devices > (1L << 20))
      throw config::ConfigError(
          fmt::format("{}: '{}' has more than 2^20 devices (expected a smaller mesh)", what, text));
    mesh.axis_names.emplace_back(name);
    mesh.axis_sizes.push_back(static_cast<int>(size));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return mesh;
}

std::vector<int> group_of(const Mesh& mesh, const std::vector<int>& axes, int device) {
  std::vector<int> c = mesh.coords(device);
  int n = 1;
  for (int a : axes) n *= mesh.axis_sizes[static_cast<std::size_t>(a)];
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    int rem = k;
    for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
      const int s = mesh.axis_sizes[static_cast<std::size_t>(*it)];
      c[static_cast<std::size_t>(*it)] = rem % s;
      rem /= s;
    }
    out.push_back(mesh.device(c));
  }
  return out;
}

std::vector<std::vector<int>> groups(const Mesh& mesh, const std::vector<int>& axes) {
  std::vector<std::vector<int>> out;
  std::vector<bool> seen(static_cast<std::size_t>(mesh.num_devices()), false);
  for (int d = 0; d < mesh.num_devices(); ++d) {
    if (seen[static_cast<std::size_t>(d)]) continue;
    out.push_back(group_of(mesh, axes, d));
    for (int m : out.back()) seen[static_cast<std::size_t>(m)] = true;
  }
  return out;
}

}  // namespace overlapsim::redistribution
