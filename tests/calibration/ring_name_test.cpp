// The kernels' ring-configuration names (calibration/ring_name.hpp), as overlap-bench's
// design names and the tuner's wait names write them.
#include "calibration/ring_name.hpp"

#include <gtest/gtest.h>

namespace overlapsim::calibration {
namespace {

TEST(RingName, ReadsEverySuffixInBothNameForms) {
  const auto plain = parse_ring_name("tilewise_ce_ring", 8);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->groups_per_part, 8);
  EXPECT_EQ(plain->row_chunks, 1);
  EXPECT_EQ(plain->slabs, 1);
  EXPECT_FALSE(plain->slab_skew || plain->phase2_own_streams || plain->tail_whole_part);

  const auto slabs = parse_ring_name("tilewise_ce_tk_ring_s4d_side_whole", 2);
  ASSERT_TRUE(slabs);
  EXPECT_EQ(slabs->slabs, 4);
  EXPECT_TRUE(slabs->slab_skew);
  EXPECT_TRUE(slabs->phase2_own_streams);
  EXPECT_TRUE(slabs->tail_whole_part);
  EXPECT_EQ(slabs->row_chunks, 1);

  const auto chunks = parse_ring_name("copy_engine_ring_c2_par", 0);
  ASSERT_TRUE(chunks);
  EXPECT_EQ(chunks->groups_per_part, 1);  // at least one group
  EXPECT_EQ(chunks->row_chunks, 2);
  EXPECT_FALSE(chunks->slab_skew);
  EXPECT_TRUE(chunks->phase2_own_streams);
}

TEST(RingName, RefusesOtherNamesAndTokens) {
  EXPECT_FALSE(parse_ring_name("tilewise_ce", 2));             // the direct route
  EXPECT_FALSE(parse_ring_name("tilewise_ce_tk_ring_k2", 2));  // the split last wave
  EXPECT_FALSE(parse_ring_name("tail_kernel_ring_c2d", 2));    // only slabs are skewed
  EXPECT_FALSE(parse_ring_name("copy_engine_ring_s", 2));
  EXPECT_FALSE(parse_ring_name("copy_engine_ringx", 2));
}

}  // namespace
}  // namespace overlapsim::calibration
