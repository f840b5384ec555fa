#pragma once
// DLRM step of one rank (Naumov et al. 2019; DCNv2 interaction: Wang et al. 2021),
// laid out as in the MLPerf DLRM-DCNv2 reference (TorchRec): embedding tables are model
// parallel over all ranks, the MLPs and the interaction are data parallel.
//
// Per rank with local batch Bl, D = embedding_dim, n tables, H = sum of hotness:
//   lookup         EmbeddingLookup, Bl·(H + n)·D·e bytes: gathers Bl·H rows, writes Bl·n
//                  pooled rows. Sharding is taken as balanced: every rank does 1/W of
//                  the global batch's lookups, which is Bl·H rows.
//   all-to-all     pooled embeddings to the ranks that own the samples, Bl·n·D·e bytes
//                  per rank (nccl-tests send-buffer convention), paired with the lookup
//   bottom MLP     runs while the all-to-all is in flight
//   interaction    DCNv2 low-rank cross layers x_{l+1} = x0 ⊙ (U (V^T x_l) + b) + x_l
//   top MLP        last layer (n = 1) is a GEMV
// Backward mirrors it; the embedding backward (Bl·(n + 2H)·D·e bytes: read pooled
// gradients, read-modify-write rows) applies the sparse update fused, so tables take no
// part in the DP reduction. Dense parameters reduce over all ranks, bucketed.
#include "workloads/grad_buckets.hpp"
#include "workloads/model.hpp"
#include "workloads/parallel_layout.hpp"
#include "workloads/rank_builder.hpp"
#include "workloads/transformer_emitter.hpp"

namespace overlapsim::workloads {

void emit_dlrm_rank(const ModelSpec& spec, const ParallelLayout& layout, const RankGroups& groups,
                    RankBuilder& builder, GradSyncOptions sync);

}  // namespace overlapsim::workloads
