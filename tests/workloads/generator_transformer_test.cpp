#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "config/error.hpp"
#include "step_graph_util.hpp"
#include "tests/workloads/workloads_test_util.hpp"
#include "workloads/generator.hpp"
#include "workloads/grad_buckets.hpp"

using namespace overlapsim;
using namespace overlapsim::workloads;
using namespace overlapsim::workloads::testing;
using sim::CollectiveOp;
using sim::OpKind;
using sim::Phase;
using sim::StreamKind;

namespace {

// Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
// Using Megatron-LM", eq. (3): FLOPs per iteration with full activation recomputation,
// non-causal attention: 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)).
double megatron_flops(double B, double s, double l, double h, double V) {
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

// GPT-3 175B as Narayanan et al. 2021 ran it (table 1: TP 8, PP 8, batch 1536, full
// recomputation, data-parallel all-reduce, no sequence parallelism): their FLOP formula and
// the per-stage closed forms below hold for it. The shipped file runs NeMo's layout.
ModelSpec narayanan_gpt3() {
  ModelSpec m = shipped("gpt3-175b");
  m.parallelism.tp = 8;
  m.parallelism.pp = 8;
  m.parallelism.virtual_stages = 1;
  m.parallelism.sequence_parallel = false;
  m.training.global_batch = 1536;
  m.training.recompute = Recompute::Full;
  m.training.grad_sync = GradSync::AllReduce;
  m.training.grad_bucket_bytes = 25ull << 20;
  return m;
}

// Llama 3 70B on TP 8 + SP, PP 4 (20 layers per stage), no interleaving.
ModelSpec llama70b_tp8_pp4() {
  ModelSpec m = shipped("llama3-70b");
  m.parallelism.tp = 8;
  m.parallelism.pp = 4;
  m.parallelism.virtual_stages = 1;
  return m;
}

std::string tiny_path() {
  return std::string(OVERLAPSIM_SOURCE_DIR) + "/tests/workloads/data/tiny-gpt-16gpu.yaml";
}

// Runs the dependency structure of an unfolded step with zero-time ops: an op completes
// once its predecessors have; a send and a receive (the k-th on their link, in vertex
// order) complete together once both are ready, as a rendezvous transfer. Collectives are
// taken to meet (every member runs the same program). Returns the ops that never ran.
int stuck_ops(const sim::StepGraph& step) {
  struct Ref {
    int rank;
    sim::OpVertex v;
  };
  std::map<int, int> index_of;
  for (std::size_t i = 0; i < step.ranks.size(); ++i) index_of[step.ranks[i].rank] = i;
  std::vector<std::vector<int>> missing(step.ranks.size());
  std::map<std::tuple<int, int, int>, std::vector<Ref>> link_slot;  // (src, dst, k) -> ready
  std::map<std::tuple<int, int, int>, int> slot_of;
  std::vector<Ref> ready;
  int total = 0;
  for (std::size_t i = 0; i < step.ranks.size(); ++i) {
    const auto& g = step.ranks[i].graph;
    missing[i].resize(boost::num_vertices(g));
    std::map<std::pair<int, int>, int> ordinal;
    for (auto v : boost::make_iterator_range(boost::vertices(g))) {
      ++total;
      missing[i][v] = static_cast<int>(boost::in_degree(v, g));
      if (missing[i][v] == 0) ready.push_back({static_cast<int>(i), v});
    }
  }
  auto key_of = [&](int i, sim::OpVertex v) {
    const auto& op = step.ranks[i].graph[v];
    const int me = step.ranks[i].rank;
    const int src = op.is_send ? me : op.peer_rank, dst = op.is_send ? op.peer_rank : me;
    int k = 0;
    for (auto u : boost::make_iterator_range(boost::vertices(step.ranks[i].graph))) {
      if (u == v) break;
      const auto& o = step.ranks[i].graph[u];
      k += o.kind == OpKind::SendRecv && o.is_send == op.is_send && o.peer_rank == op.peer_rank;
    }
    return std::make_tuple(src, dst, k);
  };
  int done = 0;
  auto finish = [&](const Ref& r, std::vector<Ref>& next) {
    ++done;
    const auto& g = step.ranks[r.rank].graph;
    for (auto e : boost::make_iterator_range(boost::out_edges(r.v, g))) {
      auto t = boost::target(e, g);
      if (--missing[r.rank][t] == 0) next.push_back({r.rank, t});
    }
  };
  while (!ready.empty()) {
    std::vector<Ref> next;
    for (const Ref& r : ready) {
      const auto& op = step.ranks[r.rank].graph[r.v];
      if (op.kind != OpKind::SendRecv) {
        finish(r, next);
        continue;
      }
      auto& slot = link_slot[key_of(r.rank, r.v)];
      slot.push_back(r);
      if (slot.size() == 2) {
        finish(slot[0], next);
        finish(slot[1], next);
      }
    }
    ready.swap(next);
  }
  return total - done;
}

}  // namespace

TEST(TransformerGenerator, Gpt3FlopsEqualMegatronFormula) {
  ModelSpec spec = narayanan_gpt3();
  spec.transformer.attention.causal = false;  // the formula counts the full s x s attention
  auto step = generate_step(spec, 1024);
  const double B = 1536, s = 2048, l = 96, h = 12288, V = 51200;
  const double expected = megatron_flops(B, s, l, h, V);
  EXPECT_LT(rel(step.flops_per_step, expected), 0.01);
  EXPECT_LT(rel(step.flops_per_step, expected), 1e-9) << "formula is exact for this model";
  // Without recomputation: 3x forward of the layers (72·B·s·l·h² + 12·B·s²·l·h) + logits.
  const double model = 72 * B * s * l * h * h + 12 * B * s * s * l * h + 6 * B * s * h * V;
  EXPECT_LT(rel(step.model_flops_per_step, model), 1e-9);
  EXPECT_DOUBLE_EQ(step.tokens_per_step, B * s);
  EXPECT_EQ(step.throughput_unit, "tokens");
}

TEST(TransformerGenerator, CausalAttentionHalvesTheAttentionTerm) {
  auto step = generate_step(narayanan_gpt3(), 1024);
  const double B = 1536, s = 2048, l = 96, h = 12288, V = 51200;
  // 4 passes over the layers (forward, recompute, 2x backward) with attention halved.
  const double expected = 4 * (24 * B * s * l * h * h + 2 * B * s * s * l * h) + 6 * B * s * h * V;
  EXPECT_LT(rel(step.flops_per_step, expected), 1e-9);
}

// A sliding window of w = 512 keys on every layer but each second one (Megatron
// --window-attn-skip-freq 2: layers 2, 4, ... 1-based attend to everything): the windowed
// half of the layers has s·w − w²/2 query-key pairs where the causal layers have s²/2.
TEST(TransformerGenerator, SlidingWindowLayersAttendToTheWindowOnly) {
  const double B = 1536, s = 2048, l = 96, h = 12288, V = 51200, w = 512;
  ModelSpec m = narayanan_gpt3();
  m.transformer.attention.window = 512;
  m.transformer.attention.full_attention_every = 2;
  // Per layer and pass: GEMMs 24·B·s·h², attention 4·B·h·pairs (QK^T and PV).
  const double gemms = 24 * B * s * l * h * h;
  const double causal = 4 * B * h * (s * s / 2), windowed = 4 * B * h * (s * w - w * w / 2);
  const double layers = gemms + l / 2 * (causal + windowed);
  EXPECT_LT(rel(generate_step(m, 1024).flops_per_step, 4 * layers + 6 * B * s * h * V), 1e-9);
  // Every layer windowed; a window as long as the sequence is plain causal attention.
  m.transformer.attention.full_attention_every = 0;
  EXPECT_LT(
      rel(generate_step(m, 1024).flops_per_step, 4 * (gemms + l * windowed) + 6 * B * s * h * V),
      1e-9);
  m.transformer.attention.window = 2048;
  EXPECT_LT(
      rel(generate_step(m, 1024).flops_per_step, 4 * (gemms + l * causal) + 6 * B * s * h * V),
      1e-9);
}

// Attention ops carry the shape a fused kernel's efficiency depends on: the head dimension
// and the causal sequence sweeping as many keys per query row (compute.attention_table).
// GPT-3 (96 heads of 128, s = 2048): causal layers 2048, windowed ones (w = 512) 2w - w²/s.
TEST(TransformerGenerator, AttentionOpsCarryHeadDimensionAndSweptSequence) {
  ModelSpec m = narayanan_gpt3();
  m.transformer.attention.window = 512;
  m.transformer.attention.full_attention_every = 2;
  std::map<double, int> seqs;
  for_each_op(generate_step(m, 1024).ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    if (op.kind != sim::OpKind::Attention) return;
    EXPECT_DOUBLE_EQ(op.attention.head_dim, 128) << op.name;
    EXPECT_DOUBLE_EQ(op.attention.query_tiles, 1 * 96 / 8 * (2048 / 128)) << op.name;
    ++seqs[op.attention.seq_len];
  });
  ASSERT_EQ(seqs.size(), 2u);
  EXPECT_DOUBLE_EQ(seqs.begin()->first, 2 * 512 - 512.0 * 512 / 2048);
  EXPECT_DOUBLE_EQ(seqs.rbegin()->first, 2048);
  EXPECT_EQ(seqs.begin()->second, seqs.rbegin()->second);
}

