#pragma once
// User/config errors: typed exceptions caught once in app/ (exit code 2).
#include <stdexcept>
#include <string>

namespace overlapsim::config {

// A bad input file or value. what() is one line: "file:line:col: key: message (expected ...)".
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace overlapsim::config
