#pragma once
// Maps the parallel dimensions onto global ranks the way Megatron-LM's RankGenerator
// does with its default order "tp-cp-ep-dp-pp": TP varies fastest (so a TP group is
// consecutive ranks inside one node), then CP, then DP, and PP slowest:
//   rank = tp + TP·(cp + CP·(dp + DP·pp))
// Experts (MoE) reuse the same ranks, a stage's TP×CP×DP block re-split into
// expert-TP × EP × expert-DP (Megatron-Core's expert RankGenerator "tp-ep-dp-pp", MoE
// parallel folding): for j = tp + TP·(cp + CP·dp), the rank's place in its stage,
// etp = j mod ETP,  ep = (j div ETP) mod EP  and  edp = j div (ETP·EP). With ETP = TP (the
// default) the expert-TP group is the TP group and EP × expert-DP split DP×CP.
//
// Families of communicators (sim::CommGroup::family):
//   tp   TP group (same cp, dp, pp)
//   cp   context-parallel group (same tp, dp, pp)
//   dp   gradient-reduction group of dense parameters: all of DP×CP (same tp, pp),
//        Megatron's data-parallel group "with CP"
//   pp   pipeline (same tp, cp, dp), ordered by stage
//   etp  expert tensor-parallel group (same ep, edp, pp)
//   ep   expert-parallel all-to-all group (same etp, edp, pp)
//   edp  expert-data-parallel group, gradient reduction of expert weights (same etp, ep, pp)
//   ep_node  the ranks of one EP group inside one node (a hierarchical token exchange's
//            NVLink leg); ep_rail  the ranks of one EP group at the same place in their
//            nodes, one per node (its network leg). Only with an EP group split over nodes
//            (ep_per_node < ep), which needs etp = 1: EP group ep·k + i, i < ep, has node
//            block i div ep_per_node and rail i mod ep_per_node.
//   embd first and last stage of one pipeline (tied input/output embedding gradients)
#include <string>
#include <vector>

#include "sim/graph/op_graph.hpp"

namespace overlapsim::workloads {

struct RankCoord {
  int tp = 0, cp = 0, dp = 0, pp = 0;
  int etp = 0, ep = 0, edp = 0;  // expert coordinates of the same rank
};

class ParallelLayout {
 public:
  // etp 0: equal to tp. ep_per_node 0: ep (every EP group inside one node). Throws
  // std::invalid_argument when a size is < 1, ep·etp does not divide tp·cp·dp, or
  // ep_per_node does not divide ep or is below ep with etp > 1.
  ParallelLayout(int tp, int cp, int dp, int pp, int ep = 1, int etp = 0, int ep_per_node = 0);

  int tp() const { return tp_; }
  int cp() const { return cp_; }
  int dp() const { return dp_; }
  int pp() const { return pp_; }
  int ep() const { return ep_; }
  int etp() const { return etp_; }
  int edp() const { return tp_ * cp_ * dp_ / (ep_ * etp_); }
  int ep_per_node() const { return ep_node_; }
  // The EP ranks per node when nodes hold `gpus_per_node` consecutive ranks: ep when every
  // EP group lies inside one node, else the node size, where every EP group covers whole
  // nodes (etp 1, ep a multiple of gpus_per_node, each group starting a node). Throws
  // std::invalid_argument, saying which, for groups that straddle nodes otherwise.
  int ep_ranks_per_node(int gpus_per_node) const;
  int world_size() const { return tp_ * cp_ * dp_ * pp_; }

  RankCoord coord(int rank) const;
  int rank_of(int tp, int cp, int dp, int pp) const;

  // The ordered group of `family` that contains `rank`.
  std::vector<int> group(const std::string& family, int rank) const;
  // Every group of `family`, ordered by their lowest rank; group_index() is the position of
  // the group holding `rank` in that list.
  std::vector<sim::CommGroup> all_groups(const std::string& family) const;
  int group_index(const std::string& family, int rank) const;
  int group_size(const std::string& family) const;

 private:
  // The lowest rank of the family's group containing `rank` (identifies the group) and
  // the rank's position inside the group.
  int leader(const std::string& family, int rank) const;
  int tp_, cp_, dp_, pp_, ep_, etp_, ep_node_;
};

}  // namespace overlapsim::workloads