// QK-norm: per layer and microbatch a forward pass over the rank's query and key heads
// (read and write, bf16) after the QKV projection and a backward of three (the gradients and
// saved inputs read, the input gradients written). Llama 3 70B at TP 8: 8 query heads and 1
// KV head of 128 a rank over 8192 tokens.
TEST(TransformerGenerator, QkNormPassesOverTheRanksQueryAndKeyHeads) {
  ModelSpec m = llama70b_tp8_pp4();
  m.training.global_batch = 32;  // 8 microbatches on dp 4: enough to count
  const double T = 8192, heads = 8, kv = 1, hd = 128, e = 2;
  const auto count = [](const sim::RankProgram& p, const std::string& tail, double* bytes) {
    int n = 0;
    for_each_op(p, [&](sim::OpVertex, const sim::OpNode& op) {
      if (!ends_with(op.name, tail)) return;
      ++n;
      *bytes = op.bytes;
    });
    return n;
  };
  double fwd = 0, bwd = 0;
  {
    const sim::StepGraph plain = generate_step(m, 128);
    EXPECT_EQ(count(plain.ranks[0], ".qk_norm", &fwd), 0);
  }
  m.transformer.attention.qk_norm = true;
  const sim::StepGraph step = generate_step(m, 128);
  const int microbatches = static_cast<int>(microbatch_count(resolve_for_world(m, 128)));
  EXPECT_EQ(count(step.ranks[0], ".qk_norm", &fwd), 20 * microbatches);
  EXPECT_EQ(count(step.ranks[0], ".qk_norm.bwd", &bwd), 20 * microbatches);
  EXPECT_DOUBLE_EQ(fwd, 2 * T * (heads + kv) * hd * e);
  EXPECT_DOUBLE_EQ(bwd, 3 * T * (heads + kv) * hd * e);
}

// Rotary embeddings: per layer and microbatch one pass each way over the rank's query and key
// heads (a read and a write of each), forward and backward; none with learned positions.
TEST(TransformerGenerator, RopeRotatesTheRanksQueryAndKeyHeads) {
  ModelSpec m = llama70b_tp8_pp4();
  m.training.global_batch = 32;
  const double T = 8192, heads = 8, kv = 1, hd = 128, e = 2;
  int fwd = 0, bwd = 0;
  const sim::StepGraph step = generate_step(m, 128);
  for_each_op(step.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    const bool f = ends_with(op.name, ".rope"), b = ends_with(op.name, ".rope.bwd");
    if (!f && !b) return;
    ++(f ? fwd : bwd);
    EXPECT_DOUBLE_EQ(op.bytes, 2 * T * (heads + kv) * hd * e) << op.name;
  });
  const int microbatches = static_cast<int>(microbatch_count(resolve_for_world(m, 128)));
  EXPECT_EQ(fwd, 20 * microbatches);
  EXPECT_EQ(bwd, 20 * microbatches);
  m.transformer.position = PositionEmbedding::Learned;
  int learned = 0;
  for_each_op(generate_step(m, 128).ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    learned += ends_with(op.name, ".rope") || ends_with(op.name, ".rope.bwd");
  });
  EXPECT_EQ(learned, 0);
}

// Block recompute (Megatron --recompute-method block --recompute-num-layers 5): only the
// first 5 of each stage's 12 layers run their forward again, so the layers take
// 3 + 5/12 passes; with 2 virtual chunks of 6 layers, 3 + 10/12.
TEST(TransformerGenerator, BlockRecomputeRerunsTheFirstLayersOfEachChunk) {
  const double B = 1536, s = 2048, l = 96, h = 12288, V = 51200;
  const double layer_pass = 24 * B * s * l * h * h + 2 * B * s * s * l * h;
  ModelSpec m = narayanan_gpt3();
  m.training.recompute_layers = 5;
  EXPECT_LT(
      rel(generate_step(m, 1024).flops_per_step, (3 + 5.0 / 12) * layer_pass + 6 * B * s * h * V),
      1e-9);
  EXPECT_DOUBLE_EQ(fully_recomputed_share(m), 5.0 / 12);
  m.parallelism.virtual_stages = 2;
  EXPECT_LT(
      rel(generate_step(m, 1024).flops_per_step, (3 + 10.0 / 12) * layer_pass + 6 * B * s * h * V),
      1e-9);
  m.training.recompute_layers = 12;  // as many as a chunk holds: every layer
  EXPECT_LT(rel(generate_step(m, 1024).flops_per_step, 4 * layer_pass + 6 * B * s * h * V), 1e-9);
}

// Counting the embedding and the loss in the interleaved split moves layers between chunks
// and keeps the work: 94 layers + 2 = 96 slots over pp 8 x 2 chunks, the FLOPs of 94 layers.
TEST(TransformerGenerator, EmbeddingAndLossInTheSplitKeepTheWork) {
  ModelSpec m = narayanan_gpt3();
  m.transformer.layers = 94;
  m.parallelism.virtual_stages = 2;
  m.parallelism.embedding_in_split = true;
  m.parallelism.loss_in_split = true;
  const double B = 1536, s = 2048, l = 94, h = 12288, V = 51200;
  const double expected = 4 * (24 * B * s * l * h * h + 2 * B * s * s * l * h) + 6 * B * s * h * V;
  EXPECT_LT(rel(generate_step(m, 1024).flops_per_step, expected), 1e-9);
}

TEST(TransformerGenerator, Llama70bFlopsAreSixTimesParamsTimesTokensPlusAttention) {
  auto step = generate_step(llama70b_tp8_pp4(), 1024);
  const double l = 80, h = 8192, f = 28672, V = 128256, heads = 64, kv = 8, d = 128;
  const double B = 2048, s = 8192, tokens = B * s;
  // Weights that multiply activations: attention (q, k, v, o), SwiGLU MLP (3 matrices) and
  // the output layer. The input embedding is a lookup (no FLOPs); norms carry no FLOPs.
  const double params = l * (h * (heads + 2 * kv) * d + heads * d * h + 3 * h * f) + h * V;
  // Causal attention: 2 matmuls of 2·s·s·h FLOPs per layer per sequence, halved, x3.
  const double attention = 3 * l * B * (4 * s * s * heads * d) / 2;
  const double expected = 6 * params * tokens + attention;
  EXPECT_LT(rel(step.model_flops_per_step, expected), 0.01);
  EXPECT_LT(rel(step.model_flops_per_step, expected), 1e-9);
  // Selective recomputation re-runs the attention core once more in backward.
  EXPECT_LT(rel(step.flops_per_step - step.model_flops_per_step, attention / 3), 1e-9);
}

TEST(TransformerGenerator, DpAllReduceBytesEqualEachStagesParameterBytes) {
  auto step = generate_step(narayanan_gpt3(), 1024);
  ASSERT_EQ(step.ranks.size(), 8u);
  const std::int64_t h = 12288, V = 51200, s = 2048, tp = 8;
  const std::int64_t per_layer = 12 * h * h / tp + 7 * h / tp + 6 * h;  // weights, biases, norms
  for (int stage = 0; stage < 8; ++stage) {
    const auto& rank = step.ranks[stage];
    EXPECT_EQ(rank.multiplicity, 128);
    std::int64_t params = 12 * per_layer;
    if (stage == 0) params += V / tp * h + s * h;  // word and position embeddings
    if (stage == 7) params += V / tp * h + 2 * h;  // tied output-layer copy, final norm
    double dp_bytes = sum_ops(
        rank,
        [&](const sim::OpNode& op) {
          return op.stream == StreamKind::DataComm && family_of(step, op) == "dp";
        },
        [](const sim::OpNode& op) {
          EXPECT_EQ(op.collective, CollectiveOp::AllReduce);
          return static_cast<double>(op.comm_bytes);
        });
    EXPECT_DOUBLE_EQ(dp_bytes, 4.0 * params) << "stage " << stage;  // fp32 gradients
    double embd = sum_ops(
        rank, [&](const sim::OpNode& op) { return family_of(step, op) == "embd"; },
        [](const sim::OpNode& op) { return static_cast<double>(op.comm_bytes); });
    EXPECT_DOUBLE_EQ(embd, (stage == 0 || stage == 7) ? 4.0 * V / tp * h : 0.0);
  }
}

TEST(TransformerGenerator, DistributedOptimizerReduceScattersGradsAndGathersParams) {
  auto step = generate_step(llama70b_tp8_pp4(), 1024);
  const std::int64_t h = 8192, V = 128256, tp = 8;
  const std::int64_t per_layer =
      h * (64 + 16) * 128 / tp + 64 * 128 / tp * h + 3 * h * 28672 / tp + 2 * h;
  for (int stage = 0; stage < 4; ++stage) {
    std::int64_t params = 20 * per_layer;
    if (stage == 0) params += V / tp * h;
    if (stage == 3) params += V / tp * h + h;
    const auto& rank = step.ranks[stage];
    auto bytes_of = [&](CollectiveOp op) {
      return sum_ops(
          rank,
          [&](const sim::OpNode& n) {
            return n.stream == StreamKind::DataComm && n.collective == op &&
                   family_of(step, n) == "dp";
          },
          [](const sim::OpNode& n) { return static_cast<double>(n.comm_bytes); });
    };
    EXPECT_DOUBLE_EQ(bytes_of(CollectiveOp::ReduceScatter), 4.0 * params) << stage;
    EXPECT_DOUBLE_EQ(bytes_of(CollectiveOp::AllGather), 2.0 * params) << stage;
    EXPECT_DOUBLE_EQ(bytes_of(CollectiveOp::AllReduce), 0.0);
  }
}

