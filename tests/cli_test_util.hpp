#pragma once
// What the CLI tests share: running the built `overlapsim` as users run it (from the
// repository root, stdout and stderr captured to files) in a per-test temporary directory.
// Each test target defines OVERLAPSIM_BIN; OVERLAPSIM_SOURCE_DIR comes from
// overlapsim_add_test.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace overlapsim::testing {

inline const std::string kBin = OVERLAPSIM_BIN;
inline const std::string kRoot = OVERLAPSIM_SOURCE_DIR;

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("overlapsim_" + std::string(info->test_suite_name()) + "_" +
            std::to_string(::getpid()) + "_" + info->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // `overlapsim <args>` from the repository root (where profile paths in cluster files
  // are relative to), with `env` assignments in front when given.
  CliRun run_cli(const std::string& args, const std::string& env = "") {
    const std::filesystem::path out = dir_ / "stdout", err = dir_ / "stderr";
    const std::string cmd = "cd " + kRoot + " && " + env + " " + kBin + " " + args + " >" +
                            out.string() + " 2>" + err.string();
    const int status = std::system(cmd.c_str());
    CliRun r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  std::filesystem::path dir_;
};

}  // namespace overlapsim::testing
