#include "config/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/error.hpp"

using overlapsim::config::write_file_atomic;

TEST(AtomicFile, WritesWholeFileAndLeavesNoTemp) {
  auto dir = std::filesystem::temp_directory_path() / "overlapsim_atomic_test";
  std::filesystem::create_directories(dir);
  auto path = (dir / "out.json").string();
  write_file_atomic(path, "first");
  write_file_atomic(path, "second");
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "second");
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  std::filesystem::remove_all(dir);
}

TEST(AtomicFile, UnwritableDirectoryThrowsNamingThePath) {
  try {
    write_file_atomic("/nonexistent-dir/out.json", "x");
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/out.json"), std::string::npos);
  }
}

namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

// A run that fails after staging some outputs leaves none of them, and no temp file.
TEST(StagedFiles, NothingIsWrittenUnlessCommitted) {
  const fs::path dir = fresh_dir("overlapsim_staged_abort");
  {
    overlapsim::config::StagedFiles files;
    files.add((dir / "a.json").string(), "a");
    files.add((dir / "b.json").string(), "b");
  }
  EXPECT_TRUE(names_in(dir).empty());
  {
    overlapsim::config::StagedFiles files;
    files.add((dir / "a.json").string(), "a");
    files.add((dir / "b.json").string(), "b");
    files.commit();
  }
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{"a.json", "b.json"}));
  fs::remove_all(dir);
}

// A temp file of a killed writer (a pid that no longer runs) is removed by the next write;
// one of a live process is left alone.
TEST(StagedFiles, OrphanTempFilesOfDeadProcessesAreRemoved) {
  const fs::path dir = fresh_dir("overlapsim_staged_orphan");
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);  // reaped: its pid names no process now
  const std::string dead = "out.json.tmp." + std::to_string(child);
  const std::string live = "out.json.tmp.1";  // init, always running
  std::ofstream(dir / dead) << "half";
  std::ofstream(dir / live) << "other";
  write_file_atomic((dir / "out.json").string(), "whole");
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{"out.json", live}));
  fs::remove_all(dir);
}

TEST(CheckWritable, NamesFlagAndPathAndCreatesNothing) {
  const fs::path dir = fresh_dir("overlapsim_check_writable");
  EXPECT_NO_THROW(overlapsim::config::check_writable((dir / "x.json").string(), "--output"));
  EXPECT_TRUE(names_in(dir).empty());
  for (const std::string& bad : {std::string("/nonexistent-dir/out.json"), dir.string()}) {
    try {
      overlapsim::config::check_writable(bad, "--trace");
      FAIL() << bad;
    } catch (const overlapsim::config::ConfigError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind("--trace: " + bad + ": cannot write", 0), 0u) << msg;
    }
  }
  fs::remove_all(dir);
}