TEST(TransformerGenerator, GradientBucketsFollowTheBackwardOpsThatProduceThem) {
  auto step = generate_step(narayanan_gpt3(), 1024);
  const auto& rank = step.ranks[3];
  const int last_mb = 1536 / 16 - 1;
  int buckets = 0;
  sim::OpVertex first_bucket = 0;
  for_each_op(rank, [&](sim::OpVertex v, const sim::OpNode& op) {
    if (op.stream != StreamKind::DataComm || op.phase != Phase::Backward) return;
    if (buckets++ == 0) first_bucket = v;
    bool fed_by_last_backward = false;
    for (auto e : boost::make_iterator_range(boost::in_edges(v, rank.graph))) {
      const auto& src = rank.graph[boost::source(e, rank.graph)];
      if (src.stream == StreamKind::Compute && src.phase == Phase::Backward &&
          src.microbatch == last_mb) {
        fed_by_last_backward = true;
      }
    }
    EXPECT_TRUE(fed_by_last_backward) << op.name;
  });
  EXPECT_GT(buckets, 12);  // at least one per layer: every weight matrix is > 25 MiB here
  // The first bucket waits only for what precedes its producer: the rest of the last
  // microbatch's backward is free to run beside it.
  std::vector<char> ancestor(boost::num_vertices(rank.graph), 0);
  std::vector<sim::OpVertex> todo{first_bucket};
  while (!todo.empty()) {
    auto v = todo.back();
    todo.pop_back();
    for (auto e : boost::make_iterator_range(boost::in_edges(v, rank.graph))) {
      auto u = boost::source(e, rank.graph);
      if (!ancestor[u]) {
        ancestor[u] = 1;
        todo.push_back(u);
      }
    }
  }
  double overlappable = 0, backward = 0;
  for_each_op(rank, [&](sim::OpVertex v, const sim::OpNode& op) {
    if (op.stream != StreamKind::Compute || op.phase != Phase::Backward) return;
    if (op.microbatch == last_mb) backward += op.flops;
    if (op.microbatch == last_mb && !ancestor[v]) overlappable += op.flops;
  });
  EXPECT_GT(overlappable, 0.9 * backward);  // first bucket: the last layer's first weights
}

TEST(TransformerGenerator, TensorParallelCollectivesPerLayer) {
  auto gpt = generate_step(narayanan_gpt3(), 1024);
  auto count = [&](const sim::StepGraph& step, const sim::RankProgram& r, int layer, Phase phase,
                   CollectiveOp op, std::uint64_t bytes) {
    int n = 0;
    for_each_op(r, [&](sim::OpVertex, const sim::OpNode& o) {
      if (o.layer == layer && o.microbatch == 0 && o.phase == phase && !o.recompute &&
          o.kind == OpKind::Collective && family_of(step, o) == "tp" && o.collective == op) {
        EXPECT_EQ(o.comm_bytes, bytes) << o.name;
        ++n;
      }
    });
    return n;
  };
  const std::uint64_t gpt_bytes = 2048ull * 12288 * 2;  // b·s·h bf16
  EXPECT_EQ(count(gpt, gpt.ranks[1], 12, Phase::Forward, CollectiveOp::AllReduce, gpt_bytes), 2);
  EXPECT_EQ(count(gpt, gpt.ranks[1], 12, Phase::Backward, CollectiveOp::AllReduce, gpt_bytes), 2);

  auto llama = generate_step(llama70b_tp8_pp4(), 1024);  // sequence parallel
  const std::uint64_t sp_bytes = 8192ull * 8192 * 2;
  EXPECT_EQ(count(llama, llama.ranks[1], 25, Phase::Forward, CollectiveOp::AllGather, sp_bytes), 2);
  EXPECT_EQ(count(llama, llama.ranks[1], 25, Phase::Forward, CollectiveOp::ReduceScatter, sp_bytes),
            2);
  // Backward: all-gather of the output gradient (x2) and of the input for wgrad (x2),
  // reduce-scatter of the input gradient (x2).
  EXPECT_EQ(count(llama, llama.ranks[1], 25, Phase::Backward, CollectiveOp::AllGather, sp_bytes),
            4);
  EXPECT_EQ(
      count(llama, llama.ranks[1], 25, Phase::Backward, CollectiveOp::ReduceScatter, sp_bytes), 2);
  // Pipeline transfers carry the sequence-parallel shard: b·s/tp·h.
  for_each_op(llama.ranks[1], [&](sim::OpVertex, const sim::OpNode& o) {
    if (o.kind == OpKind::SendRecv) {
      EXPECT_EQ(o.comm_bytes, sp_bytes / 8);
    }
  });
}

TEST(TransformerGenerator, PairsAreMutualAndOfTheDesignedKinds) {
  auto step = generate_step(llama70b_tp8_pp4(), 1024);
  std::map<std::string, int> kinds;
  for (const auto& rank : step.ranks) {
    for_each_op(rank, [&](sim::OpVertex v, const sim::OpNode& op) {
      if (op.pair_partner < 0) return;
      const auto& other = rank.graph[op.pair_partner];
      ASSERT_EQ(other.pair_partner, static_cast<int>(v)) << op.name;
      if (op.kind != OpKind::Collective) return;
      EXPECT_EQ(other.kind, OpKind::Gemm) << op.name;
      // The collective either consumes the GEMM's output or feeds its input.
      bool gemm_first = static_cast<sim::OpVertex>(op.pair_partner) < v;
      auto e = gemm_first ? boost::edge(op.pair_partner, v, rank.graph)
                          : boost::edge(v, op.pair_partner, rank.graph);
      EXPECT_TRUE(e.second) << op.name;
      ++kinds[std::string(gemm_first ? "gemm+" : "") + sim::to_string(op.collective) +
              (gemm_first ? "" : "+gemm")];
    });
  }
  EXPECT_GT(kinds["gemm+reducescatter"], 0);
  EXPECT_GT(kinds["allgather+gemm"], 0);
  auto gpt = generate_step(narayanan_gpt3(), 1024);
  int allreduce_pairs = 0;
  for_each_op(gpt.ranks[2], [&](sim::OpVertex, const sim::OpNode& op) {
    allreduce_pairs += op.pair_partner >= 0 && op.collective == CollectiveOp::AllReduce &&
                       op.kind == OpKind::Collective;
  });
  // 4 per layer and microbatch (2 forward, 2 backward) plus 2 in each recomputed forward.
  EXPECT_EQ(allreduce_pairs, 12 * 96 * 6);
}

TEST(TransformerGenerator, EdgesRunForwardAndStreamsAreChained) {
  auto step = generate_step(load_model(tiny_path()), 16);
  for (const auto& rank : step.ranks) {
    std::map<StreamKind, sim::OpVertex> last;
    for_each_op(rank, [&](sim::OpVertex v, const sim::OpNode& op) {
      for (auto e : boost::make_iterator_range(boost::in_edges(v, rank.graph)))
        EXPECT_LT(boost::source(e, rank.graph), v);
      // The CP ring's sends and receives are posted together, as an NCCL group: unchained.
      if (op.kind == OpKind::SendRecv && op.stream == StreamKind::ContextComm) return;
      if (last.count(op.stream)) {
        EXPECT_TRUE(boost::edge(last[op.stream], v, rank.graph).second);
      }
      last[op.stream] = v;
    });
  }
}

TEST(TransformerGenerator, ContextParallelPassesKeysAndValuesAroundARing) {
  auto step = generate_step(load_model(tiny_path()), 16);
  // tiny: seq 128, cp 2, tp 2, 8 heads / 4 kv heads of 32: K and V of the whole sequence
  // for the local kv heads are 128 x 2 x (4 / 2) x 32 x 2 bytes, one chunk of it per CP rank.
  const std::uint64_t chunk = 128ull * 2 * (4 / 2) * 32 * 2 / 2;
  int forward_hops = 0, backward_hops = 0, home_hops = 0, blocks = 0;
  for_each_op(step.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    if (op.kind == sim::OpKind::Attention && !op.recompute) {
      ++blocks;
      EXPECT_NE(op.name.find(".block"), std::string::npos) << op.name;
    }
    if (op.stream != StreamKind::ContextComm) return;
    ASSERT_EQ(op.kind, sim::OpKind::SendRecv) << op.name;
    EXPECT_EQ(family_of(step, op), "cp");
    if (!op.is_send) return;
    if (op.name.find("cp_ring_kv_dkv") != std::string::npos) {
      EXPECT_EQ(op.comm_bytes, 2 * chunk);  // the next K/V chunk and the dK/dV so far
      ++backward_hops;
    } else if (op.name.find("cp_ring_dkv") != std::string::npos) {
      EXPECT_EQ(op.comm_bytes, chunk);  // dK/dV back to their owner
      ++home_hops;
    } else {
      EXPECT_EQ(op.comm_bytes, chunk);
      ++forward_hops;
    }
  });
  // 2 layers on stage 0 x 8 microbatches; cp - 1 = 1 hop each way, plus the hop home.
  EXPECT_EQ(forward_hops, 16);
  EXPECT_EQ(backward_hops, 16);
  EXPECT_EQ(home_hops, 16);
  EXPECT_EQ(blocks, 16 * 2 * 2);  // cp blocks forward and backward
}

