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
// too) applies the sparse update fused, so those tables take no part in the DP reduction.
// Data-parallel tables scatter their gradients into a dense buffer (rows·D·4 bytes
// written, Bl·(n_dp + 2·H_dp)·D·e moved) that joins the dense parameters' bucketed
// all-reduce and optimizer.
//
// The exchange carries x bytes per element (exchange_precision, default e). With
// embedding_ops: tensorflow (Merlin Distributed Embeddings under TensorFlow/Keras, as
// NVIDIA DeepLearningExamples' TF2 DLRM/DCNv2 runs it), the model-parallel path is the
// framework's separate ops instead of fused kernels; with U the expected distinct rows of
// the rank's tables in one step (expected_unique_rows):
//   lookup         tf.gather per table (hotness 1: B·(r + p)·D·e as above)
//   pack           the local outputs concatenated into the send buffer and cast to the
//                  exchange type: B·p·D·(e + x) (one pass, concat and cast fused by XLA)
//   unpack (bwd)   the received gradients cast back, sliced per table, divided by W
//                  (DistributedGradientTape) and loss-scale unscaled: B·p·D·(x + e)
//   dedup (bwd)    TensorFlow's IndexedSlices deduplication before a Keras optimizer
//                  (unique, unsorted segment sum): reads the B·r gradient rows, zeroes and
//                  accumulates U rows: (B·r + 2U)·D·e
//   update (bwd)   the optimizer over the U rows as ops: lazy Adam (tfa LazyAdam) gathers
//                  m and v (2 passes each), one fused update reading m, v, g and writing
//                  m_t, v_t and the step (6), scatters m and v (2 each) and scatter-subs
//                  the rows (3): 17·U·D·4 bytes; Adagrad (one sparse-apply kernel): 5·U·D·4
//   dense, fp16    Keras' loss-scale unscale of every dense gradient, its own pass before
//                  the dense optimizer: 8 more bytes per parameter
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
//   memory_balanced whole tables as Merlin Distributed Embeddings places them
//                   (dist_model_parallel.py, DistEmbeddingStrategy, strategy
//                   "memory_balanced"): tables sorted by size (rows·D), largest first, ties
//                   the later table first; rank i takes positions i, i + 2W, ... and
//                   2W-1-i, 4W-1-i, ... -- so every rank holds about as many tables, one
//                   large and one small in each pair, whatever their lookups. The simulated
//                   rank is the one with the most lookups (ties: the most rows, then the
//                   lowest rank)
struct DlrmShardPlan {
  std::vector<int> data_parallel;   // indices into DlrmSpec::tables, in table order
  std::vector<int> model_parallel;  // likewise
  std::vector<std::vector<int>> tables_of_rank;  // table_wise, memory_balanced: each rank's
  int busiest_rank = 0;                          // tables; the most loaded rank
  // The simulated rank's model-parallel work, per sample of the global batch.
  double mp_rows_per_sample = 0;    // rows gathered (lookups)
  double mp_pooled_per_sample = 0;  // pooled rows produced (sent back to the sample owners)
  // Model-parallel rows held on the rank; memory_balanced: on the rank holding the most
  // (the one the memory model must fit), not necessarily the simulated one.
  double mp_table_rows = 0;
  std::int64_t dp_table_rows = 0;   // rows of the replicated tables (on every rank)
  int dp_hotness = 0;               // sum of the data-parallel tables' hotness
  int mp_hotness = 0;               // sum of the model-parallel tables' hotness
};
DlrmShardPlan plan_dlrm_sharding(const DlrmSpec& dlrm, int world_size);

// Expected number of distinct rows among `draws` independent lookups into a table of
// `rows` rows whose indices follow DeepLearningExamples' synthetic generator
// (dataloading/synthetic_dataset.py, power_law): y drawn with density ~ y^-alpha on
// [1, rows + 1), index floor(y) - 1; alpha 0 is uniform. Sum over rows k of
// 1 - (1 - p_k)^draws, exact for the first 65,536 rows and over blocks of rows 2 % apart
// beyond (p_k varies by under 3 % within a block).
double expected_unique_rows(std::int64_t rows, double draws, double alpha);

// Distinct model-parallel rows the simulated rank updates in one step of `global_batch`
// samples: its tables' expected_unique_rows (balanced, row_wise: 1/W of every table's).
double mp_unique_rows_per_step(const DlrmSpec& dlrm, const DlrmShardPlan& plan,
                               std::int64_t global_batch, int world_size);

void emit_dlrm_rank(const ModelSpec& spec, const ParallelLayout& layout, const RankGroups& groups,
                    RankBuilder& builder, GradSyncOptions sync);

}  // namespace overlapsim::workloads
