#include <gtest/gtest.h>

#include <map>
#include <string>

#include "step_graph_util.hpp"
#include "tests/workloads/workloads_test_util.hpp"
#include "workloads/generator.hpp"

using namespace overlapsim;
using namespace overlapsim::workloads;
using namespace overlapsim::workloads::testing;
using sim::CollectiveOp;
using sim::OpKind;
using sim::StreamKind;

namespace {

// Mixtral on EP 8 alone (no pipeline), sequence 4096, one microbatch per rank at 1024 GPUs:
// one folded rank, so the per-rank counts below are the whole step's.
ModelSpec mixtral_ep8() {
  ModelSpec m = shipped("mixtral-8x7b");
  m.parallelism.pp = 1;
  m.parallelism.virtual_stages = 1;
  m.training.seq_len = 4096;
  m.training.global_batch = 1024;
  return m;
}
}  // namespace

TEST(MoeGenerator, MixtralFlopsPerTokenFollowActiveParameters) {
  auto step = generate_step(mixtral_ep8(), 1024);
  const double l = 32, h = 4096, fe = 14336, V = 32000, q = 32 * 128, kv = 8 * 128, E = 8, k = 2;
  const double s = 4096;
  const double active_matmul = l * (h * (q + 2 * kv) + q * h + h * E + k * 3 * h * fe) + h * V;
  const double attention_per_token = 3 * l * (4 * s * q) / 2;  // causal
  const double per_token = step.model_flops_per_step / step.tokens_per_step;
  EXPECT_LT(rel(per_token, 6 * active_matmul + attention_per_token), 0.01);
  EXPECT_LT(rel(per_token, 6 * active_matmul + attention_per_token), 1e-9);
  // The YAML's dimensions give Mixtral's published 12.9B active / 46.7B total parameters
  // (Jiang et al. 2024 / the Mistral AI release), within rounding.
  const double norms = l * 2 * h + h;
  EXPECT_LT(rel(active_matmul + h * V + norms, 12.9e9), 0.01);
  const double total = l * (h * (q + 2 * kv) + q * h + h * E + E * 3 * h * fe) + 2 * h * V + norms;
  EXPECT_LT(rel(total, 46.7e9), 0.01);
}

TEST(MoeGenerator, DeepSeekV3FlopsPerTokenFollowActiveParameters) {
  ModelSpec spec = shipped("deepseek-v3");
  spec.training.global_batch = 64;  // one microbatch per DP rank keeps the test fast
  auto step = generate_step(spec, 1024);
  ASSERT_EQ(step.ranks.size(), 16u);
  const double h = 7168, V = 129280, heads = 128, ql = 1536, kvl = 512, dn = 128, dr = 64, dv = 128,
               fe = 2048, f_dense = 18432, s = 4096;
  const double mla =
      h * ql + ql * heads * (dn + dr) + h * (kvl + dr) + kvl * heads * (dn + dv) + heads * dv * h;
  const double moe_active = h * 256 + (8 + 1) * 3 * h * fe;
  const double active_matmul = 61 * mla + 3 * 3 * h * f_dense + 58 * moe_active + h * V;
  const double attention_per_token = 3 * 61 * (2 * s * heads * ((dn + dr) + dv)) / 2;
  const double per_token = step.model_flops_per_step / step.tokens_per_step;
  EXPECT_LT(rel(per_token, 6 * active_matmul + attention_per_token), 0.01);
  EXPECT_LT(rel(per_token, 6 * active_matmul + attention_per_token), 1e-9);
  // Published: 37B activated of 671B total (DeepSeek-V3 report, abstract), without the MTP
  // module; norms are negligible here.
  EXPECT_LT(rel(active_matmul + h * V, 37e9), 0.02);
  const double total =
      61 * mla + 3 * 3 * h * f_dense + 58 * (h * 256 + 257 * 3 * h * fe) + 2 * h * V;
  EXPECT_LT(rel(total, 671e9), 0.01);
}

