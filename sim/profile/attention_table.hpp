#pragma once
// Fused attention's measured efficiency over head dimension and sequence length
// (docs/profile-format.md, compute.attention_table). Where a profile has it, attention ops
// that carry their shape (OpNode::attention) are timed by it instead of the FLOP curves
// compute.efficiency.attention_forward / attention_backward.
//
// Why a grid and not a curve over FLOPs: at a fixed head dimension a fused kernel's time per
// FLOP falls with the keys each query tile sweeps (its fixed work per tile, the Q load and
// the output's epilogue, spreads over more key tiles), and at a fixed sequence it depends on
// the head dimension, which sets the matrix products' FLOPs per score element (4 d) against
// the softmax's fixed exponential per element. One H100 (benchmarks/results/h100x1/
// attention_probe): cuDNN's causal forward at 8192 tokens reached 0.45 of the bf16 peak at
// head dimension 64 and 0.61 at 128, whatever the FLOPs.
#include <vector>

#include "sim/profile/log_curve.hpp"
#include "sim/profile/provenance.hpp"

namespace overlapsim::sim {

struct AttentionTable {
  std::vector<double> head_dims;  // strictly increasing, > 0
  std::vector<double> seq_lens;   // causal sequence lengths, strictly increasing, > 0
  // Fraction of the bf16 peak, [i_head_dim * seq_lens.size() + i_seq], each in (0, 1]:
  // forward over 2 s^2 d FLOPs per (batch, head) (causal), backward over 2.5x that (the
  // kernel recomputes the scores: five matrix products to the forward's two).
  std::vector<double> forward, backward;
  // How much a call with few query tiles (batch x heads x ceil(queries / 128)) keeps of the
  // grid's efficiency, which was measured with thousands: (query tiles, factor) points,
  // tiles increasing, factors in (0, 1] and non-decreasing; linear in log(tiles), clamped at
  // the end points (a fitted curve ends at factor 1). Empty: no loss.
  LogCurve occupancy_forward, occupancy_backward;  // their points; the table's source
  Provenance source;

  // Throws std::invalid_argument naming what is wrong.
  void validate() const;
  // Interpolated linearly in the head dimension and in log(sequence), clamped at the
  // table's edges, times the occupancy factor at query_tiles (0: not given, no factor).
  double efficiency(bool backward_kernel, double head_dim, double seq_len,
                    double query_tiles = 0) const;
};

}  // namespace overlapsim::sim
