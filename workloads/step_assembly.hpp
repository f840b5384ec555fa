#pragma once
// Shared by the generators: the communicator table of a StepGraph (every group of each
// family in use) and the per-rank group indices into it.
#include <array>
#include <map>
#include <string>
#include <vector>

#include "sim/graph/op_graph.hpp"
#include "workloads/parallel_layout.hpp"
#include "workloads/transformer_emitter.hpp"

namespace overlapsim::workloads {

class GroupTable {
 public:
  // Appends all groups of each family with more than one member to `step.groups`.
  GroupTable(const ParallelLayout& layout, const std::vector<std::string>& families,
             sim::StepGraph& step);
  // Index into StepGraph::groups of the `family` group holding `rank`; -1 if not present.
  int index(const std::string& family, int rank) const;
  RankGroups groups_of(int rank) const;

 private:
  const ParallelLayout& layout_;
  std::map<std::string, int> offset_;
};

// Marks the communication ops on the streams flagged in `streams` (per sim::StreamKind)
// as running on high-priority streams (OpNode::high_priority).
void mark_high_priority_comm(sim::StepGraph& step,
                             const std::array<bool, sim::kNumStreamKinds>& streams);

// Adds up FLOPs (all ops, and without recomputation) over the simulated ranks, weighted
// by multiplicity.
void total_flops(sim::StepGraph& step);

}  // namespace overlapsim::workloads