TEST(MoeGenerator, DispatchAndCombineAreAllToAllsOverTheExpertGroup) {
  auto step = generate_step(mixtral_ep8(), 1024);
  ASSERT_EQ(step.ranks.size(), 1u);
  EXPECT_EQ(step.ranks[0].multiplicity, 1024);
  const std::uint64_t bytes = 4096ull * 2 * 4096 * 2;  // tokens · top_k · hidden · bf16
  int a2a = 0, paired = 0;
  for_each_op(step.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    if (op.kind == OpKind::Gemm && op.name.find("experts.fc1") != std::string::npos &&
        op.name.find("grad") == std::string::npos) {
      EXPECT_EQ(op.gemm.m, 4096 * 2 * 8 / 8);  // uniform routing: tokens per local expert
      EXPECT_EQ(op.gemm.batch, 1);             // 8 experts over EP 8
    }
    if (op.kind != OpKind::Collective || op.collective != CollectiveOp::AllToAll) return;
    ++a2a;
    EXPECT_EQ(op.stream, StreamKind::ExpertComm);
    EXPECT_EQ(op.comm_bytes, bytes);
    EXPECT_EQ(family_of(step, op), "ep");
    EXPECT_EQ(step.groups[op.comm_group].ranks.size(), 8u);
    if (op.pair_partner >= 0) {
      ++paired;
      EXPECT_EQ(step.ranks[0].graph[op.pair_partner].kind, OpKind::Gemm);
    }
  });
  EXPECT_EQ(a2a, 32 * 4);  // per layer: dispatch and combine, forward and backward
  EXPECT_EQ(paired, a2a);
}

TEST(MoeGenerator, ExpertGradientsReduceOverExpertDataParallelGroup) {
  auto step = generate_step(mixtral_ep8(), 1024);
  const double expert_params = 32 * 1 * 3 * 4096.0 * 14336;  // one local expert per layer
  double edp = sum_ops(
      step.ranks[0], [&](const sim::OpNode& op) { return family_of(step, op) == "edp"; },
      [&](const sim::OpNode& op) {
        EXPECT_EQ(step.groups[op.comm_group].ranks.size(), 128u);  // 1024 / EP 8
        return op.collective == CollectiveOp::ReduceScatter ? static_cast<double>(op.comm_bytes)
                                                            : 0.0;
      });
  EXPECT_DOUBLE_EQ(edp, 4 * expert_params);
}

TEST(MoeGenerator, FoldedAndUnfoldedGraphsHaveTheSameOpsPerRank) {
  // The tiny MoE plus one shared expert.
  auto spec = load_model_string(
      edit(kTinyMoe, {{"  top_k: 2\n", "  top_k: 2\n  shared_experts: 1\n"}}), "tiny-moe.yaml");
  auto folded = generate_step(spec, 8);
  auto full = generate_step(spec, 8, {false, 0});
  ASSERT_EQ(folded.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(folded.flops_per_step, full.flops_per_step);
  for (const auto& rank : full.ranks) {
    const auto& rep = folded.ranks[rank.rank / 4];
    ASSERT_EQ(boost::num_vertices(rank.graph), boost::num_vertices(rep.graph));
    ASSERT_EQ(boost::num_edges(rank.graph), boost::num_edges(rep.graph));
    for (auto v : boost::make_iterator_range(boost::vertices(rank.graph))) {
      const auto& a = rank.graph[v];
      const auto& b = rep.graph[v];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.flops, b.flops);
      EXPECT_EQ(a.comm_bytes, b.comm_bytes);
      if (a.comm_group >= 0) {
        EXPECT_EQ(full.groups[a.comm_group].family, folded.groups[b.comm_group].family);
        const auto& members = full.groups[a.comm_group].ranks;
        EXPECT_NE(std::find(members.begin(), members.end(), rank.rank), members.end());
      }
    }
  }
}

