#include "workloads/step_assembly.hpp"

#include <algorithm>

namespace overlapsim::workloads {

GroupTable::GroupTable(const ParallelLayout& layout, const std::vector<std::string>& families,
                       sim::StepGraph& step)
    : layout_(layout) {
  for (const auto& family : families) {
    if (layout.group_size(family) < 2 || offset_.count(family)) continue;
    offset_[family] = static_cast<int>(step.groups.size());
    auto groups = layout.all_groups(family);
    step.groups.insert(step.groups.end(), std::make_move_iterator(groups.begin()),
                       std::make_move_iterator(groups.end()));
  }
}

int GroupTable::index(const std::string& family, int rank) const {
  auto it = offset_.find(family);
  if (it == offset_.end()) return -1;
  return it->second + layout_.group_index(family, rank);
}

RankGroups GroupTable::groups_of(int rank) const {
  RankGroups g;
  g.tp = index("tp", rank);
  g.cp = index("cp", rank);
  g.dp = index("dp", rank);
  g.pp = index("pp", rank);
  g.ep = index("ep", rank);
  g.edp = index("edp", rank);
  g.embd = index("embd", rank);
  g.etp = layout_.etp() == layout_.tp() ? g.tp : index("etp", rank);
  g.ep_node = index("ep_node", rank);
  g.ep_rail = index("ep_rail", rank);
  return g;
}

void mark_high_priority_comm(sim::StepGraph& step,
                             const std::array<bool, sim::kNumStreamKinds>& streams) {
  if (std::none_of(streams.begin(), streams.end(), [](bool b) { return b; })) return;
  for (auto& program : step.ranks)
    for (auto v : boost::make_iterator_range(boost::vertices(program.graph))) {
      sim::OpNode& op = program.graph[v];
      const bool comm = op.kind == sim::OpKind::Collective || op.kind == sim::OpKind::SendRecv;
      if (comm && streams[static_cast<std::size_t>(op.stream)]) op.high_priority = true;
    }
}

void total_flops(sim::StepGraph& step) {
  double all = 0, model = 0;
  for (const auto& program : step.ranks) {
    double rank_all = 0, rank_model = 0;
    for (auto v : boost::make_iterator_range(boost::vertices(program.graph))) {
      const auto& op = program.graph[v];
      rank_all += op.flops;
      if (!op.recompute) rank_model += op.flops;
    }
    all += rank_all * program.multiplicity;
    model += rank_model * program.multiplicity;
  }
  step.flops_per_step = all;
  step.model_flops_per_step = model;
}

}  // namespace overlapsim::workloads