TEST(TransformerGenerator, FoldedAndUnfoldedGraphsHaveTheSameOpsPerRank) {
  auto spec = load_model(tiny_path());
  auto folded = generate_step(spec, 16, {true, 8});
  auto full = generate_step(spec, 16, {false, 8});
  ASSERT_EQ(folded.ranks.size(), 2u);
  ASSERT_EQ(full.ranks.size(), 16u);
  EXPECT_EQ(folded.ranks[0].multiplicity, 8);
  ASSERT_EQ(folded.representative.size(), 16u);
  for (int r = 0; r < 16; ++r) EXPECT_EQ(folded.representative[r], r < 8 ? 0 : 8);
  EXPECT_TRUE(full.representative.empty());
  EXPECT_DOUBLE_EQ(folded.flops_per_step, full.flops_per_step);
  EXPECT_DOUBLE_EQ(folded.model_flops_per_step, full.model_flops_per_step);
  for (const auto& rank : full.ranks) {
    EXPECT_EQ(rank.multiplicity, 1);
    const auto& rep = folded.ranks[rank.rank / 8];  // 8 ranks per stage
    ASSERT_EQ(boost::num_vertices(rank.graph), boost::num_vertices(rep.graph));
    ASSERT_EQ(boost::num_edges(rank.graph), boost::num_edges(rep.graph));
    for (auto v : boost::make_iterator_range(boost::vertices(rank.graph))) {
      const auto& a = rank.graph[v];
      const auto& b = rep.graph[v];
      ASSERT_EQ(a.name, b.name);
      EXPECT_EQ(a.kind, b.kind);
      EXPECT_EQ(a.stream, b.stream);
      EXPECT_EQ(a.flops, b.flops);
      EXPECT_EQ(a.bytes, b.bytes);
      EXPECT_EQ(a.comm_bytes, b.comm_bytes);
      EXPECT_EQ(a.collective, b.collective);
      EXPECT_EQ(a.pair_partner, b.pair_partner);
      EXPECT_EQ(a.is_send, b.is_send);
      if (a.kind == OpKind::SendRecv && a.stream == StreamKind::ContextComm) {
        // A ring hop: the peer is the next or previous member of the rank's own CP group.
        const auto& g = full.groups.at(a.comm_group).ranks;
        const auto at = [&](int r) {
          return static_cast<int>(std::find(g.begin(), g.end(), r) - g.begin());
        };
        const int n = static_cast<int>(g.size());
        EXPECT_EQ((at(a.peer_rank) - at(rank.rank) + n) % n, a.is_send ? 1 : n - 1) << a.name;
      } else if (a.kind == OpKind::SendRecv) {
        EXPECT_EQ(a.peer_rank - rank.rank, b.peer_rank - rep.rank);
      }
      if (a.comm_group >= 0) {
        const auto& ga = full.groups.at(a.comm_group);
        const auto& gb = folded.groups.at(b.comm_group);
        EXPECT_EQ(ga.family, gb.family);
        EXPECT_EQ(ga.ranks.size(), gb.ranks.size());
        EXPECT_NE(std::find(ga.ranks.begin(), ga.ranks.end(), rank.rank), ga.ranks.end());
        EXPECT_NE(std::find(gb.ranks.begin(), gb.ranks.end(), rep.rank), gb.ranks.end());
      }
      std::set<sim::OpVertex> out_a, out_b;
      for (auto e : boost::make_iterator_range(boost::out_edges(v, rank.graph)))
        out_a.insert(boost::target(e, rank.graph));
      for (auto e : boost::make_iterator_range(boost::out_edges(v, rep.graph)))
        out_b.insert(boost::target(e, rep.graph));
      EXPECT_EQ(out_a, out_b) << a.name;
    }
  }
}

TEST(TransformerGenerator, SendsMatchReceivesInOrder) {
  auto full = generate_step(load_model(tiny_path()), 16, {false, 8});
  std::map<std::pair<int, int>, std::vector<const sim::OpNode*>> sends, recvs;
  for (const auto& rank : full.ranks)
    for_each_op(rank, [&](sim::OpVertex, const sim::OpNode& op) {
      if (op.kind != OpKind::SendRecv) return;
      const std::string family = family_of(full, op);
      EXPECT_TRUE(family == "pp" || family == "cp") << family;
      if (op.is_send)
        sends[{rank.rank, op.peer_rank}].push_back(&op);
      else
        recvs[{op.peer_rank, rank.rank}].push_back(&op);
    });
  ASSERT_EQ(sends.size(), recvs.size());
  for (const auto& [link, list] : sends) {
    const auto& other = recvs.at(link);
    ASSERT_EQ(list.size(), other.size());
    for (std::size_t k = 0; k < list.size(); ++k) {
      EXPECT_EQ(list[k]->microbatch, other[k]->microbatch);
      EXPECT_EQ(list[k]->comm_bytes, other[k]->comm_bytes);
      EXPECT_EQ(list[k]->phase, other[k]->phase);
    }
  }
}

TEST(TransformerGenerator, FoldedRepresentativesAreEachOthersPipelinePeers) {
  auto step = generate_step(shipped("llama3-405b"), 16384);
  ASSERT_EQ(step.ranks.size(), 16u);
  std::set<int> simulated;
  for (const auto& r : step.ranks) simulated.insert(r.rank);
  for (const auto& r : step.ranks) {
    EXPECT_EQ(r.multiplicity, 8 * 128);
    for_each_op(r, [&](sim::OpVertex, const sim::OpNode& op) {
      if (op.kind == OpKind::SendRecv) {
        EXPECT_TRUE(simulated.count(op.peer_rank)) << op.name;
      }
    });
  }
  // Uneven stages (Dubey et al. 2024): 7 layers on the first and last stage, 8 elsewhere.
  auto layers_on = [&](int stage) {
    std::set<int> layers;
    for_each_op(step.ranks[stage], [&](sim::OpVertex, const sim::OpNode& op) {
      if (op.layer >= 0) layers.insert(op.layer);
    });
    return layers.size();
  };
  EXPECT_EQ(layers_on(0), 7u);
  EXPECT_EQ(layers_on(5), 8u);
  EXPECT_EQ(layers_on(15), 7u);
}

TEST(TransformerGenerator, TiedEmbeddingOnOneStageIsOneGradient) {
  auto spec = load_model(tiny_path());
  spec.parallelism.pp = 1;
  spec.parallelism.dp = 4;
  spec.transformer.tie_embeddings = true;
  auto tied = generate_step(spec, 16);
  spec.transformer.tie_embeddings = false;
  auto untied = generate_step(spec, 16);
  auto dp_bytes = [](const sim::StepGraph& s) {
    return sum_ops(
        s.ranks[0], [&](const sim::OpNode& op) { return family_of(s, op) == "dp"; },
        [](const sim::OpNode& op) { return static_cast<double>(op.comm_bytes); });
  };
  // vocab 1000 over tp 2 -> 500 rows of 256; fp32 gradients, reduce-scattered.
  EXPECT_DOUBLE_EQ(dp_bytes(untied) - dp_bytes(tied), 500.0 * 256 * 4 + 500.0 * 256 * 2);
}

// fp8_scaling: block128 marks every fp8 GEMM (and nothing else) as block-scaled; the
// output layer's GEMMs stay bf16 under fp8 (not a Transformer Engine module).
TEST(TransformerGenerator, BlockScaledFp8MarksEveryGemm) {
  auto spec = load_model(tiny_path());
  spec.training.precision = sim::Precision::FP8;
  spec.training.fp8_scaling = Fp8Scaling::Block128;
  auto block = generate_step(spec, 16);
  spec.training.fp8_scaling = Fp8Scaling::Tensor;
  auto tensor = generate_step(spec, 16);
  const auto count = [](const sim::StepGraph& s, bool gemms) {
    return sum_ops(
        s.ranks[0],
        [&](const sim::OpNode& op) {
          return (op.kind == OpKind::Gemm) == gemms && op.fp8_block_scaled;
        },
        [](const sim::OpNode&) { return 1.0; });
  };
  const double gemms = sum_ops(
      block.ranks[0],
      [](const sim::OpNode& op) {
        return op.kind == OpKind::Gemm && op.precision == sim::Precision::FP8;
      },
      [](const sim::OpNode&) { return 1.0; });
  EXPECT_GT(gemms, 0);
  EXPECT_EQ(count(block, true), gemms);
  EXPECT_EQ(count(block, false), 0);
  EXPECT_EQ(count(tensor, true), 0);
}

TEST(TransformerGenerator, UnfoldedStepsRunToCompletionUnderRendezvousTransfers) {
  auto spec = load_model(tiny_path());
  EXPECT_EQ(stuck_ops(generate_step(spec, 16, {false, 8})), 0);
  spec.parallelism.pp = 4;
  spec.parallelism.dp = 1;
  EXPECT_EQ(stuck_ops(generate_step(spec, 16, {false, 8})), 0);  // 16 microbatches, 4 stages
  spec.parallelism.virtual_stages = 2;
  spec.parallelism.pp = 2;
  spec.parallelism.dp = 2;
  EXPECT_EQ(stuck_ops(generate_step(spec, 16, {false, 8})), 0);  // interleaved
  spec.parallelism.pp = 4;
  spec.parallelism.virtual_stages = 1;
  spec.transformer.layers = 8;
  spec.parallelism.dp = 1;
  spec.parallelism.virtual_stages = 2;
  EXPECT_EQ(stuck_ops(generate_step(spec, 16, {false, 8})), 0);
}

