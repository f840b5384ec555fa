#include "config/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "config/error.hpp"
#include "config/integers.hpp"

namespace overlapsim::config {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& path) {
  return fmt::format("{}.tmp.{}", path, static_cast<long>(::getpid()));
}

std::string directory_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

[[noreturn]] void cannot_write(const std::string& path, int err) {
  throw ConfigError(fmt::format("{}: cannot write: {} (expected a writable file path)", path,
                                std::strerror(err)));
}

// Temp files of this target left by processes that no longer run (killed mid-write):
// <target>.tmp.<pid> with no live <pid>. A live pid (ours, or a concurrent writer) is kept.
void remove_orphans(const std::string& path) {
  const fs::path target(path);
  const std::string prefix = target.filename().string() + ".tmp.";
  std::error_code ec;
  fs::directory_iterator it(fs::path(directory_of(path)), ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const auto pid = parse_int(std::string_view(name).substr(prefix.size()));
    if (!pid || *pid <= 0 || !narrow_int<pid_t>(*pid)) continue;
    if (::kill(static_cast<pid_t>(*pid), 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove(it->path(), ignored);
    }
  }
}

// Writes `contents` to `tmp` and fsyncs it; returns 0 or the errno of the first failure
// (the temp file is removed then).
int write_temp(const std::string& tmp, std::string_view contents) {
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return errno;
  int err = 0;
  const char* p = contents.data();
  std::size_t left = contents.size();
  while (left > 0 && err == 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      err = errno;
    else {
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) ::unlink(tmp.c_str());
  return err;
}

// The rename itself is durable only once the directory entry is on disk.
void fsync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // nothing to sync through; the data itself is already synced
  ::fsync(fd);
  ::close(fd);
}

void reject_directory(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) cannot_write(path, EISDIR);
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view contents) {
  StagedFiles files;
  files.add(path, contents);
  files.commit();
}

void check_writable(const std::string& path, const std::string& flag) {
  try {
    if (path.empty()) cannot_write(path, ENOENT);
    reject_directory(path);
    const std::string tmp = temp_path(path);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) cannot_write(path, errno);
    ::close(fd);
    ::unlink(tmp.c_str());
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: {}", flag, e.what()));
  }
}

namespace {

[[noreturn]] void cannot_create(const std::string& dir, const std::string& flag, int err) {
  throw ConfigError(
      fmt::format("{}: {}: cannot create directory: {} (expected a writable directory path)", flag,
                  dir, std::strerror(err)));
}

}  // namespace

void check_directory_creatable(const std::string& dir, const std::string& flag) {
  if (dir.empty()) cannot_create(dir, flag, ENOENT);
  std::error_code ec;
  fs::path at = fs::absolute(dir, ec);
  if (ec) cannot_create(dir, flag, ENOENT);
  if (fs::is_directory(at, ec)) return;
  // The nearest ancestor that exists must be a directory that takes a new entry.
  while (!fs::exists(at, ec) && at.has_parent_path() && at.parent_path() != at)
    at = at.parent_path();
  if (!fs::is_directory(at, ec)) cannot_create(dir, flag, ENOTDIR);
  const std::string probe = (at / (".overlapsim-check." + std::to_string(::getpid()))).string();
  if (::mkdir(probe.c_str(), 0777) != 0) cannot_create(dir, flag, errno);
  ::rmdir(probe.c_str());
}

void make_directories(const std::string& dir, const std::string& flag) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) cannot_create(dir, flag, ec.value());
  if (!fs::is_directory(dir, ec)) cannot_create(dir, flag, ENOTDIR);
}

StagedFiles::~StagedFiles() {
  for (const Staged& s : staged_) ::unlink(s.tmp.c_str());
}

void StagedFiles::add(const std::string& path, std::string_view contents) {
  reject_directory(path);
  remove_orphans(path);
  const std::string tmp = temp_path(path);
  for (const Staged& s : staged_)
    if (s.path == path)
      throw ConfigError(
          fmt::format("{}: written twice in one run (expected distinct outputs)", path));
  if (const int err = write_temp(tmp, contents); err != 0) cannot_write(path, err);
  staged_.push_back({path, tmp});
}

void StagedFiles::commit() {
  std::set<std::string> dirs;
  // Renames cannot fail for a lack of space; what can fail (a target made a directory
  // since) is checked on each before the first rename.
  for (const Staged& s : staged_) reject_directory(s.path);
  while (!staged_.empty()) {
    const Staged s = staged_.front();
    if (std::rename(s.tmp.c_str(), s.path.c_str()) != 0) cannot_write(s.path, errno);
    staged_.erase(staged_.begin());
    dirs.insert(directory_of(s.path));
  }
  for (const std::string& dir : dirs) fsync_directory(dir);
}

}  // namespace overlapsim::config
