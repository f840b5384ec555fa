#pragma once
// overlap-bench's rows for design `shaped` (kernels/designs/shaped.hpp) and its tuner.
// Per pair shape (gemm+allreduce, gemm+reducescatter, gemm+alltoall) the grid is
//   free_sms S in {0, 8, 16, 24, 32} (below half the SMs), NCCL CTAs c in the case's `ctas`
//   (0, NCCL's default config, always added), chunks k in the case's `chunks` (those that
//   split the shape), plus (S 0, c 0, k 1).
// The tuner's candidates (ShapedChoice, shaped.hpp) are the sequential pair itself, the
// decomposed design itself at each k, and every grid point but (0, 0, k): those are only
// look-alikes of sequential and decomposed (no split-K in their GEMMs, the collective on the
// comm stream), still timed for the surface but never chosen. A choice of decomposed or
// sequential runs the runner's own baseline objects, the ones its rows time.
//
// Search loop (one time_interleaved loop, `iterations / 3` samples, at least 5): the op
// alone, the collective alone, the sequential pair, decomposed for each k, the unchunked
// cuBLASLt GEMM with S SMs left free (each S > 0), the unchunked collective on c CTAs (each
// c > 0), each chunked plan's GEMMs alone (each S and k > 1), and every grid point. Rows:
//   <pair>/{op_alone,collective_alone,sequential}_sh_search, <pair>/decomposed_sh_search
//     (chunks = k; `wrong` counts elements differing at all from the sequential result)
//   gemm/cublas_shaped:s<S>        the GEMM alone with S SMs free (chunks = 1)
//   gemm/cublas_shaped_chunks:s<S> the k chunk GEMMs of the plan (S, k) alone, back to back
//                                  (chunks = k; S = 0 too)
//   <collective>/nccl_shaped:c<c>  the collective alone on c CTAs (chunks = 1)
//   <pair>/shaped_search:s<S>:c<c> the grid point (chunks = k); `wrong` counts elements
//                                  whose value differs at all from the sequential result
//                                  (all-reduce over > 2 ranks: NCCL's order differs by size)
// Choice: the fastest candidate, unless decomposed (at its fastest k) is within 1 % of it,
// then decomposed; else unless sequential is, then sequential. A smaller win is as likely
// noise, and decomposed comes first because the bar against it allows no margin while the
// one against sequential allows 1 %. The search's choice and the next fastest grid point
// are re-timed in a confirming loop with sequential and decomposed (`iterations / 2`
// samples; rows <pair>/{sequential,decomposed}_sh_confirm, <pair>/shaped_confirm:s<S>:c<c>),
// where the same rule picks the choice: the search loop's mix of 50-odd variants runs cooler
// than the final loop, and its ranking of close points did not always hold there.
// Final loop (one time_interleaved loop, `iterations` samples): op alone, collective
// alone, sequential, decomposed at its best k, and the choice. Rows
// <pair>/{op_alone,collective_alone,sequential}_sh_loop, <pair>/decomposed_sh_loop (chunks = k),
// <pair>/shaped:<choice> (chunks = k; <choice> is s<S>:c<c>, `decomposed` or `sequential`); the
// last two checked like decomposed (reference samples + the sequential result, with
// tolerance). Captured overlap of a design: (T_seq − T) / (T_seq − max(T_op, T_coll)) from
// one loop.
// Paired loop (kPairedRounds rounds): sequential, decomposed and the choice, each once per
// round, the order rotating by one each round, so per-round ratios compare runs a few
// milliseconds apart under one clock state. Rows <pair>/{sequential,decomposed}_sh_paired and
// <pair>/shaped_paired:<choice> (medians of their rounds); with --shaped-paired FILE every
// round's three times (rank 0 appends), from which the summary takes the median of the
// per-round ratios and its interval (median_interval). When the choice is decomposed, the
// same code on the same objects is timed twice per round: the ratio then shows the noise.
#include <map>
#include <vector>

#include "kernels/bench/bench_env.hpp"
#include "kernels/bench/tilewise_runner.hpp"

namespace overlapsim::kernels::bench {

// What one rank keeps across shapes (BenchEnv::shaped_state).
struct ShapedRankState {
  int device_sms = 0;
  // Communicators with exactly c CTAs (make_shaped_comm), never destroyed: finalizing a
  // split between shapes hung a rank (tilewise_context.hpp); process exit frees them.
  std::map<int, CommHandle> comms;
};

// Rounds of the paired loop.
inline constexpr int kPairedRounds = 200;

// The median of `values` (per-round ratios) and a distribution-free interval for it: the
// order statistics x(j) and x(n + 1 - j) of the n sorted values, j the largest with
// P(Binomial(n, 1/2) < j) <= (1 - confidence) / 2, so the interval holds the population
// median with probability >= confidence for independent rounds (exact, no bootstrap and no
// assumed distribution). `coverage` is that probability, 1 - 2 P(Binomial(n, 1/2) < j); with
// too few values for `confidence` (n < 6 at 0.95) the interval is [min, max] and coverage
// says how much less it holds.
struct MedianInterval {
  double median = 0;
  double low = 0;
  double high = 0;
  double coverage = 0;
  int count = 0;
};
MedianInterval median_interval(std::vector<double> values, double confidence = 0.95);

// Borrows the pair runner's input sets, checks and baselines (TilewiseCaseIo).
Status run_shaped_rows(BenchEnv& env, const BenchCase& c, PairOp op, const PairShape& shape,
                       const TilewiseCaseIo& io);

}  // namespace overlapsim::kernels::bench