TEST(TransformerGenerator, InterleavingKeepsTheWorkAndFoldsTheSame) {
  auto spec = load_model(tiny_path());
  spec.transformer.layers = 8;
  auto plain = generate_step(spec, 16);
  spec.parallelism.virtual_stages = 2;
  auto folded = generate_step(spec, 16);
  auto full = generate_step(spec, 16, {false, 8});
  EXPECT_DOUBLE_EQ(folded.flops_per_step, plain.flops_per_step);
  EXPECT_DOUBLE_EQ(full.flops_per_step, plain.flops_per_step);
  // Stage 0 holds layers 0-1 (chunk 0) and 4-5 (chunk 1); the last stage's chunk 0 sends
  // its activations on to stage 0 (chunk 1).
  std::set<int> layers;
  bool wraps = false;
  for_each_op(folded.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    if (op.layer >= 0) layers.insert(op.layer);
  });
  for_each_op(folded.ranks[1], [&](sim::OpVertex, const sim::OpNode& op) {
    if (op.kind == OpKind::SendRecv && op.is_send && op.phase == Phase::Forward)
      wraps = wraps || op.peer_rank == folded.ranks[0].rank;
  });
  EXPECT_EQ(layers, (std::set<int>{0, 1, 4, 5}));
  EXPECT_TRUE(wraps);
  auto dp_bytes = [](const sim::StepGraph& s, int r) {
    return sum_ops(
        s.ranks[r], [&](const sim::OpNode& op) { return family_of(s, op) == "dp"; },
        [](const sim::OpNode& op) { return static_cast<double>(op.comm_bytes); });
  };
  EXPECT_DOUBLE_EQ(dp_bytes(folded, 0) + dp_bytes(folded, 1),
                   dp_bytes(plain, 0) + dp_bytes(plain, 1));
}

TEST(TransformerGenerator, RendezvousCheckerSeesADeadlock) {
  // Two ranks that each receive before they send: a rendezvous deadlock. Without rank 1's
  // edge (it may send first) both complete.
  auto two_ranks = [](bool rank1_receives_first) {
    sim::StepGraph step;
    step.world_size = 2;
    for (int r = 0; r < 2; ++r) {
      sim::RankProgram p;
      p.rank = r;
      sim::OpNode recv, send;
      recv.kind = send.kind = OpKind::SendRecv;
      recv.is_send = false;
      recv.peer_rank = send.peer_rank = 1 - r;
      auto a = boost::add_vertex(recv, p.graph);
      auto b = boost::add_vertex(send, p.graph);
      if (r == 0 || rank1_receives_first) boost::add_edge(a, b, p.graph);
      step.ranks.push_back(std::move(p));
    }
    return step;
  };
  EXPECT_EQ(stuck_ops(two_ranks(true)), 4);
  EXPECT_EQ(stuck_ops(two_ranks(false)), 0);
}

// ---- FP8 as Transformer Engine runs it (workloads/transformer.cpp, "FP8"): the
// quantisation kernels, fp8 all-gathers and amax reductions a one-layer model emits, by
// closed form.

namespace {

// One layer, h = 256, ffn 1024 (SwiGLU), 8 heads of 32 with 4 KV heads, T = 128 tokens,
// TP 2 with sequence parallelism (Tn = 64), two microbatches on 2 GPUs. Per TP rank:
// qkv_out = (4 + 2·2)·32 = 256, o_dim = 128, ffn_local = 512, fc1_out = 1024.
constexpr const char* kOneLayer = R"(name: one-layer
kind: transformer
transformer:
  layers: 1
  hidden: 256
  ffn_hidden: 1024
  vocab: 1000
  mlp: swiglu
  norm: rmsnorm
  attention:
    heads: 8
    kv_heads: 4
training:
  seq_len: 128
  global_batch: 2
  micro_batch: 1
  precision: fp8
  recompute: none
parallelism:
  dp: 1
  tp: 2
  sequence_parallel: true
  pp: 1
  cp: 1
)";

bool is_fp8_extra(const sim::OpNode& op) {
  const std::string& n = op.name;
  return n.find("quantize") != std::string::npos || n.find("transpose") != std::string::npos ||
         n.find("amax") != std::string::npos || n.find("scale_update") != std::string::npos;
}

// name -> bytes (elementwise) or comm_bytes (collectives) of rank 0's ops.
std::map<std::string, double> op_bytes(const sim::StepGraph& step) {
  std::map<std::string, double> out;
  for_each_op(step.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    const bool comm = op.kind == OpKind::Collective || op.kind == OpKind::SendRecv;
    out[op.name] = static_cast<double>(comm ? op.comm_bytes : op.bytes);
  });
  return out;
}

sim::StepGraph generate(const std::string& yaml, int world = 2) {
  return generate_step(load_model_string(yaml, "one-layer.yaml"), world);
}

// The error loading `yaml` as one-layer.yaml gives ("(no error)" if none).
std::string one_layer_error(const std::string& yaml) {
  return error_of([&] { load_model_string(yaml, "one-layer.yaml"); });
}

}  // namespace

TEST(Fp8Generator, Bf16EmitsNoQuantisation) {
  const auto step = generate(edit(kOneLayer, {{"precision: fp8", "precision: bf16"}}));
  EXPECT_EQ(sum_ops(step.ranks[0], is_fp8_extra, [](const sim::OpNode&) { return 1.0; }), 0);
  const auto b = op_bytes(step);
  EXPECT_EQ(b.at("L0.mb0.fwd.ln1"), 2.0 * 64 * 256 * 2);
  EXPECT_EQ(b.at("L0.mb0.fwd.ag_qkv"), 128.0 * 256 * 2);
}

// Delayed (per-tensor) scaling under SP: every cast, transpose and fp8 gather with its
// bytes, in the first microbatch.
TEST(Fp8Generator, TensorScalingChargesEachCastTransposeAndFp8Gather) {
  const auto b = op_bytes(generate(kOneLayer));
  const double T = 128, Tn = 64, h = 256;
  const std::map<std::string, double> expected = {
      // Forward: the norms write fp8 (read 2, write 1), the gathers carry 1 byte.
      {"L0.mb0.fwd.ln1", Tn * h * 3},
      {"L0.mb0.fwd.ln2", Tn * h * 3},
      {"L0.mb0.fwd.ag_qkv", T * h},
      {"L0.mb0.fwd.mlp.ag_fc1", T * h},
      // Weights: read bf16, write fp8 and its transpose, once per step.
      {"L0.mb0.fwd.qkv.weight_quantize", 4 * 256 * h},
      {"L0.mb0.fwd.proj.weight_quantize", 4 * h * 128},
      {"L0.mb0.fwd.mlp.fc1.weight_quantize", 4 * 1024 * h},
      {"L0.mb0.fwd.mlp.fc2.weight_quantize", 4 * h * 512},
      // Row-parallel inputs (not gathered): cast + transpose, 2 + 1 + 1 bytes.
      {"L0.mb0.fwd.proj.input_quantize", 4 * T * 128},
      {"L0.mb0.fwd.mlp.fc2.input_quantize", 4 * T * 512},
      // Backward, row-parallel: cast the local gradient, gather fp8, transpose for wgrad.
      {"L0.mb0.bwd.mlp.fc2.grad_quantize", 3 * Tn * h},
      {"L0.mb0.bwd.mlp.ag_fc2_grad", T * h},
      {"L0.mb0.bwd.mlp.fc2.grad_transpose", 2 * T * h},
      {"L0.mb0.bwd.proj.grad_quantize", 3 * Tn * h},
      {"L0.mb0.bwd.ag_proj_grad", T * h},
      {"L0.mb0.bwd.proj.grad_transpose", 2 * T * h},
      // Column-parallel: the output gradient cast + transposed; the input gathered again
      // in fp8 and transposed for wgrad.
      {"L0.mb0.bwd.mlp.fc1.grad_quantize", 4 * T * 1024},
      {"L0.mb0.bwd.mlp.ag_fc1_input", T * h},
      {"L0.mb0.bwd.mlp.fc1.input_transpose", 2 * T * h},
      {"L0.mb0.bwd.qkv.grad_quantize", 4 * T * 256},
      {"L0.mb0.bwd.ag_qkv_input", T * h},
      {"L0.mb0.bwd.qkv.input_transpose", 2 * T * h},
      // Delayed scaling: 4 fp8 GEMMs, 3 amaxes each in forward and 2 in backward.
      {"fp8.mb0.fwd.amax_cat", 8 * 12},
      {"fp8.mb0.fwd.amax_allreduce", 4 * 12},
      {"fp8.mb0.fwd.scale_update", 24 * 12},
      {"fp8.mb0.bwd.amax_cat", 8 * 8},
      {"fp8.mb0.bwd.amax_allreduce", 4 * 8},
      {"fp8.mb0.bwd.scale_update", 24 * 8},
  };
  for (const auto& [name, bytes] : expected) {
    ASSERT_TRUE(b.count(name)) << name;
    EXPECT_EQ(b.at(name), bytes) << name;
  }
  // Nothing else of the kind in the first microbatch.
  int extras = 0;
  for (const auto& [name, bytes] : b)
    if (name.find(".mb0.") != std::string::npos &&
        (name.find("quantize") != std::string::npos ||
         name.find("transpose") != std::string::npos || name.find("amax") != std::string::npos ||
         name.find("scale_update") != std::string::npos))
      ++extras;
  EXPECT_EQ(extras, 20);
  // The embedding gradient and the output layer's input stay bf16.
  EXPECT_EQ(b.at("head.mb0.fwd.ag_logits"), T * h * 2);
}

