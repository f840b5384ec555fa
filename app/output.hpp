#pragma once
// Where a subcommand's result goes: stdout, or a file written atomically (--output).
#include <string>

namespace overlapsim::app {

// `path` empty: the text on stdout as is; else the file replaced atomically.
void print_or_write(const std::string& text, const std::string& path);

// Before the run: a ConfigError naming `flag` unless `path` (when not empty) can be
// written, so an unwritable output is reported at once, not after the run.
void check_output(const std::string& path, const std::string& flag);

}  // namespace overlapsim::app
