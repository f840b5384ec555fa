#pragma once
// Where a subcommand's result goes: stdout, or a file written atomically (--output).
#include <string>

namespace overlapsim::app {

// `path` empty: the text on stdout as is; else the file replaced atomically.
void print_or_write(const std::string& text, const std::string& path);

}  // namespace overlapsim::app