TEST(MoeGenerator, ExpertTpOfOneSendsTokensOverTpRanksAndKeepsExpertsWhole) {
  // The tiny MoE on TP 2 with sequence parallelism and 8 GPUs a stage: expert TP = TP 2
  // with EP 4 (the default layout) against expert TP 1 with EP 8 (MoE parallel folding).
  const std::string tp2 = edit(kTinyMoe, {{"  tp: 1", "  tp: 2\n  sequence_parallel: true"}});
  const auto split = generate_step(load_model_string(tp2, "split.yaml"), 16);
  const auto folded = generate_step(
      load_model_string(edit(tp2, {{"  ep: 4", "  ep: 8\n  etp: 1"}}), "folded.yaml"), 16);
  // The same work in total: the experts' FLOPs only move between ranks.
  EXPECT_DOUBLE_EQ(folded.flops_per_step, split.flops_per_step);
  EXPECT_DOUBLE_EQ(folded.model_flops_per_step, split.model_flops_per_step);
  // Per rank and microbatch: Tn = 128 / 2 tokens, top_k 2. Expert TP 2: 2 local experts of
  // 512 / 2 columns, 64 x 2 x 2 = 256 token copies; expert TP 1: 1 whole local expert,
  // 64 x 2 = 128 token copies.
  const auto fc1 = [](const sim::StepGraph& s) {
    sim::OpNode out;
    for_each_op(s.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
      if (op.kind == OpKind::Gemm && ends_with(op.name, "experts.fc1")) out = op;
    });
    return out;
  };
  EXPECT_EQ(fc1(split).gemm.n, 2 * 256);  // gate and up, 512 / 2 each
  EXPECT_EQ(fc1(split).gemm.m, 256 / 2);
  EXPECT_EQ(fc1(split).gemm.batch, 2);
  EXPECT_EQ(fc1(folded).gemm.n, 2 * 512);
  EXPECT_EQ(fc1(folded).gemm.m, 128);
  EXPECT_EQ(fc1(folded).gemm.batch, 1);
  // Tokens cross TP only with expert TP 2; the all-to-alls carry the same bytes over 4 and
  // 8 ranks, the folded group holding both ranks of each TP pair.
  int split_tp_tokens = 0, folded_tp_tokens = 0;
  for_each_op(split.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    if (op.name.find("tp_gather_tokens") != std::string::npos) ++split_tp_tokens;
  });
  for_each_op(folded.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    if (op.name.find("tp_") != std::string::npos && op.name.find("_tokens") != std::string::npos)
      ++folded_tp_tokens;
    if (op.kind != OpKind::Collective || op.collective != CollectiveOp::AllToAll) return;
    EXPECT_EQ(op.comm_bytes, 64u * 2 * 256 * 2);  // Tn · top_k · hidden · bf16
    EXPECT_EQ(folded.groups[op.comm_group].ranks, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  });
  EXPECT_GT(split_tp_tokens, 0);
  EXPECT_EQ(folded_tp_tokens, 0);
  // Expert TP 1, EP 8 over the 8 ranks of a stage: expert-DP 1, no expert gradient reduction.
  const double edp_bytes = sum_ops(
      folded.ranks[0], [&](const sim::OpNode& op) { return family_of(folded, op) == "edp"; },
      [](const sim::OpNode& op) { return static_cast<double>(op.comm_bytes); });
  EXPECT_EQ(edp_bytes, 0.0);
}

