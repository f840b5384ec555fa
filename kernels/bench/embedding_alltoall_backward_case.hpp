#pragma once
// embedding-alltoall-bench's backward case (--passes backward): DLRM's embedding backward
// at one shape, every variant in one interleaved loop:
//   alltoall+embedding_bag_backward fused        one kernel: rows stored into the table
//                                                owners over NVLink, expanded there as
//                                                they land (kernels/fused/
//                                                embedding_alltoall_backward.hpp)
//   alltoall+embedding_bag_backward sequential   NCCL send/recv, then our expansion
//   embedding_bag_backward own                   the expansion alone
//   alltoall_backward nccl                       the exchange alone
//   alltoall+embedding_bag_backward fused_b2b, sequential_b2b: b2b_calls calls back to
//                                                back, no alignment, mean per call
// Columns as the forward's: m = local batch, n = dim, k = lookups per sample over all
// tables, bytes = the rows a rank sends (tables x B x dim x 2), chunks = the fused grid.
// `wrong` (summed over ranks): the fused values that differ from the sequential ones' bits,
// plus the sequential values left unwritten or off a host reference at 64 sampled places.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/bench/bench_row.hpp"
#include "kernels/common/status.hpp"
#include "kernels/fused/embedding_alltoall.hpp"
#include "kernels/fused/embedding_alltoall_backward.hpp"
#include "kernels/harness/multi_gpu.hpp"

namespace overlapsim::kernels::bench {

struct EmbeddingBackwardCaseSettings {
  int iterations = 30;
  int warmup = 5;
  int b2b_calls = 50;
  double timeout_s = 60;
  std::uint64_t seed = 1;
  // The backward's push schedule and tile claims (0: the kernel's own choice).
  fused::BackwardPush push = fused::BackwardPush::kAuto;
  int push_warps = 0;
  int claim_tiles = 0;
};

// Runs the case on this rank (collective); rank 0 appends its CSV rows to `lines` and
// prints them.
Status run_embedding_backward_case(const EmbeddingBackwardCaseSettings& settings,
                                   const fused::EmbeddingAllToAllShape& shape, RankContext& ctx,
                                   const DeviceTags& tags, std::vector<std::string>* lines);

}  // namespace overlapsim::kernels::bench
