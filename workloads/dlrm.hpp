#pragma once
// DLRM step of one rank (Naumov et al. 2019; DCNv2 interaction: Wang et al. 2021),
// laid out as the MLPerf DLRM-DCNv2 implementations do (TorchRec reference, HugeCTR):
// embedding tables are model parallel, or, with hybrid sharding, the small ones are
// replicated and data parallel; the MLPs and the interaction are data parallel.
//
// Per rank with local batch Bl, global batch B = W·Bl, D = embedding_dim, e = bytes per
// embedding element; the plan (plan_dlrm_sharding) gives the rank's model-parallel rows
// gathered per global sample (r) and pooled rows produced per global sample (p):
//   lookup         EmbeddingLookup: model-parallel tables B·(r + p)·D·e bytes (gather the
//                  rows, write the pooled rows); data-parallel tables Bl·(H_dp + n_dp)·D·e
//   exchange       balanced / table_wise: all-to-all of the pooled rows, B·p·D·e bytes
//                  per rank (nccl-tests send-buffer convention); row_wise: reduce-scatter
//                  of the B·n_mp partial pools (B·n_mp·D·e bytes in); paired with the lookup
//   bottom MLP     runs while the exchange is in flight
//   interaction    DCNv2 low-rank cross layers x_{l+1} = x0 ⊙ (U (V^T x_l) + b) + x_l
//   top MLP        last layer (n = 1) is a GEMV
// Backward mirrors it: the pooled gradients go back (all-to-all, or all-gather for
// row_wise), the model-parallel backward B·(p + 2r)·D·e bytes (read pooled gradients,
// read-modify-write rows; optimizer adam: B·(p + 6r)·D·e, lazy Adam's m and v of each row
// too) applies the sparse update fused, so those tables take no part in the DP reduction. Data-parallel tables scatter their gradients into a dense buffer
// (rows·D·4 bytes written, Bl·(n_dp + 2·H_dp)·D·e moved) that joins the dense parameters'
// bucketed all-reduce and optimizer.
#include <cstdint>
#include <vector>

#include "workloads/grad_buckets.hpp"
#include "workloads/model.hpp"
#include "workloads/parallel_layout.hpp"
#include "workloads/rank_builder.hpp"
#include "workloads/transformer_emitter.hpp"

namespace overlapsim::workloads {

// Which tables are data parallel and which model parallel, and the model-parallel load of
// the rank a folded step simulates. The one place the table placement is decided: the
// generator and the memory model both read it.
//   data parallel   tables with rows <= data_parallel_max_rows (hybrid sharding: HugeCTR's
//                   embedding collection plans tables of at most 6,000 rows "dp", Merlin
//                   Distributed Embeddings' data_parallel_threshold likewise by size)
//   balanced        each rank holds 1/W of every model-parallel table and does 1/W of its
//                   lookups and pooled outputs
//   table_wise      whole tables, largest hotness first (ties: more rows first, then table
//                   order), each to the rank with the fewest lookups so far (ties: fewest
//                   rows, then lowest rank) -- TorchRec's greedy table-wise placement; the
//                   rank with the most lookups is the one the step waits for
//   row_wise        each table split by rows over all W ranks (ids spread uniformly): 1/W
//                   of the lookups, but partial pools for every sample of the global batch
struct DlrmShardPlan {
  std::vector<int> data_parallel;   // indices into DlrmSpec::tables, in table order
  std::vector<int> model_parallel;  // likewise
  std::vector<std::vector<int>> tables_of_rank;  // table_wise: each rank's tables
  int busiest_rank = 0;                          // table_wise: the most loaded rank
  // The simulated rank's model-parallel work, per sample of the global batch.
  double mp_rows_per_sample = 0;    // rows gathered (lookups)
  double mp_pooled_per_sample = 0;  // pooled rows produced (sent back to the sample owners)
  double mp_table_rows = 0;         // model-parallel rows held on the rank
  std::int64_t dp_table_rows = 0;   // rows of the replicated tables (on every rank)
  int dp_hotness = 0;               // sum of the data-parallel tables' hotness
  int mp_hotness = 0;               // sum of the model-parallel tables' hotness
};
DlrmShardPlan plan_dlrm_sharding(const DlrmSpec& dlrm, int world_size);

void emit_dlrm_rank(const ModelSpec& spec, const ParallelLayout& layout, const RankGroups& groups,
                    RankBuilder& builder, GradSyncOptions sync);

}  // namespace overlapsim::workloads
