// Reference tables: the loader's checks (each bad input one ConfigError naming the file, the
// key and the expected form) and the evaluation's medians on a machine built in the test.
#include "sim/collectives/reference_table.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/error.hpp"
#include "sim/collectives/reference_eval.hpp"
#include "sim/topology/builders.hpp"

namespace overlapsim::sim {
namespace {

namespace fs = std::filesystem;

const std::string kGood = R"(format: 1
name: t
op: allreduce
cluster: clusters/c.yaml
nodes: 2
ranks_per_node: 2
column: out-of-place
source:
  title: "a post"
  url: https://example.org/post
  date: 2025-01-01
  system: "2 x 2 GPUs"
points:
  - {bytes: 1048576, time: 100us, busbw: 0.00GB/s}
  - {bytes: 65536, time: 20us}
)";

class ReferenceTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("overlapsim_reftable_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "clusters");
    std::ofstream(dir_ / "clusters" / "c.yaml") << "name: c\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& text, const std::string& name = "t.yaml") {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }

  // The one-line error for `text` with `from` replaced by `to`.
  std::string error_of(const std::string& from, const std::string& to) {
    std::string text = kGood;
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    try {
      load_reference_table(write(text));
    } catch (const config::ConfigError& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(ReferenceTableTest, LoadsAndSortsThePoints) {
  const ReferenceTable t = load_reference_table(write(kGood));
  EXPECT_EQ(t.op, CollectiveOp::AllReduce);
  EXPECT_EQ(t.ranks(), 4);
  EXPECT_EQ(t.cluster_file, (dir_ / "clusters" / "c.yaml").lexically_normal().string());
  ASSERT_EQ(t.points.size(), 2u);
  EXPECT_EQ(t.points[0].bytes, 65536u);
  EXPECT_DOUBLE_EQ(t.points[1].time_s, 100e-6);
  EXPECT_DOUBLE_EQ(*t.points[1].busbw_Bps, 0.0);
  EXPECT_FALSE(t.points[0].busbw_Bps);
}

TEST_F(ReferenceTableTest, BadInputNamesFileKeyAndExpectedForm) {
  std::string e = error_of("op: allreduce\n", "");
  EXPECT_NE(e.find("t.yaml"), std::string::npos) << e;
  EXPECT_NE(e.find("op: missing"), std::string::npos) << e;
  e = error_of("op: allreduce", "op: allsum");
  EXPECT_NE(e.find("op: 'allsum' is not allowed (expected one of"), std::string::npos) << e;
  e = error_of("time: 100us", "time: 100 parsecs");
  EXPECT_NE(e.find("points[0].time"), std::string::npos) << e;
  EXPECT_NE(e.find("expected a duration"), std::string::npos) << e;
  e = error_of("busbw: 0.00GB/s", "busbw: fast");
  EXPECT_NE(e.find("busbw"), std::string::npos) << e;
  e = error_of("cluster: clusters/c.yaml", "cluster: clusters/none.yaml");
  EXPECT_NE(e.find("cluster: 'clusters/none.yaml' is not a readable file"), std::string::npos) << e;
  e = error_of("nodes: 2", "nodes: 0");
  EXPECT_NE(e.find("nodes"), std::string::npos) << e;
  e = error_of("column: out-of-place", "column: sideways");
  EXPECT_NE(e.find("column"), std::string::npos) << e;
  e = error_of("  date: 2025-01-01\n", "  date: 2025-01-01\n  author: me\n");
  EXPECT_NE(e.find("author"), std::string::npos) << e;
  for (const std::string& line : {e}) EXPECT_EQ(line.find('\n'), std::string::npos) << line;
}

TEST_F(ReferenceTableTest, FolderWithoutTablesIsAnError) {
  EXPECT_THROW(load_reference_tables((dir_ / "clusters" / "missing").string()),
               config::ConfigError);
  const fs::path empty = dir_ / "empty";
  fs::create_directories(empty);
  EXPECT_THROW(load_reference_tables(empty.string()), config::ConfigError);
  write(kGood);
  EXPECT_EQ(load_reference_tables(dir_.string()).size(), 1u);  // clusters/ is not read
}

TEST(ReferenceEval, MedianOfAbsoluteErrors) {
  EXPECT_DOUBLE_EQ(median_abs({}), 0.0);
  EXPECT_DOUBLE_EQ(median_abs({-0.3, 0.1, 0.2}), 0.2);
  EXPECT_DOUBLE_EQ(median_abs({-0.4, 0.1, 0.2, 0.3}), 0.25);
}

TEST_F(ReferenceTableTest, EvaluatesOnlySizesInRangeIntoTheMedians) {
  ReferenceTable t = load_reference_table(write(kGood));
  const auto machine = [](const std::string&, int nodes) {
    RailFatTreeSpec spec;
    spec.nodes = nodes;
    spec.node = NvSwitchNodeSpec{2, 450e9, 0.3e-6};
    spec.nics_per_node = 2;
    spec.nic_bandwidth_Bps = 50e9;
    spec.gpu_nic_bandwidth_Bps = 63e9;
    spec.gpu_nic_latency_s = 1e-6;
    spec.link_latency_s = 0.15e-6;
    return build_rail_fat_tree(spec);
  };
  const ReferenceValidation v = validate_references({t}, machine, 1 << 20, 1 << 20);
  ASSERT_EQ(v.tables.size(), 1u);
  const auto& points = v.tables[0].points;
  ASSERT_EQ(points.size(), 2u);
  EXPECT_FALSE(points[0].in_range);
  EXPECT_TRUE(points[1].in_range);
  EXPECT_GT(points[1].predicted_s, 0);
  EXPECT_NEAR(points[1].rel_err, (points[1].predicted_s - 100e-6) / 100e-6, 1e-12);
  EXPECT_EQ(v.in_range, 1);
  EXPECT_DOUBLE_EQ(v.median_abs_err, std::abs(points[1].rel_err));
  // A table asking for more GPUs per node than the machine has.
  t.ranks_per_node = 3;
  EXPECT_THROW(validate_references({t}, machine), config::ConfigError);
}

}  // namespace
}  // namespace overlapsim::sim
