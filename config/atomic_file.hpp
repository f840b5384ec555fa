#pragma once
// Results are written atomically: a temp file beside the target, then rename(2),
// so a crash or bad input never leaves a half-written output.
#include <string>
#include <string_view>

namespace overlapsim::config {

// Throws std::runtime_error naming the path when the write or rename fails.
void write_file_atomic(const std::string& path, std::string_view contents);

}  // namespace overlapsim::config
