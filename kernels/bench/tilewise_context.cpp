#include "kernels/bench/tilewise_context.hpp"

#include <utility>

namespace overlapsim::kernels::bench {

const Phase2Names& phase2_names(tw::CopyEnginePhase2 mode) {
  for (const Phase2Names& n : kPhase2Names)
    if (n.mode == mode) return n;
  return kPhase2Names[0];
}

namespace {
constexpr const char* kRingSuffix = "_ring";

std::string chunk_suffix(const TilewiseCandidate& cand) {
  return (cand.row_chunks > 1 ? "_c" + std::to_string(cand.row_chunks) : std::string()) +
         (cand.slabs > 1 ? "_s" + std::to_string(cand.slabs) + (cand.slab_skew ? "d" : "")
                         : std::string()) +
         (cand.parallel_phase2 ? "_par" : "") + (cand.phase2_side_stream ? "_side" : "") +
         (cand.tail_whole_part ? "_whole" : "") +
         (cand.split_k_tail > 1 ? "_k" + std::to_string(cand.split_k_tail) : std::string());
}
}  // namespace

std::string copy_engine_wait(const TilewiseCandidate& cand) {
  return std::string(phase2_names(cand.phase2).wait) +
         (cand.route == tw::CopyEngineRoute::Ring ? kRingSuffix : "") + chunk_suffix(cand);
}

std::string copy_engine_design(const TilewiseCandidate& cand) {
  return std::string(phase2_names(cand.phase2).design) +
         (cand.route == tw::CopyEngineRoute::Ring ? kRingSuffix : "") + chunk_suffix(cand);
}

std::optional<TilewiseCandidate> parse_copy_engine_wait(const std::string& wait) {
  for (const Phase2Names& names : kPhase2Names)
    for (const tw::CopyEngineRoute route : {tw::CopyEngineRoute::Direct, tw::CopyEngineRoute::Ring})
      for (const int chunks : kRowChunkChoices)
        for (const int slabs : kSlabChoices)
          for (const bool skew : {false, true})
            for (const bool parallel : {false, true})
              for (const bool side : {false, true})
                for (const bool whole : {false, true})
                  for (const int split : kSplitTailChoices) {
                    if ((chunks > 1 && slabs > 1) || (skew && slabs == 1)) continue;
                    TilewiseCandidate c;
                    c.phase2 = names.mode;
                    c.route = route;
                    c.row_chunks = chunks;
                    c.slabs = slabs;
                    c.slab_skew = skew;
                    c.parallel_phase2 = parallel;
                    c.phase2_side_stream = side;
                    c.tail_whole_part = whole;
                    c.split_k_tail = split;
                    if (copy_engine_wait(c) == wait) return c;
                  }
  return std::nullopt;
}

TilewiseShapeContext::TilewiseShapeContext(BenchEnv& env_, const BenchCase& c, PairOp op_,
                                           const PairShape& shape_, const TilewiseCaseIo& io_,
                                           const TilewiseSettings& settings_,
                                           TilewiseRankState& state_, TilewiseReports& reports_)
    : env(env_),
      bench_case(c),
      op(op_),
      coll(pair_collective(op_)),
      shape(shape_),
      io(io_),
      settings(settings_),
      state(state_),
      reports(reports_),
      tags(read_device_tags(env_.world())) {}

RowBuilder TilewiseShapeContext::row(const std::string& op_name, const std::string& design,
                                     int chunks, const Timing& t) const {
  return RowBuilder(op_name, design, to_string(bench_case.dtype))
      .shape(shape)
      .chunks(chunks)
      .time(t);
}

tw::TilewiseOptions TilewiseShapeContext::options_for(const TilewiseCandidate& cand) const {
  tw::TilewiseOptions o;
  o.group_waves = cand.partition;
  o.wait = cand.wait;
  o.comm_sms = cand.comm_sms;
  o.wait_timeout_s = env.ctx->comm.timeout_s;
  return o;
}

tw::CopyEngineOptions TilewiseShapeContext::copy_engine_options(int groups) const {
  tw::CopyEngineOptions o;
  o.groups_per_part = groups;
  o.system_scope_signal = ce_system_scope;
  o.wait_timeout_s = env.ctx->comm.timeout_s;
  return o;
}

tw::CopyEngineOptions TilewiseShapeContext::copy_engine_options(
    const TilewiseCandidate& cand) const {
  tw::CopyEngineOptions o = copy_engine_options(cand.ce_groups);
  o.phase2 = cand.phase2;
  o.route = cand.route;
  o.row_chunks = cand.row_chunks;
  o.slabs = cand.slabs;
  o.slab_skew = cand.slab_skew;
  o.parallel_phase2 = cand.parallel_phase2;
  o.phase2_side_stream = cand.phase2_side_stream;
  o.tail_whole_part = cand.tail_whole_part;
  o.split_k_tail = cand.split_k_tail;
  return o;
}

tw::TuningKey TilewiseShapeContext::cache_key(bool copy_engine) const {
  return tw::TuningKey{tags.gpu,
                       to_string(bench_case.dtype),
                       shape.m,
                       shape.n,
                       shape.k,
                       env.world(),
                       std::string(to_string(coll)) + (copy_engine ? "_ce" : "")};
}

Status TilewiseShapeContext::remember(const tw::TuningEntry& entry) {
  state.cache->put(entry);
  if (env.rank() == 0 && !settings.cache_path.empty())
    OVERLAPSIM_TRY(state.cache->save(settings.cache_path));
  return Status::success();
}

Status TilewiseShapeContext::comm_for(int sms, CommHandle** out) {
  if (sms == 0) {
    *out = &env.ctx->comm;
    return Status::success();
  }
  auto found = state.comms.find(sms);
  if (found == state.comms.end()) {
    CommHandle handle;
    OVERLAPSIM_TRY(tw::make_limited_comm(env.ctx->comm, sms, &handle));
    found = state.comms.emplace(sms, handle).first;
  }
  *out = &found->second;
  return Status::success();
}

Status TilewiseShapeContext::natural_gemms(const gemm::SchedulerOptions& sched,
                                           std::vector<std::unique_ptr<gemm::OwnGemm>>* out) {
  for (int s = 0; s < io.sets; ++s) {
    const PairBuffers b = io.set(s);
    gemm::GemmArgs args;
    args.m = shape.m;
    args.n = shape.n;
    args.k = shape.k;
    args.dtype = bench_case.dtype == DType::BF16 ? gemm::DType::kBf16 : gemm::DType::kFp16;
    args.a = b.a;
    args.b = b.b;
    args.c = natural.data();
    auto g = std::make_unique<gemm::OwnGemm>();
    OVERLAPSIM_TRY(g->initialize(args, {}, sched));
    out->push_back(std::move(g));
  }
  return Status::success();
}

}  // namespace overlapsim::kernels::bench
