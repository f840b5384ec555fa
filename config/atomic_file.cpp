#include "config/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <stdexcept>
#include <unistd.h>

#include "config/error.hpp"

namespace overlapsim::config {

void write_file_atomic(const std::string& path, std::string_view contents) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(::getpid()));
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw config::ConfigError(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
  bool ok = std::fwrite(contents.data(), 1, contents.size(), f) == contents.size();
  ok = (std::fflush(f) == 0) && ok;
  ok = (::fsync(::fileno(f)) == 0) && ok;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    throw config::ConfigError(fmt::format("{}: cannot write: {}", path, std::strerror(err)));
  }
}

}  // namespace overlapsim::config