// Current scaling (TE Float8CurrentScaling): every cast is preceded by an amax kernel that
// reads the bf16 tensor; a tensor gathered in fp8 under SP has its amax all-reduced over TP
// first; the norms write bf16 (their amax fused) and a cast follows; the weights are read
// once more; no delayed-scaling amax reduction or scale update.
TEST(Fp8Generator, CurrentScalingTakesEachAmaxBeforeItsCast) {
  const auto b = op_bytes(
      generate(edit(kOneLayer, {{"precision: fp8", "precision: fp8\n  fp8_scaling: current"}})));
  const double T = 128, Tn = 64, h = 256;
  const std::map<std::string, double> expected = {
      {"L0.mb0.fwd.ln1", Tn * h * 4},
      {"L0.mb0.fwd.ln1.amax_allreduce", 4},
      {"L0.mb0.fwd.ln1.quantize", Tn * h * 3},
      {"L0.mb0.fwd.ag_qkv", T * h},
      {"L0.mb0.fwd.qkv.weight_quantize", 6 * 256 * h},
      {"L0.mb0.fwd.proj.input_quantize.amax", 2 * T * 128},
      {"L0.mb0.fwd.proj.input_quantize", 4 * T * 128},
      {"L0.mb0.fwd.mlp.fc2.input_quantize.amax", 2 * T * 512},
      {"L0.mb0.bwd.mlp.fc2.grad_quantize.amax", 2 * Tn * h},
      {"L0.mb0.bwd.mlp.fc2.grad_quantize.amax_allreduce", 4},
      {"L0.mb0.bwd.mlp.fc2.grad_quantize", 3 * Tn * h},
      {"L0.mb0.bwd.mlp.fc2.grad_transpose", 2 * T * h},
      {"L0.mb0.bwd.mlp.fc1.grad_quantize.amax", 2 * T * 1024},
      {"L0.mb0.bwd.mlp.fc1.grad_quantize", 4 * T * 1024},
  };
  for (const auto& [name, bytes] : expected) {
    ASSERT_TRUE(b.count(name)) << name;
    EXPECT_EQ(b.at(name), bytes) << name;
  }
  for (const char* delayed :
       {"fp8.mb0.fwd.amax_cat", "fp8.mb0.fwd.scale_update", "fp8.mb0.bwd.amax_allreduce"})
    EXPECT_FALSE(b.count(delayed)) << delayed;
  // Every cast of the first microbatch has its amax: the norms' fused, the others' own.
  int casts = 0, amaxes = 0;
  for (const auto& [name, bytes] : b) {
    if (name.find(".mb0.") == std::string::npos || name.find("weight") != std::string::npos)
      continue;
    const bool amax = name.size() > 5 && name.compare(name.size() - 5, 5, ".amax") == 0;
    if (amax)
      ++amaxes;
    else if (name.size() > 8 && name.compare(name.size() - 8, 8, "quantize") == 0)
      ++casts;
  }
  EXPECT_EQ(casts, 8);   // ln1, ln2, proj and fc2 inputs, four output gradients
  EXPECT_EQ(amaxes, 6);  // all but the two norms
}

TEST(Fp8Generator, WeightsAreQuantisedInTheFirstMicrobatchOnly) {
  const auto step = generate(kOneLayer);
  const auto count = [&](int mb) {
    return sum_ops(
        step.ranks[0],
        [&](const sim::OpNode& op) {
          return op.microbatch == mb && op.name.find("weight_quantize") != std::string::npos;
        },
        [](const sim::OpNode&) { return 1.0; });
  };
  EXPECT_EQ(count(0), 4);
  EXPECT_EQ(count(1), 0);
}

TEST(Fp8Generator, OutputLayerStaysBf16) {
  const auto step = generate(kOneLayer);
  for_each_op(step.ranks[0], [](sim::OpVertex, const sim::OpNode& op) {
    if (op.kind != OpKind::Gemm) return;
    const bool head = op.name.rfind("head.", 0) == 0;
    EXPECT_EQ(op.precision, head ? sim::Precision::BF16 : sim::Precision::FP8) << op.name;
  });
}

// Without SP the norm's fp8 output is transposed right away (TE's norm API) and the
// row-parallel gradients get one cast + transpose; nothing is gathered.
TEST(Fp8Generator, WithoutSequenceParallelismNormsAreTransposedInForward) {
  const auto b = op_bytes(
      generate(edit(kOneLayer, {{"sequence_parallel: true", "sequence_parallel: false"}})));
  const double T = 128, h = 256;
  EXPECT_EQ(b.at("L0.mb0.fwd.ln1"), T * h * 3);
  EXPECT_EQ(b.at("L0.mb0.fwd.ln1.transpose"), 2 * T * h);
  EXPECT_EQ(b.at("L0.mb0.bwd.proj.grad_quantize"), 4 * T * h);
  EXPECT_EQ(b.count("L0.mb0.bwd.proj.grad_transpose"), 0u);
  EXPECT_EQ(b.count("L0.mb0.bwd.qkv.input_transpose"), 0u);
}

// Block scaling: no amax history or reduction, no fp8 transposes; bf16 norms followed by
// a quantiser writing both copies and 4 bytes of scale per 128 elements of each.
TEST(Fp8Generator, BlockScalingQuantisesBothCopiesAndReducesNoAmax) {
  const auto b = op_bytes(
      generate(edit(kOneLayer, {{"precision: fp8", "precision: fp8\n  fp8_scaling: block128"}})));
  const double T = 128, Tn = 64, h = 256;
  EXPECT_EQ(b.at("L0.mb0.fwd.ln1"), Tn * h * 4);
  EXPECT_EQ(b.at("L0.mb0.fwd.ln1.quantize"), 4 * Tn * h + Tn * h / 16);
  EXPECT_EQ(b.at("L0.mb0.fwd.ag_qkv"), 2 * T * h);  // row-wise and column-wise copies
  EXPECT_EQ(b.at("L0.mb0.bwd.ag_qkv_input"), T * h);
  EXPECT_EQ(b.at("L0.mb0.fwd.proj.input_quantize"), 4 * T * 128 + T * 128 / 16);
  EXPECT_EQ(b.at("L0.mb0.fwd.qkv.weight_quantize"), 4 * 256 * h + 256 * h / 4096);
  for (const auto& [name, bytes] : b) {
    EXPECT_EQ(name.find("amax"), std::string::npos) << name;
    EXPECT_EQ(name.find("_transpose"), std::string::npos) << name;
  }
}

// MoE experts (TE GroupedLinear): cast + transpose of the routed tokens into each expert
// GEMM and of their gradients; the router stays bf16.
TEST(Fp8Generator, ExpertGemmsQuantiseTheirRoutedTokens) {
  auto spec = load_model_string(kTinyMoe, "tiny-moe.yaml");
  spec.training.precision = sim::Precision::FP8;
  const auto step = generate_step(spec, 8);
  // dp 4 x pp 2 (ep 4 inside dp) on 8 GPUs; 128 tokens a rank, top-2 of 8 experts, 2 local.
  const double R = 128.0 * 2, h = 256, f = 512;
  const auto b = op_bytes(step);
  EXPECT_EQ(b.at("L0.mb0.fwd.experts.fc1.input_quantize"), 4 * R * h);
  EXPECT_EQ(b.at("L0.mb0.fwd.experts.fc2.input_quantize"), 4 * R * f);
  EXPECT_EQ(b.at("L0.mb0.bwd.experts.fc2.grad_quantize"), 4 * R * h);
  EXPECT_EQ(b.at("L0.mb0.bwd.experts.fc1.grad_quantize"), 4 * R * 2 * f);
  EXPECT_EQ(b.at("L0.mb0.fwd.experts.fc1.weight_quantize"), 4.0 * 2 * 2 * f * h);
  for_each_op(step.ranks[0], [](sim::OpVertex, const sim::OpNode& op) {
    if (op.name.find("router") != std::string::npos && op.kind == OpKind::Gemm) {
      EXPECT_EQ(op.precision, sim::Precision::BF16) << op.name;
    }
  });
}

// attention.kernel: unfused (Megatron-LM before FlashAttention): the scores and context as
// batched GEMMs over the full s x s (the mask does not save work), and the softmax kernel
// reading and writing the b x heads x s x s scores; backward four GEMMs and a softmax pass
// over P, dP and dS.
TEST(UnfusedAttention, ChargesTheScoresInDeviceMemory) {
  const auto step =
      generate(edit(kOneLayer, {{"precision: fp8", "precision: bf16"},
                                {"    kv_heads: 4", "    kv_heads: 4\n    kernel: unfused"}}));
  const double s = 128, d = 256 / 8, batch = 1 * 8 / 2;  // micro-batch x heads / tp
  const double scores_bytes = batch * s * s * 2;
  std::map<std::string, const sim::OpNode*> ops;
  for_each_op(step.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) { ops[op.name] = &op; });
  const sim::OpNode* qk = ops.at("L0.mb0.fwd.attention.scores");
  EXPECT_EQ(qk->kind, OpKind::Gemm);
  EXPECT_EQ(qk->gemm.batch, batch);
  EXPECT_EQ(qk->gemm.m, s);
  EXPECT_EQ(qk->gemm.n, s);
  EXPECT_EQ(qk->gemm.k, d);
  EXPECT_DOUBLE_EQ(qk->flops, 2 * batch * s * s * d);
  EXPECT_EQ(ops.at("L0.mb0.fwd.attention.softmax")->bytes, 2 * scores_bytes);
  EXPECT_EQ(ops.at("L0.mb0.bwd.attention.bwd.softmax")->bytes, 3 * scores_bytes);
  for (const char* g : {"dprobs", "dv", "dq", "dk"})
    EXPECT_DOUBLE_EQ(ops.at(std::string("L0.mb0.bwd.attention.bwd.") + g)->flops,
                     2 * batch * s * s * d)
        << g;
  EXPECT_EQ(ops.count("L0.mb0.fwd.attention"), 0u);  // no fused attention op
}

