#pragma once
// Shared by the generators: the communicator table of a StepGraph (every group of each
// family in use) and the per-rank group indices into it.
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

// Adds up FLOPs (all ops, and without recomputation) over the simulated ranks, weighted
// by multiplicity.
void total_flops(sim::StepGraph& step);

}  // namespace overlapsim::workloads
