#pragma once
// calibrate's output directory: one run at a time (a write lock on DIR/.calibrate.lock,
// held until the run ends or dies, and not inherited by overlap-bench), and appends and
// cuts of calibration.csv that are on disk when they return. Every failed write, fsync or
// truncate throws: a row calibrate believes kept must be on disk.
#include <cstddef>
#include <string>
#include <string_view>

namespace overlapsim::calibration {

class DirectoryLock {
 public:
  // Takes the lock without waiting. Throws CalibrateUnavailable when another process holds
  // it (naming its pid), std::runtime_error when the lock file cannot be opened. A process
  // holds the lock once: a second DirectoryLock on the same directory in the same process
  // succeeds, and its end releases both (POSIX record locks).
  explicit DirectoryLock(const std::string& dir);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

// The lock file's name inside the directory.
inline constexpr std::string_view kLockFileName = ".calibrate.lock";

// Appends `text` (write until done, then fsync); creates the file, and fsyncs its
// directory when it did. Throws std::runtime_error naming the path on any failure.
void append_durably(const std::string& path, std::string_view text);

// Cuts the file to `size` bytes and fsyncs it. Throws std::runtime_error on failure.
void truncate_durably(const std::string& path, std::size_t size);

}  // namespace overlapsim::calibration
