#include "sim/overlap/best_design.hpp"

#include <stdexcept>

#include "sim/overlap/pair_class.hpp"

namespace overlapsim::sim {

BestDesign::BestDesign(std::vector<std::unique_ptr<OverlapDesign>> candidates,
                       const StepGraph& step,
                       const std::map<std::string, std::string>& winner_by_class)
    : candidates_(std::move(candidates)), used_(candidates_.size(), 0) {
  if (candidates_.size() > 127) throw std::logic_error("best: too many candidates");
  std::map<std::string, int> index;  // class -> candidate, -1: sequential
  for (const auto& [cls, winner] : winner_by_class) {
    int i = -1;
    for (std::size_t k = 0; k < candidates_.size(); ++k)
      if (winner == candidates_[k]->name()) i = static_cast<int>(k);
    index[cls] = i;
  }
  choice_.resize(step.ranks.size());
  for (std::size_t p = 0; p < step.ranks.size(); ++p) {
    const OpGraph& g = step.ranks[p].graph;
    choice_[p].assign(boost::num_vertices(g), -1);
    for (OpVertex v = 0; v < boost::num_vertices(g); ++v) {
      const OpNode& node = g[v];
      if (node.pair_partner < 0 || node.kind == OpKind::Collective || node.kind == OpKind::SendRecv)
        continue;
      const auto c = static_cast<OpVertex>(node.pair_partner);
      if (g[c].kind != OpKind::Collective) continue;
      const auto it = index.find(pair_class(step, static_cast<int>(p), v));
      const int i = it == index.end() ? -1 : it->second;
      if (i < 0) {
        ++sequential_pairs_;
        continue;
      }
      used_[static_cast<std::size_t>(i)] = 1;
      choice_[p][v] = static_cast<signed char>(i);
      choice_[p][c] = static_cast<signed char>(i);
    }
  }
}

void BestDesign::start(ExecContext& ctx, int program, OpVertex v) {
  const int i = choice_[static_cast<std::size_t>(program)][v];
  if (i < 0)
    sequential_.start(ctx, program, v);
  else
    candidates_[static_cast<std::size_t>(i)]->start(ctx, program, v);
}

PairStats BestDesign::stats() const {
  PairStats out;
  for (const auto& c : candidates_)
    if (const PairedDesign* p = dynamic_cast<const PairedDesign*>(c.get())) {
      out.overlapped += p->stats().overlapped;
      for (const auto& [why, n] : p->stats().sequential) out.sequential[why] += n;
    }
  if (sequential_pairs_ > 0)
    out.sequential["sequential fastest for its class"] += sequential_pairs_;
  return out;
}

std::vector<ParameterUse> BestDesign::parameters() const {
  std::vector<ParameterUse> out;
  for (std::size_t k = 0; k < candidates_.size(); ++k)
    if (used_[k])
      if (const PairedDesign* p = dynamic_cast<const PairedDesign*>(candidates_[k].get()))
        out.insert(out.end(), p->parameters().begin(), p->parameters().end());
  return out;
}

}  // namespace overlapsim::sim
