#include "workloads/generator.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>

#include "sim/scenario/run_budget.hpp"
#include "workloads/dlrm.hpp"
#include "workloads/grad_buckets.hpp"
#include "workloads/pipeline_schedule.hpp"
#include "workloads/rank_builder.hpp"
#include "workloads/step_assembly.hpp"
#include "workloads/transformer_emitter.hpp"

namespace overlapsim::workloads {

namespace {

GradSyncOptions grad_sync_options(const ModelSpec& spec, const ParallelLayout& layout,
                                  const RankGroups& g) {
  GradSyncOptions o;
  o.mode = spec.training.grad_sync;
  o.dp_group = g.dp;
  o.dp_size = layout.group_size("dp");
  o.edp_group = g.edp;
  o.edp_size = layout.group_size("edp");
  o.embd_group = spec.kind != ModelKind::Dlrm && spec.transformer.tie_embeddings ? g.embd : -1;
  o.bucket_bytes = spec.training.grad_bucket_bytes;
  o.grad_bytes = sim::bytes_per_element(spec.training.grad_precision);
  o.param_bytes = spec.training.fp8_params ? 1 : 2;
  o.overlap_grad_reduce = spec.training.overlap_grad_reduce;
  o.overlap_param_gather = spec.kind != ModelKind::Dlrm &&
                           spec.training.grad_sync == GradSync::DistributedOptimizer &&
                           spec.training.overlap_param_gather;
  // Transformer and MoE models run Megatron-LM's optimizer step (grad_buckets.hpp).
  o.megatron_step = spec.kind != ModelKind::Dlrm;
  o.clip_grad = spec.training.clip_grad > 0;
  o.unscale_grads = spec.training.precision == sim::Precision::FP16;
  return o;
}

// The 1F1B program of a rank's stage.
void emit_one_f_one_b(const ModelSpec& spec, const ParallelLayout& layout, int rank,
                      const RankGroups& groups, RankBuilder& b, TransformerEmitter& emitter) {
  const int stages = layout.pp();
  const int microbatches = microbatches_per_step(spec);
  const int block = layout.tp() * layout.cp() * layout.dp();  // ranks per stage
  const std::uint64_t bytes = emitter.pipeline_bytes();
  for (const PipeStep& step : one_f_one_b(stages, microbatches, emitter.stage())) {
    const int mb = step.microbatch;
    switch (step.action) {
      case PipeAction::Forward:
        emitter.forward(mb);
        continue;
      case PipeAction::Backward:
        emitter.backward(mb, mb == microbatches - 1);
        continue;
      default:
        break;
    }
    const bool send =
        step.action == PipeAction::SendForward || step.action == PipeAction::SendBackward;
    const bool towards_next =
        step.action == PipeAction::SendForward || step.action == PipeAction::RecvBackward;
    const int peer = towards_next ? rank + block : rank - block;
    auto node = sendrecv_node(fmt::format(FMT_COMPILE("pp.mb{}.{}"), mb, to_string(step.action)),
                              send, peer, bytes, groups.pp);
    node.microbatch = mb;
    node.phase = (step.action == PipeAction::SendForward || step.action == PipeAction::RecvForward)
                     ? sim::Phase::Forward
                     : sim::Phase::Backward;
    // Posted where the program reaches it; the next compute waits for it (Megatron's
    // 1F1B p2p calls are blocking).
    OpVertex v = b.add(std::move(node), {b.last(sim::StreamKind::Compute)});
    b.fence_compute(v);
  }
}

// No pipeline, with Megatron-Core's EP communication overlap
// (combined_1f1b_schedule_for_no_pipelining): the first forward alone, then each forward
// beside the previous microbatch's backward, then the last backward alone.
void emit_combined_no_pipelining(const ModelSpec& spec, TransformerEmitter& emitter) {
  const int microbatches = microbatches_per_step(spec);
  emitter.forward(0);
  for (int mb = 1; mb < microbatches; ++mb)
    emitter.forward_backward({0, mb}, {0, mb - 1}, mb - 1 == microbatches - 1);
  emitter.backward(microbatches - 1, true);
}

// Interleaved 1F1B with Megatron's default overlap of p2p communication: sends do not
// block compute; the receive a pass needs is posted when the previous pass starts and
// waited for by the pass. Virtual stage c·p + s feeds c·p + s + 1, so the last stage's
// chunk c feeds chunk c + 1 of stage 0.
void emit_interleaved(const ModelSpec& spec, const ParallelLayout& layout, int rank,
                      const RankGroups& groups, RankBuilder& b, TransformerEmitter& emitter) {
  const int stages = layout.pp();
  const int chunks = spec.parallelism.virtual_stages;
  const int microbatches = microbatches_per_step(spec);
  const RankCoord c = layout.coord(rank);
  const int next = layout.rank_of(c.tp, c.cp, c.dp, (c.pp + 1) % stages);
  const int prev = layout.rank_of(c.tp, c.cp, c.dp, (c.pp + stages - 1) % stages);
  const bool first_stage = c.pp == 0, last_stage = c.pp == stages - 1;
  const std::uint64_t bytes = emitter.pipeline_bytes();
  // Megatron-Core's EP overlap merges each steady-state forward with the backward after it,
  // one more forward ahead (get_pp_rank_microbatches: one more warm-up microbatch).
  const bool combined = spec.kind == ModelKind::Moe && spec.moe.ep_overlap;
  const auto order = interleaved_order(stages, chunks, microbatches, c.pp, combined ? 1 : 0);

  auto transfer = [&](const ChunkPass& pass, bool send) {
    const bool towards_next = pass.forward == send;
    auto node =
        sendrecv_node(fmt::format(FMT_COMPILE("pp.c{}.mb{}.{}_{}"), pass.chunk, pass.microbatch,
                                  send ? "send" : "recv", pass.forward ? "fwd" : "bwd"),
                      send, towards_next ? next : prev, bytes, groups.pp);
    node.microbatch = pass.microbatch;
    node.phase = pass.forward ? sim::Phase::Forward : sim::Phase::Backward;
    return b.add_unchained(std::move(node), {b.last(sim::StreamKind::Compute)});
  };
  // Whether a pass receives its input from, or sends its output to, another stage.
  auto receives = [&](const ChunkPass& p) {
    return p.forward ? !(first_stage && p.chunk == 0) : !(last_stage && p.chunk == chunks - 1);
  };
  auto sends = [&](const ChunkPass& p) {
    return p.forward ? !(last_stage && p.chunk == chunks - 1) : !(first_stage && p.chunk == 0);
  };

  // Megatron-Core's interleaved schedule gathers the parameters a model chunk at a time:
  // chunks 0 and 1 at the start, and chunk k + 1 (k >= 1) when this rank's forward step
  // number k·p - s starts, s its stage (forward_step_helper_preprocess:
  // param_sync_virtual_microbatch_id = virtual_microbatch_id + pipeline_parallel_rank is the
  // first microbatch of chunk k), so that all stages start it at about the same time.
  emitter.prefetch_chunk_params(0, kNoOp);
  emitter.prefetch_chunk_params(1, kNoOp);
  int forward_steps = 0;
  auto before_forward = [&] {
    for (int chunk = 2; chunk < chunks; ++chunk)
      if ((chunk - 1) * stages - c.pp == forward_steps)
        emitter.prefetch_chunk_params(chunk, static_cast<OpVertex>(boost::num_vertices(b.graph())));
    ++forward_steps;
  };
  OpVertex pending = order.empty() || !receives(order[0]) ? kNoOp : transfer(order[0], false);
  for (std::size_t j = 0; j < order.size(); ++j) {
    const ChunkPass& pass = order[j];
    if (combined && pass.forward && j + 1 < order.size() && !order[j + 1].forward) {
      // combined_1f1b_schedule_for_interleaved_pipelining: the compute waits for both
      // passes' inputs before the merged layers (pre_forward, pre_backward).
      const ChunkPass& back = order[j + 1];
      const OpVertex forward_input = pending;
      const OpVertex backward_input = receives(back) ? transfer(back, false) : kNoOp;
      pending =
          (j + 2 < order.size() && receives(order[j + 2])) ? transfer(order[j + 2], false) : kNoOp;
      if (forward_input != kNoOp) b.fence_compute(forward_input);
      if (backward_input != kNoOp) b.fence_compute(backward_input);
      before_forward();
      emitter.forward_backward({pass.chunk, pass.microbatch}, {back.chunk, back.microbatch},
                               back.microbatch == microbatches - 1);
      if (sends(pass)) transfer(pass, true);
      if (sends(back)) transfer(back, true);
      ++j;
      continue;
    }
    const OpVertex input = pending;
    pending =
        (j + 1 < order.size() && receives(order[j + 1])) ? transfer(order[j + 1], false) : kNoOp;
    if (input != kNoOp) b.fence_compute(input);
    emitter.set_chunk(pass.chunk);
    if (pass.forward) {
      before_forward();
      emitter.forward(pass.microbatch);
    } else {
      emitter.backward(pass.microbatch, pass.microbatch == microbatches - 1);
    }
    if (sends(pass)) transfer(pass, true);
  }
}

// One rank of a Transformer/MoE model: the pipeline program of its stage, then the
// gradient reduction and the optimizer.
void emit_transformer_rank(const ModelSpec& spec, const ParallelLayout& layout, int rank,
                           const RankGroups& groups, sim::OpGraph& graph, OpBudget& budget) {
  RankBuilder b(graph, &budget);
  GradientBuckets grads;
  TransformerEmitter emitter(spec, layout, rank, groups, b, grads);
  if (spec.kind == ModelKind::Moe && spec.moe.ep_overlap && layout.pp() == 1)
    emit_combined_no_pipelining(spec, emitter);
  else if (spec.parallelism.virtual_stages > 1)
    emit_interleaved(spec, layout, rank, groups, b, emitter);
  else
    emit_one_f_one_b(spec, layout, rank, groups, b, emitter);
  grads.emit(b, grad_sync_options(spec, layout, groups));
}

}  // namespace

std::int64_t microbatch_count(const ModelSpec& r) {
  const std::int64_t dp = r.parallelism.dp;
  const std::int64_t mb =
      r.training.micro_batch > 0 ? r.training.micro_batch : r.training.global_batch / dp;
  return r.training.global_batch / (mb * dp);
}

int microbatches_per_step(const ModelSpec& r) { return static_cast<int>(microbatch_count(r)); }

sim::StepGraph generate_step(const ModelSpec& spec, int world_size,
                             const GenerateOptions& options) {
  const ModelSpec r = resolve_for_world(spec, world_size, options.gpus_per_node);
  const auto& p = r.parallelism;

  const bool moe = r.kind == ModelKind::Moe;
  const ParallelLayout flat(p.tp, p.cp, p.dp, p.pp, moe ? p.ep : 1, moe ? p.expert_tp() : 0);
  // A hierarchical token exchange splits each EP group by node (ParallelLayout::ep_node).
  const ParallelLayout layout = moe && r.moe.hierarchical_dispatch() && options.gpus_per_node > 0
                                    ? ParallelLayout(p.tp, p.cp, p.dp, p.pp, p.ep, p.expert_tp(),
                                                     flat.ep_ranks_per_node(options.gpus_per_node))
                                    : flat;

  sim::StepGraph step;
  step.workload = r.name;
  step.world_size = world_size;
  // An expert-TP group of its own only when it differs from the TP group.
  std::vector<std::string> families = {"tp", "cp", "dp", "pp", "ep", "edp", "embd"};
  if (layout.etp() != layout.tp()) families.push_back("etp");
  if (layout.ep_per_node() < layout.ep()) {
    families.push_back("ep_node");
    families.push_back("ep_rail");
  }
  const GroupTable table(layout, families, step);

  std::vector<int> ranks;
  if (options.fold) {
    for (int s = 0; s < layout.pp(); ++s) ranks.push_back(layout.rank_of(0, 0, 0, s));
  } else {
    for (int rank = 0; rank < world_size; ++rank) ranks.push_back(rank);
  }
  const int multiplicity = options.fold ? layout.tp() * layout.cp() * layout.dp() : 1;
  if (options.fold) {
    step.representative.resize(world_size);
    for (int rank = 0; rank < world_size; ++rank)
      step.representative[rank] = layout.rank_of(0, 0, 0, layout.coord(rank).pp);
  }
  // Each program is built where it stays: Boost 1.74's adjacency_list has no move
  // constructor, so pushing a finished program copied its whole graph.
  step.ranks.reserve(ranks.size());
  OpBudget budget{sim::max_ops_within(sim::default_memory_limit_bytes())};
  // Every simulated rank runs each microbatch's forward and backward at least (and the
  // pipeline schedule lists them before any op exists), so a step over the budget stops
  // here already.
  if (r.kind != ModelKind::Dlrm &&
      2.0 * static_cast<double>(microbatch_count(r)) * static_cast<double>(ranks.size()) >
          static_cast<double>(budget.ops_left))
    throw StepGraphTooLarge(fmt::format(
        "{} microbatches per step on {} simulated ranks are more operations than fit in 80% "
        "of this machine's available memory (expected fewer microbatches: a larger "
        "micro_batch or dp, or a smaller global_batch)",
        microbatch_count(r), ranks.size()));
  std::size_t previous_ops = 0;
  for (int rank : ranks) {
    sim::RankProgram& program = step.ranks.emplace_back();
    // Stages differ by a few ops at most (the embedding, the head): sized from the stage
    // before, the vertex list is not regrown (and each vertex moved) a dozen times over.
    program.graph.m_vertices.reserve(previous_ops + previous_ops / 16);
    program.rank = rank;
    program.multiplicity = multiplicity;
    const RankGroups groups = table.groups_of(rank);
    if (r.kind == ModelKind::Dlrm) {
      RankBuilder b(program.graph, &budget);
      emit_dlrm_rank(r, layout, groups, b, grad_sync_options(r, layout, groups));
    } else {
      emit_transformer_rank(r, layout, rank, groups, program.graph, budget);
    }
    previous_ops = boost::num_vertices(program.graph);
  }
  // Horovod coordinates every collective on its background thread: a tensor that becomes
  // ready at a random moment of the cycle waits half a cycle on average (assumed uniform)
  // before the cycle that launches it.
  if (r.training.horovod_cycle_time_s > 0)
    for (auto& program : step.ranks) {
      auto [v, end] = boost::vertices(program.graph);
      for (; v != end; ++v)
        if (program.graph[*v].kind == sim::OpKind::Collective)
          program.graph[*v].launch_delay_s = r.training.horovod_cycle_time_s / 2;
    }
  mark_high_priority_comm(step, r.training.high_priority_comm);
  total_flops(step);
  if (r.kind == ModelKind::Dlrm) {
    step.tokens_per_step = static_cast<double>(r.training.global_batch);
    step.throughput_unit = "samples";
  } else {
    step.tokens_per_step = static_cast<double>(r.training.global_batch) * r.training.seq_len;
    step.throughput_unit = "tokens";
  }
  return step;
}

}  // namespace overlapsim::workloads
