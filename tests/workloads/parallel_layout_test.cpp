#include "workloads/parallel_layout.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace overlapsim::workloads;

TEST(ParallelLayout, MegatronOrderTpInnermostPpOutermost) {
  ParallelLayout l(/*tp=*/8, /*cp=*/1, /*dp=*/16, /*pp=*/8);
  EXPECT_EQ(l.world_size(), 1024);
  // rank = tp + TP·(cp + CP·(dp + DP·pp))
  EXPECT_EQ(l.rank_of(3, 0, 5, 2), 3 + 8 * (5 + 16 * 2));
  RankCoord c = l.coord(3 + 8 * (5 + 16 * 2));
  EXPECT_EQ(c.tp, 3);
  EXPECT_EQ(c.dp, 5);
  EXPECT_EQ(c.pp, 2);
  EXPECT_EQ(l.group("tp", 13), (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  std::vector<int> dp = l.group("dp", 1);  // tp rank 1 of stage 0
  ASSERT_EQ(dp.size(), 16u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(dp[i], 1 + 8 * i);
  std::vector<int> pp = l.group("pp", 130);  // tp 2, dp 16 -> dp 0 of stage 1? 130 = 2 + 8·16
  EXPECT_EQ(pp, (std::vector<int>{2, 130, 258, 386, 514, 642, 770, 898}));
  EXPECT_EQ(l.group("embd", 130), (std::vector<int>{2, 898}));
}

TEST(ParallelLayout, TpGroupsStayInsideEightGpuNodes) {
  ParallelLayout l(8, 2, 4, 2);
  for (const auto& g : l.all_groups("tp")) {
    std::set<int> nodes;
    for (int r : g.ranks) nodes.insert(r / 8);
    EXPECT_EQ(nodes.size(), 1u);
  }
}

TEST(ParallelLayout, GroupsPartitionTheRanksAndIndicesMatch) {
  for (const ParallelLayout& l :
       {ParallelLayout(2, 2, 4, 3, /*ep=*/4), ParallelLayout(2, 2, 4, 3, /*ep=*/8, /*etp=*/1),
        ParallelLayout(4, 1, 4, 2, /*ep=*/4, /*etp=*/2)})
    for (const char* family : {"tp", "cp", "dp", "pp", "ep", "edp", "etp"}) {
      auto groups = l.all_groups(family);
      std::vector<int> seen(l.world_size(), 0);
      for (std::size_t gi = 0; gi < groups.size(); ++gi) {
        EXPECT_EQ(groups[gi].family, family);
        EXPECT_EQ(static_cast<int>(groups[gi].ranks.size()), l.group_size(family)) << family;
        for (int r : groups[gi].ranks) {
          ++seen[r];
          EXPECT_EQ(l.group_index(family, r), static_cast<int>(gi)) << family << " rank " << r;
          EXPECT_EQ(l.group(family, r), groups[gi].ranks) << family;
        }
      }
      for (int n : seen) EXPECT_EQ(n, 1) << family;
    }
}

TEST(ParallelLayout, ExpertTpOfOneFoldsEpOverTensorParallelRanks) {
  // Megatron-Core MoE parallel folding: TP 2, DP 4 and EP 8 with expert TP 1 (the 8 ranks
  // of a stage are one EP group, so each TP pair's two ranks hold different experts).
  ParallelLayout l(/*tp=*/2, /*cp=*/1, /*dp=*/4, /*pp=*/2, /*ep=*/8, /*etp=*/1);
  EXPECT_EQ(l.edp(), 1);
  EXPECT_EQ(l.group_size("etp"), 1);
  EXPECT_EQ(l.group("ep", 3), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(l.group("ep", 9), (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  RankCoord c = l.coord(13);  // stage 1, place 5: tp 1, dp 2
  EXPECT_EQ(c.tp, 1);
  EXPECT_EQ(c.dp, 2);
  EXPECT_EQ(c.etp, 0);
  EXPECT_EQ(c.ep, 5);
  EXPECT_EQ(c.edp, 0);
  // EP 4 with expert TP 1 on the same ranks: EP groups of consecutive ranks, expert-DP
  // pairs four apart.
  ParallelLayout half(2, 1, 4, 1, /*ep=*/4, /*etp=*/1);
  EXPECT_EQ(half.group("ep", 6), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(half.group("edp", 6), (std::vector<int>{2, 6}));
  // Expert TP 2 inside TP 4: expert-TP pairs of consecutive ranks, EP strides of 2.
  ParallelLayout mid(4, 1, 2, 1, /*ep=*/4, /*etp=*/2);
  EXPECT_EQ(mid.group("etp", 5), (std::vector<int>{4, 5}));
  EXPECT_EQ(mid.group("ep", 5), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(mid.edp(), 1);
}

TEST(ParallelLayout, ExpertTpEqualToTpKeepsTheDefaultLayout) {
  const ParallelLayout dflt(2, 2, 4, 3, /*ep=*/4);
  const ParallelLayout same(2, 2, 4, 3, /*ep=*/4, /*etp=*/2);
  for (const char* family : {"ep", "edp"})
    for (int r = 0; r < dflt.world_size(); ++r) {
      EXPECT_EQ(dflt.group(family, r), same.group(family, r)) << family << " rank " << r;
      EXPECT_EQ(dflt.group_index(family, r), same.group_index(family, r)) << family;
    }
  EXPECT_EQ(dflt.group("etp", 5), dflt.group("tp", 5));
}

TEST(ParallelLayout, ExpertGroupsAreCarvedOutOfDataTimesContext) {
  ParallelLayout l(/*tp=*/2, /*cp=*/2, /*dp=*/4, /*pp=*/1, /*ep=*/4);
  EXPECT_EQ(l.edp(), 2);
  for (int r = 0; r < l.world_size(); ++r) {
    auto ep = l.group("ep", r);
    auto dp = l.group("dp", r);
    // Every EP peer is a DP×CP peer (same TP rank and stage), and EP × EDP tiles DP×CP.
    for (int peer : ep) EXPECT_NE(std::find(dp.begin(), dp.end(), peer), dp.end());
    std::set<int> tiled;
    for (int e : ep)
      for (int d : l.group("edp", e)) tiled.insert(d);
    EXPECT_EQ(tiled, std::set<int>(dp.begin(), dp.end()));
  }
  // ep peers are consecutive in the flattened (cp, dp) index, as Megatron's expert layout.
  EXPECT_EQ(l.group("ep", 0), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(l.group("edp", 0), (std::vector<int>{0, 8}));
}

TEST(ParallelLayout, EpGroupsSplitIntoNodeAndRailGroups) {
  // EP 16 over two nodes of 8 (expert TP 1): 32 ranks, EP groups 0-15 and 16-31.
  ParallelLayout l(/*tp=*/1, /*cp=*/1, /*dp=*/32, /*pp=*/1, /*ep=*/16, /*etp=*/1,
                   /*ep_per_node=*/8);
  EXPECT_EQ(l.group_size("ep_node"), 8);
  EXPECT_EQ(l.group_size("ep_rail"), 2);
  EXPECT_EQ(l.group("ep_node", 10), (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(l.group("ep_rail", 10), (std::vector<int>{2, 10}));
  EXPECT_EQ(l.group("ep_rail", 20), (std::vector<int>{20, 28}));
  for (const char* family : {"ep_node", "ep_rail"}) {
    const auto groups = l.all_groups(family);
    std::vector<int> seen(l.world_size(), 0);
    for (std::size_t gi = 0; gi < groups.size(); ++gi)
      for (int r : groups[gi].ranks) {
        ++seen[r];
        EXPECT_EQ(l.group_index(family, r), static_cast<int>(gi)) << family << " rank " << r;
        EXPECT_EQ(l.group(family, r), groups[gi].ranks) << family;
      }
    for (int n : seen) EXPECT_EQ(n, 1) << family;
  }
  // With a pipeline and TP 2 folded into EP 8 over nodes of 4: stage blocks of 16 ranks.
  ParallelLayout folded(2, 1, 8, 2, /*ep=*/8, /*etp=*/1, /*ep_per_node=*/4);
  EXPECT_EQ(folded.group("ep_rail", 16 + 5), (std::vector<int>{16 + 1, 16 + 5}));
  EXPECT_EQ(folded.group_index("ep_rail", 16 + 5), 2 * 4 + 1);  // EP group 2, rail 1
  EXPECT_EQ(folded.group_index("ep_node", 16 + 5), 2 * 2 + 1);  // EP group 2, node 1
}

TEST(ParallelLayout, EpRanksPerNodeAreTheGroupOrWholeNodes) {
  EXPECT_EQ(ParallelLayout(1, 1, 16, 1, 8, 1).ep_ranks_per_node(8), 8);   // inside a node
  EXPECT_EQ(ParallelLayout(1, 1, 32, 1, 16, 1).ep_ranks_per_node(8), 8);  // two whole nodes
  EXPECT_EQ(ParallelLayout(2, 1, 8, 2, 4, 2).ep_ranks_per_node(8), 4);    // strided, inside
  EXPECT_THROW(ParallelLayout(2, 1, 8, 1, 8, 2).ep_ranks_per_node(8), std::invalid_argument);
  EXPECT_THROW(ParallelLayout(1, 1, 24, 1, 12, 1).ep_ranks_per_node(8), std::invalid_argument);
  EXPECT_THROW(ParallelLayout(1, 1, 8, 1, 8, 1).ep_ranks_per_node(0), std::invalid_argument);
}

TEST(ParallelLayout, RejectsBadSizes) {
  EXPECT_THROW(ParallelLayout(0, 1, 1, 1), std::invalid_argument);
  EXPECT_THROW(ParallelLayout(1, 1, 6, 1, 4), std::invalid_argument);
  EXPECT_THROW(ParallelLayout(2, 1, 4, 1, /*ep=*/16, /*etp=*/1), std::invalid_argument);
  EXPECT_THROW(ParallelLayout(2, 1, 4, 1, /*ep=*/4, /*etp=*/-1), std::invalid_argument);
  EXPECT_THROW(ParallelLayout(2, 1, 2, 1).coord(4), std::invalid_argument);
  EXPECT_THROW(ParallelLayout(1, 1, 16, 1, 16, 1, /*ep_per_node=*/3), std::invalid_argument);
  EXPECT_THROW(ParallelLayout(2, 1, 8, 1, 4, 2, /*ep_per_node=*/2), std::invalid_argument);
}
