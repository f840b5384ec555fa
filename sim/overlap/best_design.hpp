#pragma once
// `best`: per class of pair (pair_class.hpp), the design a tuner found fastest, like
// FlashOverlap's and Transformer Engine's tuners pick a configuration per GEMM shape. The
// choice is made by the scenario (sim/scenario/best_choice.hpp) from the forced designs'
// runs; this design only routes each pair's ops to the chosen design's machinery, and
// every other op (and every pair whose winner is sequential) runs as under `sequential`.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/exec/overlap_design.hpp"
#include "sim/overlap/paired_design.hpp"

namespace overlapsim::sim {

class BestDesign final : public OverlapDesign {
 public:
  // `candidates`: the overlapping designs, bound to the step; `winner_by_class`: class ->
  // a candidate's name or "sequential" (classes not listed run sequential).
  BestDesign(std::vector<std::unique_ptr<OverlapDesign>> candidates, const StepGraph& step,
             const std::map<std::string, std::string>& winner_by_class);
  const char* name() const override { return "best"; }
  void start(ExecContext& ctx, int program, OpVertex v) override;

  // Summed over the candidates (pairs whose winner is sequential count as sequential).
  PairStats stats() const;
  // The parameters of the candidates that won a class.
  std::vector<ParameterUse> parameters() const;

 private:
  std::vector<std::unique_ptr<OverlapDesign>> candidates_;
  std::vector<char> used_;                        // per candidate: won a class
  std::vector<std::vector<signed char>> choice_;  // per program, per vertex: candidate or -1
  int sequential_pairs_ = 0;
  SequentialDesign sequential_;
};

}  // namespace overlapsim::sim
