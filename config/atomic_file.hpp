#pragma once
// Results are written atomically: a temp file beside the target, fsynced, then rename(2)
// and an fsync of the directory, so a crash or bad input never leaves a half-written
// output and a finished rename survives a power loss. Several outputs of one run are
// staged together and renamed only once every one of them is written, so a run that
// fails part-way leaves nothing behind. Temp files are named <target>.tmp.<pid>; one
// left by a killed process is removed by the next write of the same target.
#include <string>
#include <string_view>
#include <vector>

namespace overlapsim::config {

// Throws ConfigError naming the path when the write or rename fails.
void write_file_atomic(const std::string& path, std::string_view contents);

// Before a run: throws ConfigError "<flag>: <path>: cannot write: <reason> (expected ...)"
// unless a file can be created beside `path` and `path` is not a directory. Creates
// nothing that outlives the call.
void check_writable(const std::string& path, const std::string& flag);

// Before a run: throws ConfigError "<flag>: <dir>: cannot create directory: <reason>
// (expected ...)" unless `dir` is a directory or a directory can be made where it would
// go (tried in its nearest existing ancestor). Creates nothing that outlives the call.
void check_directory_creatable(const std::string& dir, const std::string& flag);

// Creates `dir` and its missing parents; throws ConfigError as above where that fails.
void make_directories(const std::string& dir, const std::string& flag);

// Outputs of one run: add() writes each to its temp file now; commit() renames them all.
// Temp files not committed are removed when the object goes out of scope (an exception
// on the way out of the run).
class StagedFiles {
 public:
  StagedFiles() = default;
  StagedFiles(const StagedFiles&) = delete;
  StagedFiles& operator=(const StagedFiles&) = delete;
  ~StagedFiles();

  void add(const std::string& path, std::string_view contents);
  void commit();

 private:
  struct Staged {
    std::string path, tmp;
  };
  std::vector<Staged> staged_;
};

}  // namespace overlapsim::config
