#pragma once
// overlap-bench's rows for design `shaped` (kernels/designs/shaped.hpp) and its tuner.
// Per pair shape (gemm+allreduce, gemm+reducescatter, gemm+alltoall) the grid is
//   free_sms S in {0, 8, 16, 24, 32} (below half the SMs), NCCL CTAs c in the case's `ctas`
//   (0, NCCL's default config, always added), chunks k in the case's `chunks` (those that
//   split the shape), plus (S 0, c 0, k 1): the sequential pair on two streams.
// (0, 0, k) is the decomposed design, so the tuner's choice can only lose by noise.
//
// Search loop (one time_interleaved loop, `iterations / 3` samples, at least 5): the op
// alone, the collective alone, the sequential pair, decomposed for each k, the unchunked
// cuBLASLt GEMM with S SMs left free (each S > 0), the unchunked collective on c CTAs (each
// c > 0), each chunked plan's GEMMs alone (each S and k > 1), and every grid point. Rows:
//   <pair>/{op_alone,collective_alone,sequential}_sh_search, <pair>/decomposed_sh_search
//     (chunks = k)
//   gemm/cublas_shaped:s<S>        the GEMM alone with S SMs free (chunks = 1)
//   gemm/cublas_shaped_chunks:s<S> the k chunk GEMMs of the plan (S, k) alone, back to back
//                                  (chunks = k; S = 0 too)
//   <collective>/nccl_shaped:c<c>  the collective alone on c CTAs (chunks = 1)
//   <pair>/shaped_search:s<S>:c<c> the grid point (chunks = k); `wrong` counts elements
//                                  whose value differs at all from the sequential result
//                                  (all-reduce over > 2 ranks: NCCL's order differs by size)
// Choice: the fastest point, unless the sequential point or decomposed's (0, 0, k) is
// within 1 % of it (then that one: a smaller win is as likely noise). The search's choice,
// decomposed's point and the next fastest (3 in all) are re-timed in a confirming loop
// with sequential and decomposed (`iterations / 2` samples; rows
// <pair>/{sequential,decomposed}_sh_confirm, <pair>/shaped_confirm:s<S>:c<c>), where the
// same rule picks the choice: the search loop's mix of 50-odd variants runs cooler than
// the final loop, and its ranking of close points did not always hold there.
// Final loop (one time_interleaved loop, `iterations` samples): op alone, collective
// alone, sequential, decomposed at its best k, and the choice. Rows
// <pair>/{op_alone,collective_alone,sequential}_sh_loop, <pair>/decomposed_sh_loop (chunks = k),
// <pair>/shaped:s<S>:c<c> (chunks = k); the last two checked like decomposed (reference samples +
// the sequential result, with tolerance). Captured overlap of a design: (T_seq − T) / (T_seq −
// max(T_op, T_coll)) from one loop.
#include <map>

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

// Borrows the pair runner's input sets, checks and baselines (TilewiseCaseIo).
Status run_shaped_rows(BenchEnv& env, const BenchCase& c, PairOp op, const PairShape& shape,
                       const TilewiseCaseIo& io);

}  // namespace overlapsim::kernels::bench
