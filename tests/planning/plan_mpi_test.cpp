// `mpirun -np 2 overlapsim plan` splits the sweep over two ranks and writes, on rank 0, the
// very bytes a local run writes. Skips where mpirun is absent or the build has no MPI.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli_test_util.hpp"
#include "tests/planning/plan_fixture.hpp"

namespace overlapsim {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::slurp;

bool on_path(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

class PlanMpi : public testing::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
#ifndef OVERLAPSIM_WITH_MPI
    GTEST_SKIP() << "built without MPI (OVERLAPSIM_MPI=OFF: no MPI C++ library was found)";
#endif
    if (!on_path("mpirun")) GTEST_SKIP() << "no mpirun on PATH (Debian: openmpi-bin)";
    model_ = testing::write_text(dir_ / "model.yaml", testing::plan_model_yaml());
    cluster_ = testing::write_text(dir_ / "cluster.yaml", testing::plan_cluster_yaml());
  }

  // `mpirun -np <ranks> overlapsim <args>` from the repository root. More ranks than
  // cores are allowed (--oversubscribe); Open MPI refuses root without its flag.
  CliRun run_mpi(int ranks, const std::string& args) {
    const std::string root_flag = ::geteuid() == 0 ? " --allow-run-as-root" : "";
    const fs::path out = dir_ / "mpi.stdout", err = dir_ / "mpi.stderr";
    const std::string cmd = "cd " + testing::kRoot + " && mpirun -np " + std::to_string(ranks) +
                            " --oversubscribe" + root_flag + " " + testing::kBin + " " + args +
                            " >" + out.string() + " 2>" + err.string();
    const int status = std::system(cmd.c_str());
    CliRun r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  std::string model_, cluster_;
};

TEST_F(PlanMpi, TwoRanksWriteTheSameBytesAsALocalRun) {
  // Three node counts: three chains of configurations for the two ranks to share.
  const std::string args = "plan -w " + model_ + " -c " + cluster_ +
                           " --nodes 1,2,4 --designs sequential,shaped --simulate-top 3 "
                           "--include 'n1 tp1 pp2 v1 cp1 ep1 dp1 mb1 sp0 full' "
                           "--target-step-time 1 --threads 1 --out ";
  const fs::path local = dir_ / "local", mpi = dir_ / "mpi";
  const CliRun l = run_cli(args + local.string());
  ASSERT_EQ(l.exit_code, 0) << l.err;
  const CliRun m = run_mpi(2, args + mpi.string());
  ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
  EXPECT_NE(m.out.find("x 2 MPI ranks"), std::string::npos) << m.out;
  // Rank 1 simulated its share: its resume file holds results.
  std::ifstream rank1(mpi / ".plan-state.jsonl.rank1");
  int lines = 0;
  for (std::string line; std::getline(rank1, line);) ++lines;
  EXPECT_GE(lines, 2) << "rank 1's resume file: a header and at least one configuration";
  for (const char* f : {"report.md", "results.csv", "results.json", "index.html"})
    EXPECT_EQ(slurp(mpi / f), slurp(local / f)) << f;
}

// Bad input fails on every rank with exit 2; rank 0 alone says why, in one line.
TEST_F(PlanMpi, BadInputExitsTwoWithOneLine) {
  const CliRun m = run_mpi(2, "plan -w " + model_ + " -c " + cluster_ +
                                  " --nodes 1 --target-step-time 1e-6 --threads 1 --out " +
                                  (dir_ / "bad").string());
  EXPECT_NE(m.exit_code, 0);
  EXPECT_NE(m.err.find("is met by no simulated configuration"), std::string::npos) << m.err;
  EXPECT_EQ(m.err.find("is met by no"), m.err.rfind("is met by no")) << "once: " << m.err;
  EXPECT_FALSE(fs::exists(dir_ / "bad" / "report.md"));
}

}  // namespace
}  // namespace overlapsim
