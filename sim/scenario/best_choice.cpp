#include "sim/scenario/best_choice.hpp"

#include <map>

#include "sim/overlap/pair_class.hpp"
#include "sim/overlap/pair_simulation.hpp"

namespace overlapsim::sim {

std::vector<PairClassChoice> choose_per_class(const BestChoiceInputs& in) {
  std::vector<PairClassChoice> out;
  std::vector<std::pair<int, OpVertex>> sample;  // one pair of each class
  std::map<std::string, std::size_t> index;
  for (std::size_t p = 0; p < in.step.ranks.size(); ++p) {
    const OpGraph& g = in.step.ranks[p].graph;
    for (OpVertex v = 0; v < boost::num_vertices(g); ++v) {
      const OpNode& node = g[v];
      if (node.pair_partner < 0 || node.kind == OpKind::Collective || node.kind == OpKind::SendRecv)
        continue;
      const auto c = static_cast<OpVertex>(node.pair_partner);
      if (g[c].kind != OpKind::Collective) continue;
      const bool producer = boost::edge(v, c, g).second;
      if (!producer && !boost::edge(c, v, g).second) continue;
      const std::string cls = pair_class(in.step, static_cast<int>(p), v);
      auto [it, fresh] = index.emplace(cls, out.size());
      if (fresh) {
        out.push_back({cls, 0, "sequential", 0, 0, {}});
        sample.emplace_back(static_cast<int>(p), v);
      }
      ++out[it->second].pairs;
    }
  }
  for (std::size_t k = 0; k < out.size(); ++k) {
    const OpGraph& g = in.step.ranks[static_cast<std::size_t>(sample[k].first)].graph;
    const OpNode& op = g[sample[k].second];
    const OpNode& comm = g[static_cast<OpVertex>(op.pair_partner)];
    PairCase pc;
    pc.compute = op;
    pc.collective = comm.collective;
    pc.comm_bytes = comm.comm_bytes;
    pc.producer = boost::edge(sample[k].second, static_cast<OpVertex>(op.pair_partner), g).second;
    pc.ranks = in.step.groups.at(static_cast<std::size_t>(comm.comm_group)).ranks;
    pc.world = static_cast<int>(pc.ranks.size());
    pc.timing = in.timing;
    pc.scaled_parts_min_ranks = in.scaled_parts_min_ranks;
    pc.copy_engine = in.design_options.tilewise_transport == TilewiseDesign::Transport::CopyEngine;
    PairClassChoice& c = out[k];
    for (const std::string& design : design_names()) {
      const PairOutcome o = simulate_pair(pc, design, in.profile, in.topology);
      if (design == "sequential") {
        c.sequential_s = c.winner_s = o.time_s;
      } else if (!o.overlapped) {
        continue;
      } else if (o.time_s < c.winner_s) {
        c.winner = design;
        c.winner_s = o.time_s;
      }
      c.pair_s.emplace_back(design, o.time_s);
    }
  }
  return out;
}

std::map<std::string, std::string> winners(const std::vector<PairClassChoice>& classes) {
  std::map<std::string, std::string> out;
  for (const auto& c : classes) out[c.name] = c.winner;
  return out;
}

}  // namespace overlapsim::sim
