#pragma once
// Interference: how much a GEMM and a collective running side by side on one GPU
// slow each other, as a function of the NCCL CTA limit.
//
// For every cuBLASLt GEMM shape x collective x size x CTA limit c (a communicator split
// with maxCTAs = c and cgaClusterSize = 1, like the tile-wise design's; c = 0 uses the
// run's own communicator, NCCL's default config) four measurements, timed in one loop of
// rounds so clock and power drift hit all four alike (docs/kernels/log.md: GEMMs timed in a
// loop of their own ran 4-8 % slower):
//   gemm|<coll>:alone    a burst of back-to-back GEMMs on the compute stream
//   gemm|<coll>:beside   the same burst while the collective runs back to back on the
//                        high-priority comm stream: the collectives start first (the GEMMs
//                        wait for the first one to finish) and are enough to outlast the
//                        burst at twice its alone time; events on the GEMM stream only
//   <coll>|gemm:alone    a burst of back-to-back collectives on the comm stream
//   <coll>|gemm:beside   the same burst while GEMMs run back to back on the compute stream
// Each timed iteration is one kernel; its max over ranks is one sample. A beside sample
// whose kernel ended after the other stream's work had ended is dropped (not covered).
// Rounds alternate the order of the four and repeat until every measurement has at least
// `iterations` samples and `min_time` of timed work. Rows: op `interference`, design as
// above, m n k = the GEMM, bytes = the collective's nccl-tests bytes, chunks = c.
// `wrong`: the GEMM output and the collective result of one extra run beside the other,
// checked against the host reference (the same count on the alone and beside rows).
#include <string>

#include "kernels/bench/bench_env.hpp"

namespace overlapsim::kernels::bench {

// "gemm|allreduce:beside": the victim, what runs (or, alone, ran in the same loop) beside it.
std::string interference_design(const std::string& victim, const std::string& other, bool beside);

Status run_interference_case(BenchEnv& env, const BenchCase& c);

}  // namespace overlapsim::kernels::bench
