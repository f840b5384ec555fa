#pragma once
// The `fused` design's cost model: what one GPU-initiated kernel pays for computing an op
// and storing its output into its NVLink peers' buffers itself (kernels/fused/: embedding-
// bag + All-to-All, GEMV + AllReduce, GEMM + All-to-All). The stores leave as the
// producer's rows or tiles finish, with no NCCL call and no per-peer launch, so the
// exchange hides under the op except for what the stores cost the op and a finish after
// its last store:
//   compute_s = op_s (1 + memory_bound_overhead_fraction)   embedding, GEMV
//             + pushed_bytes / store_Bps                     memory_bound_store_Bps, or
//                                                            gemm_store_Bps for a GEMM
//   finish_s  = alltoall_finish_s | allreduce_finish_s
//   pair      = max(compute_s, pushed_bytes / nvlink_store_Bps) + finish_s
// The stores cannot leave faster than the GPU's NVLink carries them (the datasheet's rate
// per direction); that bound binds on no measured shape (the pushed bytes take less time
// on the link than the op there), but would for a pooling-1 embedding or a short-k GEMM.
// pushed_bytes is what one rank stores into its peers: an all-to-all's (W-1)/W of its send
// buffer; a one-shot all-reduce's partial to each of W-1 peers. Every parameter is fitted
// from the measured kernels by calibration/fit_fused.hpp; docs/designs.md has the numbers.
// The stores reach NVLink peers only (NCCL's device API: LSA peers by load/store, the
// network only through GIN), so a communicator that spans hosts is not fused here.
#include <optional>

#include "sim/graph/op_graph.hpp"
#include "sim/overlap/design_parameters.hpp"

namespace overlapsim::sim {

enum class FusedPair { EmbeddingAllToAll, GemvAllReduce, GemmAllToAll };

// The pair a fused kernel exists for, or nullopt.
std::optional<FusedPair> fused_pair_of(OpKind op, CollectiveOp collective);
bool memory_bound(FusedPair pair);

struct FusedCosts {
  double memory_bound_overhead_fraction = 0;
  double memory_bound_store_Bps = 0;
  double gemm_store_Bps = 0;
  double alltoall_finish_s = 0;
  double allreduce_finish_s = 0;
  double nvlink_store_Bps = 0;  // the datasheet's NVLink rate per direction

  // Reads designs.fused.* (missing or out of range: config::ConfigError naming the key).
  static FusedCosts read(DesignParameters& p);
};

// Bytes one rank of `ranks` stores into its peers for a collective of `comm_bytes`
// (nccl-tests convention).
double fused_pushed_bytes(FusedPair pair, double comm_bytes, int ranks);

struct FusedTimes {
  double compute_s = 0;  // the op with its stores
  double finish_s = 0;   // from the op's end until every peer has its data
  double total_s() const { return compute_s + finish_s; }
};
FusedTimes fused_times(const FusedCosts& costs, FusedPair pair, double op_s, double pushed_bytes);

}  // namespace overlapsim::sim
