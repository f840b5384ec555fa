#include "app/output.hpp"

#include <cstdio>

#include "config/atomic_file.hpp"

namespace overlapsim::app {

void print_or_write(const std::string& text, const std::string& path) {
  if (path.empty())
    std::fwrite(text.data(), 1, text.size(), stdout);
  else
    config::write_file_atomic(path, text);
}

void check_output(const std::string& path, const std::string& flag) {
  if (!path.empty()) config::check_writable(path, flag);
}

}  // namespace overlapsim::app
