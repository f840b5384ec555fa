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
//
// The embedding backward (kernels/fused/embedding_alltoall_backward.hpp) is a consumer: every
// source stores its pooled-row gradients into the table owners' receive buffers, and each
// owner expands a source's rows into the per-lookup gradient once that source's counter
// says they landed (its own rows first). The pair ends on whichever comes last:
//   expansion = op_s backward_expand_factor + W pushed_bytes / backward_store_Bps
//   arrival   = (W-1) backward_owner_step_s + pushed_bytes / backward_arrival_Bps
//               + op_s backward_expand_factor / W
//   pair      = max(expansion, arrival) + backward_finish_s
// The expansion runs at its own rate within the fused grid (its tiles claimed on demand,
// unlike the standalone kernel's static split) and slows by the exchange's bytes; the
// arrival bound is the last source's rows landing after a push step per owner (barrier,
// system fence, counter) and the pushed bytes, then that source's share of the expansion.
// The store cost is per byte of the whole exchange (W pushed_bytes): measured on 2 and 4
// ranks, where the cost per pushed byte doubled from 2 to 4 (docs/designs.md); its cause
// is not measured, and 8 ranks are not. These five keys are optional: without them the
// design leaves the backward pair sequential.
#include <optional>

#include "sim/graph/op_graph.hpp"
#include "sim/overlap/design_parameters.hpp"

namespace overlapsim::sim {

enum class FusedPair { EmbeddingAllToAll, GemvAllReduce, GemmAllToAll, EmbeddingBackward };

// The producer pair (op -> collective) a fused kernel exists for, or nullopt.
std::optional<FusedPair> fused_pair_of(OpKind op, CollectiveOp collective);
// Either side: a consumer (collective -> op) is the embedding backward (All-to-All ->
// embedding), or nullopt.
std::optional<FusedPair> fused_pair_of(OpKind op, CollectiveOp collective, bool producer);
// The forward pairs whose op is memory-bound (embedding, GEMV); not the backward, which
// has its own terms.
bool memory_bound(FusedPair pair);

struct FusedCosts {
  double memory_bound_overhead_fraction = 0;
  double memory_bound_store_Bps = 0;
  double gemm_store_Bps = 0;
  double alltoall_finish_s = 0;
  double allreduce_finish_s = 0;
  double nvlink_store_Bps = 0;  // the datasheet's NVLink rate per direction

  // The embedding backward (all five or none in a profile; has_backward says which).
  bool has_backward = false;
  double backward_expand_factor = 0;  // the fused expansion's time / the standalone's
  double backward_store_Bps = 0;      // per byte of the whole exchange (W x pushed)
  double backward_finish_s = 0;
  double backward_owner_step_s = 0;  // a source's push step per owner
  double backward_arrival_Bps = 0;   // a source's pushes while the grid expands

  // Reads designs.fused.* (missing or out of range: config::ConfigError naming the key).
  static FusedCosts read(DesignParameters& p);
};

// Bytes one rank of `ranks` stores into its peers for a collective of `comm_bytes`
// (nccl-tests convention).
double fused_pushed_bytes(FusedPair pair, double comm_bytes, int ranks);

struct FusedTimes {
  double compute_s = 0;  // the op with its stores (backward: until the last expansion ends)
  double finish_s = 0;   // from the op's end until every peer has its data
  bool arrival_bound = false;  // backward: the rows' arrival, not the expansion, set it
  double total_s() const { return compute_s + finish_s; }
};
// The pair's time, the one place that answers it; `ranks` (>= 2) only for the backward.
FusedTimes fused_times(const FusedCosts& costs, FusedPair pair, double op_s, double pushed_bytes,
                       int ranks = 0);

}  // namespace overlapsim::sim
