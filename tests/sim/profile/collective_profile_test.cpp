#include "sim/profile/collective_profile.hpp"

#include <gtest/gtest.h>


namespace overlapsim::sim {
namespace {

CollectiveCurve ring_allreduce(int ranks) {
  CollectiveCurve c;
  c.op = CollectiveOp::AllReduce;
  c.algo = Algorithm::Ring;
  c.scope = CommScope::IntraNode;
  c.ranks = ranks;
  c.segments = {{0, 10e-6, 100e9}, {1 << 20, 20e-6, 200e9}};
  return c;
}

TEST(CollectiveCurve, PiecewiseLatencyPlusBusBandwidth) {
  const CollectiveCurve c = ring_allreduce(8);
  // Below 1 MiB: 10 us + S * 2(n-1)/n / 100 GB/s.
  EXPECT_DOUBLE_EQ(c.time_s(1000, 8), 10e-6 + 1000.0 * 1.75 / 100e9);
  // From 1 MiB: the second segment.
  EXPECT_DOUBLE_EQ(c.time_s(1 << 24, 8), 20e-6 + 16777216.0 * 1.75 / 200e9);
}

TEST(CollectiveProfile, FindPrefersExactSizeThenAny) {
  CollectiveProfile p;
  p.curves = {ring_allreduce(0), ring_allreduce(8), ring_allreduce(16)};
  EXPECT_EQ(p.find(CollectiveOp::AllReduce, Algorithm::Ring, CommScope::IntraNode, 8)->ranks, 8);
  EXPECT_EQ(p.find(CollectiveOp::AllReduce, Algorithm::Ring, CommScope::IntraNode, 4)->ranks, 0);
  EXPECT_EQ(p.find(CollectiveOp::AllGather, Algorithm::Ring, CommScope::IntraNode, 8), nullptr);
  EXPECT_EQ(p.find(CollectiveOp::AllReduce, Algorithm::Ring, CommScope::InterNode, 8), nullptr);
}

}  // namespace
}  // namespace overlapsim::sim
