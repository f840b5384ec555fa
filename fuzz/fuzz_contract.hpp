#pragma once
// The error contract every loader keeps under any input: it returns, or it throws
// config::ConfigError whose message is one line naming the file it was given. Anything
// else (another exception type, a message with a newline or without the file name) is a
// finding, so it aborts and libFuzzer keeps the input as a crash.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "config/error.hpp"

namespace overlapsim::fuzz {

[[noreturn]] inline void finding(std::string_view what, std::string_view message) {
  std::fprintf(stderr, "fuzz finding: %.*s: %.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(message.size()), message.data());
  std::abort();
}

// Runs `load`; `file` is the name the loader was given, which every message must contain.
template <typename Load>
void expect_contract(std::string_view file, Load&& load) {
  try {
    load();
  } catch (const config::ConfigError& e) {
    const std::string_view message = e.what();
    if (message.empty()) finding("empty ConfigError", message);
    if (message.find('\n') != std::string_view::npos) finding("multi-line ConfigError", message);
    if (message.find(file) == std::string_view::npos)
      finding("ConfigError without the file name", message);
  } catch (const std::bad_alloc&) {
    finding("bad_alloc", "an allocation failed (expected a size limit with a ConfigError)");
  } catch (const std::exception& e) {
    finding("not a ConfigError (the CLI would exit 1 'internal error')", e.what());
  }
}

}  // namespace overlapsim::fuzz
