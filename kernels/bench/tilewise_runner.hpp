#pragma once
// overlap-bench's rows for design `tilewise`. Per pair shape (gemm+allreduce,
// gemm+reducescatter, gemm+alltoall):
//   gemm/own         own GEMM alone, natural stores, all SMs
//   gemm/own_signal  own GEMM with remapped stores and counters on SMs − s (chunks = s)
//   <collective>/nccl_tilewise  one NCCL call on the limited communicator, per size the
//                    predictor uses (chunks = s)
//   <pair>/tilewise  the chosen configuration, re-timed (chunks = groups), checked against
//                    the reference, the sequential result and (bit for bit) own GEMM +
//                    the same NCCL collective
//   unpermute/tilewise, residual_rmsnorm/natural, residual_rmsnorm/tilewise_fused
// Transport copy_engine (--tilewise-transport, default "nccl,copy_engine";
// kernels/tilewise/copy_engine_design.hpp), when the shape allows it:
//   peer_copy/copy_engine   cudaMemcpyAsync to the peer, both ranks at once, per size
//                           (once per run): the predictor's copy curve
//   peer_copy/copy_engine_with_stream_ops  a 1 MiB copy followed by a group's stream
//                           operations (flag write, counter wait and reset); less the
//                           curve's 1 MiB time: the predictor's per-group stream cost
//   gemm/own_signal_ce      rotated own GEMM with remapped stores and signals, no waits
//   <pair>/tilewise_ce      the best groups_per_part (chunks = groups per part) among
//                           --tilewise-groups (default "2,4,8,16"), checked
//                           like the NCCL transport's row
// Acceptance 3 (signalling alone): gemm/own_interleaved, gemm/own_signal (chunks 0) and
// gemm/own_signal_ce (chunks 0) are timed in ONE interleaved loop. The chosen
// configurations of both transports are re-timed in one interleaved loop with the
// sequential pair, the op alone and the collective alone (<pair>/sequential_tw_loop,
// <pair>/op_alone_tw_loop, <pair>/collective_alone_tw_loop), so T_sequential, T_ideal and
// T_tilewise all see one clock and power state.
// Search (tilewise_tuner.hpp): for every s in --tilewise-comm-sms (default "16") and wait
// mode in --tilewise-wait (default "kernel,stream_memop"), the candidate partitions of
// group_predictor.hpp are timed; every candidate's predicted and measured time goes to
// the detail CSV --tilewise-detail (if set). --tilewise-cache names the tuning cache YAML:
// a hit skips the search, a search stores its winner. The settings come from
// BenchEnv::tilewise_settings (overlap-bench's flags, flags.hpp).
// gemm+reducescatter also times the per-chunk vendor family (vendor_reduce_scatter_runner.hpp,
// --tilewise-vendor-chunks; row <pair>/tilewise_rs_vendor in the final loop), and the tuner
// chooses among its best, the copy-engine choice and sequential; with --tilewise-clock-states 1
// the sequential pair, the GEMM alone and each family's choice are timed steady and burst
// (clock_states.hpp), as PyTorch's peers are.
// Pieces: tilewise_context.hpp (what they share), tilewise_measure.hpp (measurements),
// tilewise_tuner.hpp (search), tilewise_report.hpp (detail and timeline CSV); this file's
// .cpp runs them and the final round.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/bench/bench_env.hpp"
#include "kernels/bench/timing.hpp"
#include "kernels/designs/pair_kernels.hpp"

namespace overlapsim::kernels::bench {

struct TilewiseCaseIo {
  std::function<PairBuffers(int)> set;  // rotating input sets (outputs of set 0 are checked)
  int sets = 1;
  // Poisons the pair's outputs, runs `once`, checks the natural result against the
  // reference (and the sequential result when there is one); summed over ranks.
  std::function<Status(const std::function<Status()>& once, std::uint64_t* wrong)> run_and_check;
  // The sequential pair (cuBLAS then NCCL) on set i, timed in the same loop as the chosen
  // tile-wise configurations; align: untimed re-alignment of the ranks between variants.
  EnqueueIteration sequential;
  EnqueueIteration op_alone;          // the pair's op (cuBLAS) alone, in the same loop
  EnqueueIteration collective_alone;  // the pair's collective (NCCL) alone, in the same loop
  EnqueueIteration align;
  // The decomposed design per chunk count (allgather+gemm's final loop times them beside
  // the tile-wise choice).
  std::vector<std::pair<int, EnqueueIteration>> decomposed;
};

// Whether overlap-bench can run `tilewise` for this pair at all.
bool tilewise_supports(PairOp op);

Status run_tilewise_rows(BenchEnv& env, const BenchCase& c, PairOp op, const PairShape& shape,
                         const TilewiseCaseIo& io);

}  // namespace overlapsim::kernels::bench