TEST(MoeGenerator, HierarchicalDispatchCrossesTheNetworkOncePerNodeThenNvlink) {
  // The tiny MoE (8 experts, top 2, hidden 256) with EP 8 over two nodes of 4 GPUs: per
  // rank Tn tokens; a node holds 4 experts, a rank 1. Under uniform routing a token reaches
  // a given node with probability 1 - C(4,2)/C(8,2) = 11/14 and a given rank with 1/4.
  const std::string text = edit(kTinyMoe, {{"  top_k: 2\n", "  top_k: 2\n  dispatcher: deepep\n"},
                                           {"  dp: 4", "  dp: 8"},
                                           {"  pp: 2", "  pp: 1"},
                                           {"  ep: 4", "  ep: 8"}});
  const auto flat = generate_step(
      load_model_string(edit(text, {{"  dispatcher: deepep\n", ""}}), "flat.yaml"), 8, {true, 4});
  const auto step = generate_step(load_model_string(text, "deepep.yaml"), 8, {true, 4});
  double tokens = 0;  // Tn, from the all-to-all's Tn · top_k · hidden · bf16
  int flat_exchanges = 0;
  for_each_op(flat.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    if (op.kind != OpKind::Collective || op.collective != CollectiveOp::AllToAll) return;
    tokens = static_cast<double>(op.comm_bytes) / (2 * 256 * 2);
    ++flat_exchanges;
  });
  ASSERT_GT(tokens, 0);
  int network = 0, nvlink = 0;
  for_each_op(step.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    if (op.kind != OpKind::Collective || op.collective != CollectiveOp::AllToAll) return;
    EXPECT_LT(op.pair_partner, 0) << op.name << ": the designs do not model DeepEP's kernels";
    if (family_of(step, op) == "ep_rail") {
      ++network;
      EXPECT_EQ(op.stream, StreamKind::ExpertComm);
      EXPECT_EQ(step.groups[op.comm_group].ranks, (std::vector<int>{0, 4}));
      EXPECT_EQ(op.comm_bytes,
                static_cast<std::uint64_t>(std::llround(2 * tokens * 11.0 / 14 * 512)));
    } else {
      ++nvlink;
      EXPECT_EQ(family_of(step, op), "ep_node");
      EXPECT_EQ(op.stream, StreamKind::ExpertNodeComm);
      EXPECT_EQ(step.groups[op.comm_group].ranks, (std::vector<int>{0, 1, 2, 3}));
      EXPECT_EQ(op.comm_bytes, static_cast<std::uint64_t>(std::llround(8 * tokens / 4 * 512)));
    }
  });
  EXPECT_EQ(network, flat_exchanges);  // each all-to-all becomes the two legs
  EXPECT_EQ(network,
            4 * 4 * 2);  // layers x (dispatch, combine) x (forward, backward) x 2 microbatches
  EXPECT_EQ(nvlink, network);
  // The experts' work is unchanged.
  EXPECT_DOUBLE_EQ(step.flops_per_step, flat.flops_per_step);
}

TEST(MoeGenerator, HierarchicalDispatchInsideANodeSendsEachTokenOncePerRank) {
  // EP 4 inside one node: 2 experts a rank, reached with probability 1 - C(6,2)/C(8,2) =
  // 13/28, so Tn · 4 · 13/28 rows where the all-to-all dispatcher sends Tn · 2.
  const std::string text =
      edit(kTinyMoe, {{"  top_k: 2\n", "  top_k: 2\n  dispatcher: hybridep\n"}});
  const auto step = generate_step(load_model_string(text, "hybridep.yaml"), 8, {true, 8});
  const auto flat = generate_step(load_model_string(kTinyMoe, "flat.yaml"), 8, {true, 8});
  std::uint64_t flat_bytes = 0, bytes = 0;
  for_each_op(flat.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    if (op.kind == OpKind::Collective && op.collective == CollectiveOp::AllToAll)
      flat_bytes = op.comm_bytes;
  });
  for_each_op(step.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    if (op.kind != OpKind::Collective || op.collective != CollectiveOp::AllToAll) return;
    EXPECT_EQ(family_of(step, op), "ep");
    bytes = op.comm_bytes;
  });
  const double tokens = static_cast<double>(flat_bytes) / (2 * 256 * 2);
  EXPECT_EQ(bytes, static_cast<std::uint64_t>(std::llround(tokens * 4 * 13.0 / 28 * 512)));
}

