#include "config/atomic_file.hpp"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

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
