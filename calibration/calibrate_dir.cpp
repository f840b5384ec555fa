#include "calibration/calibrate_dir.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "calibration/calibrate.hpp"

namespace overlapsim::calibration {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::runtime_error(
      fmt::format("calibrate: {} {} failed: {}", what, path, std::strerror(errno)));
}

void fsync_directory_of(const std::string& path) {
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("opening directory", dir.string());
  if (fsync(fd) != 0) {
    const int e = errno;
    close(fd);
    errno = e;
    fail("fsync of directory", dir.string());
  }
  close(fd);
}

}  // namespace

DirectoryLock::DirectoryLock(const std::string& dir) {
  const std::string path = (fs::path(dir) / kLockFileName).string();
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("opening lock file", path);
  // A POSIX record lock, not flock(2): an flock belongs to the open file description, which
  // fork shares, so a call forked just before calibrate was killed held the directory
  // until it had died too, and a resume right after the kill was refused. A record lock
  // belongs to this process alone and ends with it.
  struct flock whole {};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  if (fcntl(fd_, F_SETLK, &whole) == 0) return;
  const int e = errno;
  struct flock holder {};
  holder.l_type = F_WRLCK;
  holder.l_whence = SEEK_SET;
  const bool found = fcntl(fd_, F_GETLK, &holder) == 0 && holder.l_type != F_UNLCK;
  close(fd_);
  fd_ = -1;
  if (e != EACCES && e != EAGAIN) {
    errno = e;
    fail("locking", path);
  }
  throw CalibrateUnavailable(fmt::format(
      "{} is in use by another calibrate{} (expected one run per --out: wait for it to end, "
      "or use another --out)",
      dir, found ? fmt::format(" (pid {})", holder.l_pid) : ""));
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) close(fd_);  // closing releases the lock
}

void append_durably(const std::string& path, std::string_view text) {
  const bool fresh = !fs::exists(path);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) fail("opening for append", path);
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      close(fd);
      errno = n == 0 ? EIO : e;
      fail("append to", path);
    }
    done += static_cast<std::size_t>(n);
  }
  if (fsync(fd) != 0) {
    const int e = errno;
    close(fd);
    errno = e;
    fail("fsync of", path);
  }
  if (close(fd) != 0) fail("close of", path);
  if (fresh) fsync_directory_of(path);
}

void truncate_durably(const std::string& path, std::size_t size) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) fail("opening", path);
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 || fsync(fd) != 0) {
    const int e = errno;
    close(fd);
    errno = e;
    fail("cutting", path);
  }
  if (close(fd) != 0) fail("close of", path);
}

}  // namespace overlapsim::calibration