// Dropout (Megatron-LM's defaults, attention and hidden 0.1) as the memory traffic of its
// kernels. Unfused attention: a dropout kernel on the b x heads x s x s probabilities,
// forward (read P, write the dropped P and a 1-byte mask: 5 bytes per score in 16-bit),
// backward (read the gradient and the mask, write the gradient: 5 bytes), and again in the
// selective recompute. Hidden dropout, fused into bias-dropout-add: each residual branch
// writes its mask forward and reads it backward (1 byte per token and channel). The
// embedding output's dropout is its own kernel: 5 bytes per element each way.
TEST(Dropout, ChargesItsKernelsMemoryTraffic) {
  const std::string unfused =
      edit(kOneLayer, {{"precision: fp8", "precision: bf16"},
                       {"recompute: none", "recompute: selective"},
                       {"    kv_heads: 4", "    kv_heads: 4\n    kernel: unfused"}});
  const std::string dropout = edit(
      unfused, {{"  attention:", "  attention_dropout: 0.1\n  hidden_dropout: 0.1\n  attention:"}});
  const auto plain = op_bytes(generate(unfused));
  const auto b = op_bytes(generate(dropout));
  const double s = 128, scores = 1 * 8 / 2 * s * s;  // micro-batch x heads / tp x s x s
  const double Tn = 128 / 2, h = 256;                // tokens per rank with SP
  EXPECT_EQ(b.at("L0.mb0.fwd.attention.dropout"), 5 * scores);
  EXPECT_EQ(b.at("L0.mb0.bwd.attention.bwd.dropout"), 5 * scores);
  EXPECT_EQ(b.at("L0.mb0.rc.attention.recompute.dropout"), 5 * scores);
  for (const char* op : {"L0.mb0.fwd.residual1", "L0.mb0.fwd.residual2", "L0.mb0.bwd.residual1.bwd",
                         "L0.mb0.bwd.residual2.bwd"})
    EXPECT_EQ(b.at(op) - plain.at(op), Tn * h) << op;
  EXPECT_EQ(b.at("emb.mb0.fwd.embedding_dropout"), 5 * Tn * h);
  EXPECT_EQ(b.at("emb.mb0.bwd.embedding_dropout.bwd"), 5 * Tn * h);
  for (const auto& [name, bytes] : plain)
    EXPECT_EQ(name.find("dropout"), std::string::npos) << name;  // p = 0: no kernel
}

TEST(Dropout, ProbabilityOutOfRangeNamesTheKey) {
  const std::string what =
      one_layer_error(edit(kOneLayer, {{"  attention:", "  hidden_dropout: 1.5\n  attention:"}}));
  EXPECT_NE(what.find("hidden_dropout"), std::string::npos) << what;
  EXPECT_NE(what.find("one-layer.yaml"), std::string::npos) << what;
}

// training.horovod_cycle_time: every collective waits half of Horovod's coordination cycle
// before its transfer (arrivals uniform over the cycle); without the key none waits.
TEST(HorovodCycle, EveryCollectiveWaitsHalfACycle) {
  const auto with = generate(
      edit(kOneLayer, {{"  recompute: none", "  recompute: none\n  horovod_cycle_time: 1ms"}}));
  const auto without = generate(kOneLayer);
  int collectives = 0;
  for_each_op(with.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    if (op.kind != OpKind::Collective) return;
    ++collectives;
    EXPECT_DOUBLE_EQ(op.launch_delay_s, 0.5e-3) << op.name;
  });
  EXPECT_GT(collectives, 0);
  for_each_op(without.ranks[0], [](sim::OpVertex, const sim::OpNode& op) {
    EXPECT_EQ(op.launch_delay_s, 0.0) << op.name;
  });
  const std::string what = one_layer_error(
      edit(kOneLayer, {{"  recompute: none", "  recompute: none\n  horovod_cycle_time: -1ms"}}));
  EXPECT_NE(what.find("horovod_cycle_time"), std::string::npos) << what;
}

// training.fp8_params: the distributed optimizer gathers fp8 weights (1 byte, half the
// 16-bit gather) and the first microbatch only transposes them (read 1, write 1).
TEST(Fp8Params, HalveTheParameterGatherAndLeaveOnlyTheTranspose) {
  const std::string base = edit(
      kOneLayer, {{"  recompute: none", "  recompute: none\n  grad_sync: distributed_optimizer"},
                  {"  dp: 1", "  dp: 2"}});
  const auto plain = generate(base, 4);
  const auto fp8 =
      generate(edit(base, {{"  recompute: none", "  recompute: none\n  fp8_params: true"}}), 4);
  const auto with = op_bytes(fp8);
  const double h = 256;
  EXPECT_EQ(with.at("L0.mb0.fwd.qkv.weight_quantize"), 2 * 256 * h);
  EXPECT_EQ(with.at("L0.mb0.fwd.mlp.fc2.weight_quantize"), 2 * h * 512);
  EXPECT_EQ(op_bytes(plain).at("L0.mb0.fwd.qkv.weight_quantize"), 4 * 256 * h);
  std::vector<double> gathers_plain, gathers_fp8;
  auto gathers = [](const sim::StepGraph& step, std::vector<double>& out) {
    for_each_op(step.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
      if (op.kind == OpKind::Collective && op.stream == sim::StreamKind::DataComm &&
          op.collective == sim::CollectiveOp::AllGather)
        out.push_back(static_cast<double>(op.comm_bytes));
    });
  };
  gathers(plain, gathers_plain);
  gathers(fp8, gathers_fp8);
  ASSERT_FALSE(gathers_plain.empty());
  ASSERT_EQ(gathers_plain.size(), gathers_fp8.size());
  for (std::size_t i = 0; i < gathers_plain.size(); ++i)
    EXPECT_EQ(2 * gathers_fp8[i], gathers_plain[i]) << i;
}

TEST(Fp8Params, NeedFp8AndTheDistributedOptimizer) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"  precision: fp8", "  precision: bf16\n  fp8_params: true"},
           {"  recompute: none", "  recompute: none\n  fp8_params: true"}}) {
    const std::string what = one_layer_error(edit(kOneLayer, {{from, to}}));
    EXPECT_NE(what.find("fp8_params"), std::string::npos) << to << ": " << what;
  }
}

// training.high_priority_comm: the communication ops on the named streams run at high
// priority (OpNode::high_priority); by default none does, as PyTorch creates its streams.
TEST(HighPriorityComm, MarksTheNamedStreamsCommunicationOnly) {
  const auto with = generate(
      edit(kOneLayer, {{"  recompute: none", "  recompute: none\n  high_priority_comm: [tp]"}}));
  const auto without = generate(kOneLayer);
  int marked = 0;
  for_each_op(with.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    const bool comm = op.kind == OpKind::Collective || op.kind == OpKind::SendRecv;
    EXPECT_EQ(op.high_priority, comm && op.stream == sim::StreamKind::TensorComm) << op.name;
    marked += op.high_priority ? 1 : 0;
  });
  EXPECT_GT(marked, 0);
  for_each_op(without.ranks[0], [](sim::OpVertex, const sim::OpNode& op) {
    EXPECT_FALSE(op.high_priority) << op.name;
  });
}

TEST(HighPriorityComm, AnUnknownStreamNamesTheKeyAndTheFile) {
  const std::string what = one_layer_error(edit(
      kOneLayer, {{"  recompute: none", "  recompute: none\n  high_priority_comm: [tp, nvl]"}}));
  EXPECT_NE(what.find("high_priority_comm"), std::string::npos) << what;
  EXPECT_NE(what.find("one-layer.yaml"), std::string::npos) << what;
  EXPECT_NE(what.find("'nvl'"), std::string::npos) << what;
}

TEST(UnfusedAttention, IsRejectedWithContextParallelism) {
  const std::string what =
      one_layer_error(edit(kOneLayer, {{"    kv_heads: 4", "    kv_heads: 4\n    kernel: unfused"},
                                       {"  cp: 1", "  cp: 2"}}));
  EXPECT_NE(what.find("transformer.attention.kernel"), std::string::npos) << what;
}

TEST(DataParallelOverlap, ParamGathersRunLayerByLayerAheadOfTheFirstForward) {
  const auto step = generate_step(llama70b_tp8_pp4(), 1024);
  const auto& rank = step.ranks[1];  // stage 1: layers 20-39
  const auto& g = rank.graph;
  int gathers = 0;
  for_each_op(rank, [&](sim::OpVertex v, const sim::OpNode& op) {
    if (op.kind != OpKind::Collective || op.collective != CollectiveOp::AllGather ||
        op.stream != StreamKind::DataComm)
      return;
    ++gathers;
    EXPECT_EQ(op.phase, Phase::Forward) << op.name;
    EXPECT_EQ(op.microbatch, 0) << op.name;
    ASSERT_GE(op.layer, 20) << op.name;
    // The layer's first forward op waits for it ...
    bool feeds_layer = false;
    for (auto e : boost::make_iterator_range(boost::out_edges(v, g))) {
      const auto& dst = g[boost::target(e, g)];
      feeds_layer |= dst.stream == StreamKind::Compute && dst.layer == op.layer &&
                     dst.microbatch == 0 && dst.phase == Phase::Forward;
    }
    EXPECT_TRUE(feeds_layer) << op.name;
    // ... and it is issued when the previous layer's forward starts.
    if (op.layer > 20) {
      bool after_previous = false;
      for (auto e : boost::make_iterator_range(boost::in_edges(v, g))) {
        const auto& src = g[boost::source(e, g)];
        after_previous |= src.stream == StreamKind::Compute && src.layer == op.layer - 1;
      }
      EXPECT_TRUE(after_previous) << op.name;
    }
  });
  EXPECT_EQ(gathers, 20);
  // Nothing is left after the optimizer.
  const auto last = static_cast<sim::OpVertex>(boost::num_vertices(g) - 1);
  EXPECT_EQ(g[last].phase, Phase::Optimizer);
  EXPECT_EQ(g[last].kind, OpKind::Elementwise);
}

