#include "sim/profile/attention_table.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace overlapsim::sim {
namespace {

// Two head dimensions x two sequence lengths; round numbers so every expectation is a
// closed form of the bilinear rule (linear in d, in log s).
AttentionTable two_by_two() {
  AttentionTable t;
  t.head_dims = {64, 128};
  t.seq_lens = {1024, 4096};
  t.forward = {0.2, 0.4,   // d 64
               0.4, 0.6};  // d 128
  t.backward = {0.1, 0.3, 0.3, 0.5};
  t.validate();
  return t;
}

TEST(AttentionTable, GridPointsAreTheirOwnValues) {
  const AttentionTable t = two_by_two();
  EXPECT_DOUBLE_EQ(t.efficiency(false, 64, 1024), 0.2);
  EXPECT_DOUBLE_EQ(t.efficiency(false, 128, 4096), 0.6);
  EXPECT_DOUBLE_EQ(t.efficiency(true, 128, 1024), 0.3);
}

TEST(AttentionTable, LinearInHeadDimensionAndInLogSequence) {
  const AttentionTable t = two_by_two();
  // 2048 is the log-midpoint of 1024 and 4096; 96 the midpoint of 64 and 128.
  EXPECT_NEAR(t.efficiency(false, 64, 2048), 0.3, 1e-12);
  EXPECT_NEAR(t.efficiency(false, 96, 1024), 0.3, 1e-12);
  EXPECT_NEAR(t.efficiency(false, 96, 2048), 0.4, 1e-12);
  EXPECT_NEAR(t.efficiency(true, 112, 2048), 0.25 * 0.2 + 0.75 * 0.4, 1e-12);
}

TEST(AttentionTable, ClampedAtTheEdges) {
  const AttentionTable t = two_by_two();
  EXPECT_DOUBLE_EQ(t.efficiency(false, 32, 512), 0.2);
  EXPECT_DOUBLE_EQ(t.efficiency(false, 256, 65536), 0.6);
  EXPECT_NEAR(t.efficiency(true, 256, 2048), 0.4, 1e-12);
}

// A call with few query tiles keeps the occupancy factor of the grid's efficiency: linear in
// log(tiles) between points, the end points' factors beyond them.
TEST(AttentionTable, FewQueryTilesTakeTheOccupancyFactor) {
  AttentionTable t = two_by_two();
  t.occupancy_forward.points = {{100, 0.5}, {400, 1.0}};
  t.validate();
  EXPECT_DOUBLE_EQ(t.efficiency(false, 64, 1024, 50), 0.2 * 0.5);
  EXPECT_NEAR(t.efficiency(false, 64, 1024, 200), 0.2 * 0.75, 1e-12);  // log-midpoint
  EXPECT_DOUBLE_EQ(t.efficiency(false, 64, 1024, 4000), 0.2);
  EXPECT_DOUBLE_EQ(t.efficiency(false, 64, 1024), 0.2);     // tiles not given
  EXPECT_DOUBLE_EQ(t.efficiency(true, 64, 1024, 50), 0.1);  // no backward curve: no loss
  t.occupancy_backward.points = {{100, 0.9}, {50, 1.0}};
  EXPECT_THROW(t.validate(), std::invalid_argument);
}

TEST(AttentionTable, ValidateNamesWhatIsWrong) {
  AttentionTable t = two_by_two();
  t.forward.pop_back();
  EXPECT_THROW(t.validate(), std::invalid_argument);
  t = two_by_two();
  t.seq_lens = {4096, 1024};
  EXPECT_THROW(t.validate(), std::invalid_argument);
  t = two_by_two();
  t.backward[0] = 1.5;
  try {
    t.validate();
    FAIL() << "an efficiency above 1 passed";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("backward"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace overlapsim::sim
