#pragma once
// The tuner behind `--design best`: per class of pair (sim/overlap/pair_class.hpp), the
// design that runs the class's pair fastest alone, as FlashOverlap's and Transformer
// Engine's tuners time each candidate on the GEMM shape and keep the fastest. A pair is
// timed by the predictor `overlapsim validate` checks against measured pairs
// (sim::simulate_pair): the op and its collective on the step's communicator ranks of the
// step's topology, the collective timed by the step's cost model, the designs planning with
// its time of a call. A design wins a class only where it overlaps the pair and its time is
// below sequential's; otherwise the class stays sequential.
#include <string>
#include <utility>
#include <vector>

#include "sim/collectives/collective_cost_model.hpp"
#include "sim/graph/op_graph.hpp"
#include "sim/overlap/registry.hpp"
#include "sim/profile/profile.hpp"
#include "sim/topology/topology.hpp"

namespace overlapsim::sim {

struct PairClassChoice {
  std::string name;  // pair_class()
  int pairs = 0;     // pairs of the class on the simulated ranks
  std::string winner = "sequential";
  double sequential_s = 0;  // the pair alone under sequential
  double winner_s = 0;      // under the winner
  // The pair alone under each design that overlaps it (sequential first), in table order.
  std::vector<std::pair<std::string, double>> pair_s;
};

struct BestChoiceInputs {
  const StepGraph& step;
  const Topology& topology;
  const Profile& profile;
  CollectiveTimingOptions timing;
  DesignOptions design_options;
  int scaled_parts_min_ranks = 0;
};

// Classes in order of first appearance (program 0 first).
std::vector<PairClassChoice> choose_per_class(const BestChoiceInputs& in);

std::map<std::string, std::string> winners(const std::vector<PairClassChoice>& classes);

}  // namespace overlapsim::sim
