// Absurd sizes are refused by the builders' validation before anything is allocated (no
// std::bad_alloc, no int overflow of a rank), with the field named.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "sim/topology/builders.hpp"

namespace overlapsim::sim {
namespace {

RailFatTreeSpec tree(int nodes, int spines) {
  RailFatTreeSpec spec;
  spec.nodes = nodes;
  spec.node = NvSwitchNodeSpec{8, 450e9, 0.3e-6};
  spec.nics_per_node = 8;
  spec.nic_bandwidth_Bps = 50e9;
  spec.gpu_nic_bandwidth_Bps = 63e9;
  spec.gpu_nic_latency_s = 1e-6;
  spec.link_latency_s = 0.15e-6;
  spec.leaf_down_ports = 32;
  spec.spines = spines;
  return spec;
}

std::string refusal(const RailFatTreeSpec& spec) {
  try {
    validate(spec);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(TopologySizeLimits, LinkCountOfTheShippedScaleTarget) {
  // 2,048 nodes x 8 GPUs: per node 8 NVLink + 8 GPU-NIC + 8 NIC-leaf cables; 512 leaves x 1
  // spine; two directed links per cable.
  EXPECT_EQ(rail_fat_tree_links(tree(2048, 1)), 2 * (2048 * 24 + 512));
  EXPECT_EQ(refusal(tree(2048, 1)), "");
}

TEST(TopologySizeLimits, AMillionSpinesIsRefusedByName) {
  const std::string why = refusal(tree(2048, 1'000'000));
  EXPECT_NE(why.find("RailFatTreeSpec.spines: 1000000"), std::string::npos) << why;
  EXPECT_THROW(build_rail_fat_tree(tree(2048, 1'000'000)), std::invalid_argument);
}

TEST(TopologySizeLimits, RankCountFitsAnInt) {
  // 2^28 nodes x 8 GPUs would overflow an int rank; refused before any multiplication in int.
  const std::string why = refusal(tree(1 << 28, 1));
  EXPECT_NE(why.find("RailFatTreeSpec.nodes"), std::string::npos) << why;
  EXPECT_EQ(refusal(tree(static_cast<int>(kMaxRanks / 8), 1)), "");
  EXPECT_NE(refusal(tree(static_cast<int>(kMaxRanks / 8) + 1, 1)), "");
  EXPECT_THROW(validate(FlatSwitchSpec{static_cast<int>(kMaxRanks) + 1, 50e9, 0, 1}),
               std::invalid_argument);
  EXPECT_THROW(validate(RingSpec{static_cast<int>(kMaxRanks) + 1, 50e9, 0, 1}),
               std::invalid_argument);
  EXPECT_THROW(validate(NvSwitchNodeSpec{1 << 30, 450e9, 0}), std::invalid_argument);
}

}  // namespace
}  // namespace overlapsim::sim
