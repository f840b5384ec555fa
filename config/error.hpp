#pragma once
// User/config errors: typed exceptions caught once in app/ (exit code 2).
#include <stdexcept>
#include <string>

#include "config/text.hpp"

namespace overlapsim::config {

// A bad input file or value. what() is one line: "file:line:col: key: message (expected ...)".
// Messages quote user text (keys, field values, a parser's view of the bad byte), so the
// message is made printable here, once for every thrower: a newline, tab or terminal escape
// in an input comes out as \n, \t or \xHH and cannot break the line or drive a terminal.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& message) : std::runtime_error(printable(message)) {}
  explicit ConfigError(const char* message) : ConfigError(std::string(message)) {}
};

}  // namespace overlapsim::config