// Interleaved: Megatron-Core's schedule gathers a model chunk's parameters at once, chunks
// 0 and 1 at the start, chunk c >= 2 when forward step (c - 1)·p - s starts on stage s
// (schedules.py forward_step_helper_preprocess), not one layer ahead.
TEST(DataParallelOverlap, InterleavedGathersAModelChunkAheadOfItsUse) {
  ModelSpec m = llama70b_tp8_pp4();
  m.parallelism.virtual_stages = 5;  // 4 layers a chunk; stage 1 holds chunks at 4-7, 20-23, ...
  const auto step = generate_step(m, 1024);
  const int stage = 1, pp = 4, layers_per_chunk = 4;
  const auto& rank = step.ranks[stage];
  const auto& g = rank.graph;
  auto chunk_of = [&](int layer) { return (layer / layers_per_chunk - stage) / pp; };
  std::map<int, std::set<sim::OpVertex>> anchors;  // chunk -> compute ops its gathers follow
  int gathers = 0;
  for_each_op(rank, [&](sim::OpVertex v, const sim::OpNode& op) {
    if (op.kind != OpKind::Collective || op.collective != CollectiveOp::AllGather ||
        op.stream != StreamKind::DataComm || op.layer < 0)
      return;
    ++gathers;
    const int chunk = chunk_of(op.layer);
    std::set<sim::OpVertex>& after = anchors[chunk];
    for (auto e : boost::make_iterator_range(boost::in_edges(v, g))) {
      const sim::OpVertex u = boost::source(e, g);
      if (g[u].stream != StreamKind::Compute) continue;
      after.insert(u);
      // Forward step (c - 1)·4 - 1 of stage 1 is microbatch 3 of chunk c - 2.
      EXPECT_EQ(g[u].phase, Phase::Forward) << op.name;
      EXPECT_EQ(g[u].microbatch, 3) << op.name << " after " << g[u].name;
      EXPECT_EQ(chunk_of(g[u].layer), chunk - 2) << op.name << " after " << g[u].name;
    }
  });
  EXPECT_EQ(gathers, 20);
  EXPECT_TRUE(anchors[0].empty());
  EXPECT_TRUE(anchors[1].empty());
  for (int chunk = 2; chunk < 5; ++chunk) EXPECT_EQ(anchors[chunk].size(), 1u) << chunk;
}

TEST(DataParallelOverlap, WithoutOverlapTheGathersFollowTheOptimizer) {
  ModelSpec m = llama70b_tp8_pp4();
  m.training.overlap_param_gather = false;
  const auto step = generate_step(m, 1024);
  double bytes = 0;
  for_each_op(step.ranks[1], [&](sim::OpVertex, const sim::OpNode& op) {
    if (op.kind != OpKind::Collective || op.collective != CollectiveOp::AllGather ||
        op.stream != StreamKind::DataComm)
      return;
    EXPECT_EQ(op.phase, Phase::Optimizer) << op.name;
    bytes += static_cast<double>(op.comm_bytes);
  });
  // The same bytes as the overlapped gathers: 2 bytes per parameter of the stage.
  const auto overlapped = generate_step(llama70b_tp8_pp4(), 1024);
  const double overlapped_bytes = sum_ops(
      overlapped.ranks[1],
      [](const sim::OpNode& op) {
        return op.kind == OpKind::Collective && op.collective == CollectiveOp::AllGather &&
               op.stream == StreamKind::DataComm;
      },
      [](const sim::OpNode& op) { return static_cast<double>(op.comm_bytes); });
  EXPECT_GT(bytes, 0);
  EXPECT_DOUBLE_EQ(bytes, overlapped_bytes);
}

TEST(DataParallelOverlap, WithoutOverlapGradReduceTheReductionsWaitForTheBackward) {
  ModelSpec m = llama70b_tp8_pp4();
  m.training.overlap_grad_reduce = false;
  const auto step = generate_step(m, 1024);
  const auto& rank = step.ranks[1];
  const auto& g = rank.graph;
  sim::OpVertex last_backward = 0;
  for_each_op(rank, [&](sim::OpVertex v, const sim::OpNode& op) {
    if (op.stream == StreamKind::Compute && op.phase == Phase::Backward) last_backward = v;
  });
  int reductions = 0;
  for_each_op(rank, [&](sim::OpVertex v, const sim::OpNode& op) {
    if (op.kind != OpKind::Collective || op.collective != CollectiveOp::ReduceScatter ||
        op.stream != StreamKind::DataComm)
      return;
    ++reductions;
    EXPECT_TRUE(boost::edge(last_backward, v, g).second) << op.name;
  });
  EXPECT_GT(reductions, 0);
}

// Megatron-LM's optimizer step (workloads/grad_buckets.hpp, MegatronStepBytes): per
// parameter the optimizer updates, the gradient norm reads 4 bytes, Adam 4 + 24, the copy
// to the 16-bit model weights 4 + 2; the zeroing writes the whole local gradient buffer.
TEST(MegatronOptimizerStep, BytesOfEachPass) {
  const MegatronStepBytes m = megatron_step_bytes(1000, 4000, 4, 2, true, false);
  EXPECT_EQ(m.copy_main_grads, 0u);  // an fp32 gradient buffer is the main grad itself
  EXPECT_EQ(m.unscale, 0u);
  EXPECT_EQ(m.grad_norm, 4000u);
  EXPECT_EQ(m.adam, 28000u);
  EXPECT_EQ(m.copy_main_params, 6000u);
  EXPECT_EQ(m.zero_grad_buffer, 16000u);
  // The old single pass charged grad + 26 = 30 bytes per parameter; the step now charges
  // 4 + 28 + 6 = 38 per updated parameter plus 4 per local one.
  EXPECT_EQ(m.total(), 54000u);
  // fp16 with a bf16 gradient buffer and no clipping: main grads converted (2 + 4),
  // unscaled (4 + 4), no norm; the buffer zeroed at 2 bytes.
  const MegatronStepBytes f = megatron_step_bytes(1000, 4000, 2, 2, false, true);
  EXPECT_EQ(f.copy_main_grads, 6000u);
  EXPECT_EQ(f.unscale, 8000u);
  EXPECT_EQ(f.grad_norm, 0u);
  EXPECT_EQ(f.zero_grad_buffer, 8000u);
}

namespace {
// Bytes of the optimizer passes of stage 0 of the tiny model, by name, and the stage's
// parameters (from its gradient reduce-scatters, 4 bytes each).
struct OptimizerPasses {
  std::map<std::string, double> bytes;
  double local_params = 0;
  int dp_cp = 0;
};
OptimizerPasses optimizer_passes(const ModelSpec& m) {
  const auto step = generate_step(m, 16);
  OptimizerPasses out;
  out.dp_cp = m.parallelism.dp * m.parallelism.cp;
  for_each_op(step.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    if (op.kind == OpKind::Elementwise && op.phase == Phase::Optimizer)
      out.bytes[op.name] += static_cast<double>(op.bytes);
    if (op.kind == OpKind::Collective && op.collective == CollectiveOp::ReduceScatter &&
        op.stream == StreamKind::DataComm)
      out.local_params += static_cast<double>(op.comm_bytes) /
                          static_cast<double>(sim::bytes_per_element(m.training.grad_precision));
  });
  return out;
}
}  // namespace

TEST(MegatronOptimizerStep, TinyModelPassesOverTheShardAndTheWholeBuffer) {
  const ModelSpec m = load_model(tiny_path());
  const OptimizerPasses p = optimizer_passes(m);
  ASSERT_GT(p.local_params, 0);
  const double updated = std::floor(p.local_params / p.dp_cp);  // distributed optimizer
  EXPECT_EQ(p.bytes.count("optimizer.copy_main_grads"), 0u);
  EXPECT_EQ(p.bytes.count("optimizer.unscale_grads"), 0u);
  EXPECT_DOUBLE_EQ(p.bytes.at("optimizer.grad_norm"), 4 * updated);  // clip_grad 1.0 default
  EXPECT_DOUBLE_EQ(p.bytes.at("optimizer.step"), 28 * updated);
  EXPECT_DOUBLE_EQ(p.bytes.at("optimizer.copy_main_params"), 6 * updated);
  EXPECT_DOUBLE_EQ(p.bytes.at("optimizer.zero_grad_buffer"), 4 * p.local_params);
}

TEST(MegatronOptimizerStep, NoClippingFp16AndBf16Gradients) {
  ModelSpec m = load_model(tiny_path());
  m.training.clip_grad = 0;
  m.training.precision = sim::Precision::FP16;
  m.training.grad_precision = sim::Precision::BF16;
  const OptimizerPasses p = optimizer_passes(m);
  const double updated = std::floor(p.local_params / p.dp_cp);
  EXPECT_EQ(p.bytes.count("optimizer.grad_norm"), 0u);
  EXPECT_DOUBLE_EQ(p.bytes.at("optimizer.copy_main_grads"), 6 * updated);
  EXPECT_DOUBLE_EQ(p.bytes.at("optimizer.unscale_grads"), 8 * updated);
  EXPECT_DOUBLE_EQ(p.bytes.at("optimizer.step"), 28 * updated);
  EXPECT_DOUBLE_EQ(p.bytes.at("optimizer.zero_grad_buffer"), 2 * p.local_params);
}
