#pragma once
// overlap-bench's rows for design `tilewise` on allgather+gemm (the consumer side,
// kernels/tilewise/allgather_gemm.hpp). Per shape:
//   1. Search: every (chunks, push) in --tilewise-ag-chunks x --tilewise-ag-push that the
//      shape allows (per_peer only above 2 ranks, where it differs), timed in one
//      interleaved loop with the sequential pair (NCCL all-gather then cuBLAS); each
//      candidate's median goes to stderr as a line starting "overlap-bench: ag_candidate".
//      The per-chunk vendor candidates (--tilewise-vendor-chunks: cuBLASLt a block and a
//      chunk on the same rotated pushes, AllGatherGemmOptions::vendor_gemm, row design
//      tilewise_ag_vendor) are timed in the same loop.
//      --tilewise-vendor-streams 2 adds the vendor candidates on two alternating streams
//      (tilewise_ag_vendor_2s), --tilewise-ag-align 0 every candidate without the start
//      barrier (suffix _noalign).
//      The tuned choice is the fastest candidate if it is more than 1 % faster than
//      sequential there, else sequential (the rule of the other tile-wise pairs). With
//      --tilewise-ag-finalists N (>= 2) up to N candidates within 5 % of it (each more than
//      1 % faster than sequential) are timed back to back steady and burst (stderr lines
//      "overlap-bench: ag_finalist ...") and the one whose worse state is nearest that
//      state's fastest finalist becomes the choice.
//   2. Final loop, one interleaved loop: sequential, the cuBLAS GEMM alone, the NCCL
//      all-gather alone, NCCL all-gather then the own GEMM (sequential_own), the own GEMM
//      alone, decomposed per chunk count, and the fastest candidate. Rows
//      <pair>/{sequential,op_alone,collective_alone,sequential_own,own_alone}_tw_loop,
//      decomposed_tw_loop (chunks = k), tilewise_ag or tilewise_ag_par (chunks = chunks a
//      block; wrong: against the reference and the sequential result), tilewise_tuned
//      (chunks 0 when sequential was chosen) and gather_only_tw_loop (the chosen candidate's
//      pushes alone, then stream waits for the peers' chunks: the copy engines' all-gather).
//      Then the chosen candidate in a loop of its own (<design>_own_loop), as the pair
//      runner's sequential and decomposed rows and PyTorch's peers are timed, and the
//      candidate and the cuBLAS GEMM alone in two fixed clock states, the ones
//      torch_overlap.py --warmup-ms / --idle-s time PyTorch's peers in: steady
//      (<design>_steady, op_alone_steady: 1 s back to back untimed, then the case's
//      iterations; the GPU at its power limit) and burst (<design>_burst, op_alone_burst:
//      0.5 s of idle GPU, 5 warm-up calls, 20 timed; the boost clock).
//   3. Bit for bit against NCCL all-gather + the own GEMM on input set 0 (a vendor choice:
//      + the same cuBLASLt chunk GEMMs; stderr line "overlap-bench: ag_bits ... mismatches N").
#include "kernels/bench/bench_env.hpp"
#include "kernels/bench/tilewise_runner.hpp"

namespace overlapsim::kernels::bench {

Status run_allgather_tilewise_rows(BenchEnv& env, const BenchCase& c, const PairShape& shape,
                                   const TilewiseCaseIo& io);

}  // namespace overlapsim::kernels::bench
