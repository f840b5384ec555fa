#include "app/profile_text.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "config/error.hpp"

namespace overlapsim::app {

std::string read_profile_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config::ConfigError(fmt::format("{}: cannot read the profile", path));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace overlapsim::app
