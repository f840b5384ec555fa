#pragma once
// A profile's YAML text as written, for the commands that rewrite one section of it and keep
// the rest byte for byte (validate --record, fit-shaped).
#include <string>

namespace overlapsim::app {

// The file's bytes; a ConfigError naming `path` where it cannot be read.
std::string read_profile_text(const std::string& path);

}  // namespace overlapsim::app