TEST(MoeGenerator, SelectiveRecomputeRunsTheExpertsActivationAgainAsMemoryDropsIt) {
  // docs/memory.md: `selective` does not keep the experts' activation output (moe_act), so
  // the backward runs the activation again, with the forward's bytes; the model FLOPs stay.
  const std::string shared =
      edit(kTinyMoe, {{"  top_k: 2\n", "  top_k: 2\n  shared_experts: 1\n"}});
  const auto none = generate_step(load_model_string(shared, "none.yaml"), 8);
  const auto selective = generate_step(
      load_model_string(edit(shared, {{"training:\n", "training:\n  recompute: selective\n"}}),
                        "selective.yaml"),
      8);
  EXPECT_DOUBLE_EQ(selective.model_flops_per_step, none.model_flops_per_step);
  std::map<std::string, std::uint64_t> forward;  // activation passes' bytes by block
  int recomputed = 0, forward_acts = 0;
  for_each_op(selective.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    const bool experts = ends_with(op.name, "experts.act"),
               shared_act = ends_with(op.name, "shared.act");
    if (!experts && !shared_act) return;
    const std::string block = experts ? "experts" : "shared";
    if (!op.recompute) {
      ++forward_acts;
      forward[block] = op.bytes;
      return;
    }
    ++recomputed;
    EXPECT_EQ(op.phase, sim::Phase::Backward) << op.name;
    EXPECT_EQ(op.bytes, forward[block]) << op.name;
  });
  EXPECT_GT(forward_acts, 0);
  EXPECT_EQ(recomputed, forward_acts);  // one per forward activation, experts and shared
}

TEST(MoeGenerator, SelectiveRecomputeRunsMlaUpProjectionsAgain) {
  const std::string mla =
      "name: tiny-mla\nkind: transformer\ntransformer:\n  layers: 2\n  hidden: 64\n"
      "  ffn_hidden: 256\n  vocab: 1000\n  mlp: swiglu\n  norm: rmsnorm\n"
      "  position_embedding: rope\n  attention:\n    kind: mla\n    heads: 4\n"
      "    q_lora_rank: 32\n    kv_lora_rank: 32\n    qk_nope_head_dim: 16\n"
      "    qk_rope_head_dim: 8\n    v_head_dim: 16\ntraining:\n  seq_len: 128\n"
      "  global_batch: 2\n  micro_batch: 1\n  recompute: selective\nparallelism:\n  tp: 1\n"
      "  pp: 1\n";
  const auto selective = generate_step(load_model_string(mla, "mla.yaml"), 1);
  const auto none = generate_step(
      load_model_string(edit(mla, {{"recompute: selective", "recompute: none"}}), "none.yaml"), 1);
  // Per layer and microbatch the up projections run again: q_up 128 x (4 x 24) x 32 and
  // kv_up 128 x (4 x (16 + 16)) x 32, and the attention core once more (selective).
  const double up = 2.0 * 128 * (4 * 24) * 32 + 2.0 * 128 * (4 * 32) * 32;
  double recomputed_up = 0;
  for_each_op(selective.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    if (op.recompute && (ends_with(op.name, "q_up") || ends_with(op.name, "kv_up")))
      recomputed_up += op.flops;
  });
  EXPECT_DOUBLE_EQ(recomputed_up, 2 /*layers*/ * 2 /*microbatches*/ * up);
  EXPECT_DOUBLE_EQ(selective.model_flops_per_step, none.model_flops_per_step);
}

// Megatron-Core's unfused router and permutation (moe.router_fusion, permute_fusion false):
// the unpermutation is a
// scatter-add and the permutation's backward an index-add, each op carries the kernels the
// measured path launches, and with the host modelled the host waits on the permutation in
// every layer's forward (docs/simulate.md, "The host").
TEST(MoeGenerator, UnfusedPermutationCarriesItsKernelsAndTheHostWait) {
  ModelSpec m = mixtral_ep8();
  m.moe.permute_fusion = false;
  m.moe.router_fusion = false;
  m.training.host_launch_time_s = 50e-6;
  m.training.host_sync_time_s = 20e-6;
  auto step = generate_step(m, 1024);
  std::map<std::string, int> seen;
  int syncs = 0;
  for_each_op(step.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    const auto ends = [&](const std::string& s) {
      return op.name.size() >= s.size() &&
             op.name.compare(op.name.size() - s.size(), s.size(), s) == 0;
    };
    if (op.host_sync) {
      ++syncs;
      EXPECT_TRUE(ends(".fwd.permute")) << op.name;
      EXPECT_DOUBLE_EQ(op.host_sync_s, 20e-6);
    }
    // One local expert: no regrouping, so not its kernels (measured with 8 local experts).
    if (ends(".fwd.unpermute")) {
      ++seen["unpermute"];
      EXPECT_EQ(op.atomic_add, sim::AtomicAdd::Scatter);
      EXPECT_EQ(op.launches, 2);
      EXPECT_DOUBLE_EQ(op.host_s, 2 * 50e-6);
    }
    if (ends(".bwd.permute.bwd")) {
      ++seen["permute.bwd"];
      EXPECT_EQ(op.atomic_add, sim::AtomicAdd::Index);
      EXPECT_EQ(op.launches, 12);
    }
    EXPECT_FALSE(op.pair_layout) << op.name;
    if (ends(".fwd.router")) {
      ++seen["router"];
      EXPECT_EQ(op.launches, 28);
    }
  });
  EXPECT_EQ(seen["unpermute"], 32);  // one a layer
  EXPECT_EQ(seen["permute.bwd"], 32);
  EXPECT_EQ(seen["router"], 32);
  EXPECT_EQ(syncs, 32);
  // Fused (the default): one launch and one pass each, no atomic adds.
  for_each_op(generate_step(mixtral_ep8(), 1024).ranks[0],
              [&](sim::OpVertex, const sim::OpNode& op) {
                EXPECT_EQ(op.atomic_add, sim::AtomicAdd::None) << op.name;
                EXPECT_EQ(op.launches, 1) << op.name;
              });
}

// Mixtral on EP 2 (4 local experts), the all-to-all dispatcher: the received rows are
// regrouped by local expert before fc1 and back before the combine, and the same two in the
// backward (Megatron-LM sort_chunks_by_idxs): a pass over the rank's routed rows each, the
// pairs with the exchanges kept.
TEST(MoeGenerator, AllToAllDispatcherRegroupsRowsByLocalExpert) {
  ModelSpec m = mixtral_ep8();
  m.parallelism.ep = 2;
  const auto step = generate_step(m, 1024);
  const double routed = 4096.0 * 2;  // tokens x top_k reach the rank's 4 experts
  std::map<std::string, int> seen;
  int paired_a2a = 0;
  for_each_op(step.ranks[0], [&](sim::OpVertex v, const sim::OpNode& op) {
    if (op.kind == OpKind::Collective && op.collective == CollectiveOp::AllToAll &&
        op.pair_partner >= 0)
      ++paired_a2a;
    if (!op.pair_layout) return;
    const std::string what = op.name.substr(op.name.find(".", op.name.find(".mb") + 1) + 1);
    ++seen[what];
    EXPECT_EQ(op.kind, OpKind::Elementwise);
    EXPECT_EQ(op.bytes, static_cast<std::uint64_t>(2 * routed * 4096 * 2)) << op.name;
    EXPECT_EQ(op.launches, 1) << op.name;
    (void)v;
  });
  const std::map<std::string, int> want = {{"fwd.sort_tokens", 32},
                                           {"fwd.unsort_tokens", 32},
                                           {"bwd.unsort_tokens.bwd", 32},
                                           {"bwd.sort_tokens.bwd", 32}};
  EXPECT_EQ(seen, want);
  EXPECT_EQ(paired_a2a, 32 * 4);
  // The unfused path launches the measured regrouping kernels: rows and probabilities.
  m.moe.permute_fusion = false;
  for_each_op(generate_step(m, 1024).ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    if (!op.pair_layout) return;
    const bool two = op.name.find("fwd.sort_tokens") != std::string::npos ||
                     op.name.find("bwd.sort_tokens.bwd") != std::string::npos;
    EXPECT_EQ(op.launches, two ? 2 : 1) << op.name;
  });
  // A hierarchical dispatcher's kernels write each expert's rows together: no regrouping.
  ModelSpec h = shipped("deepseek-v3");
  h.moe.dispatcher = TokenDispatcher::DeepEp;
  h.training.global_batch = 64;
  for_each_op(generate_step(h, 1024).ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    EXPECT_FALSE(op.pair_layout) << op.name;
  });
}
