#include "kernels/redistribution/plan_executor.hpp"

#include <nccl.h>

#include <algorithm>
#include <string>

#include "kernels/harness/comm.hpp"
#include "kernels/harness/fill.hpp"
#include "kernels/redistribution/block_kernels.hpp"

namespace overlapsim::kernels::redistribution {
namespace {

std::vector<std::int64_t> extents(const rd::Box& b) {
  std::vector<std::int64_t> e;
  for (std::size_t i = 0; i < b.lo.size(); ++i) e.push_back(b.hi[i] - b.lo[i]);
  return e;
}

// Row-major strides (elements) of a dense array of `frame`.
std::vector<std::int64_t> strides(const rd::Box& frame) {
  const auto e = extents(frame);
  std::vector<std::int64_t> s(e.size(), 1);
  for (std::size_t i = e.size(); i-- > 1;) s[i - 1] = s[i] * e[i];
  return s;
}

// Which of the source's pending-sum members (combinations of coordinates along its partial
// axes, row-major) a block of `device` under `layout` sums: its own under the source; under
// a later layout, every member that agrees with it on the axes still pending.
ValueSpec values_of(const rd::Plan& plan, const rd::Layout& layout, int device) {
  const auto& partial = plan.from.partial;
  ValueSpec v;
  for (int a : partial) v.combos *= plan.mesh.axis_sizes[static_cast<std::size_t>(a)];
  const auto own = plan.mesh.coords(device);
  for (int k = 0; k < v.combos; ++k) {
    int rest = k;
    bool agrees = true;
    for (std::size_t j = partial.size(); j-- > 0;) {
      const int a = partial[j];
      const int size = plan.mesh.axis_sizes[static_cast<std::size_t>(a)];
      const int c = rest % size;
      rest /= size;
      if (layout.is_partial(a) && c != own[static_cast<std::size_t>(a)]) agrees = false;
    }
    if (agrees) v.summed.push_back(k);
  }
  return v;
}

Status split_comm(CommHandle& parent, int color, int key, int members, CommHandle* out) {
  *out = CommHandle{};
  out->rank = key;
  out->world = members;
  out->timeout_s = parent.timeout_s;
  out->trace = parent.trace;
  out->peer_failed = parent.peer_failed;
  out->barrier = parent.barrier;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;  // timings: see HarnessOptions::blocking_comms
  NCCL_CHECK(ncclCommSplit(parent.comm, color, key, &out->comm, &config));
  if (out->comm == nullptr) return Status::failure("ncclCommSplit: no communicator came back");
  return Status::success();
}

}  // namespace

PlanExecutor::~PlanExecutor() { release(); }

std::int64_t PlanExecutor::result_elements() const {
  return plan_ ? rd::local_elements(plan_->mesh, plan_->shape, plan_->to) : 0;
}

Status PlanExecutor::prepare(RankContext& ctx, const rd::Plan& plan) {
  if (plan.element_bytes != 2)
    return Status::failure("PlanExecutor: 2-byte elements only, the plan has " +
                           std::to_string(plan.element_bytes));
  if (plan.mesh.num_devices() != ctx.comm.world)
    return Status::failure("PlanExecutor: the mesh " + plan.mesh.to_string() + " has " +
                           std::to_string(plan.mesh.num_devices()) + " devices but there are " +
                           std::to_string(ctx.comm.world) + " ranks");
  ctx_ = &ctx;
  plan_ = &plan;
  device_ = ctx.comm.rank;
  const int eb = plan.element_bytes;
  cudaStream_t stream = ctx.compute_stream;
  const rd::Box src = rd::block_of(plan.mesh, plan.shape, plan.from, device_);
  OVERLAPSIM_TRY(source_.allocate(static_cast<std::size_t>(src.elements() * eb)));
  OVERLAPSIM_TRY(fill_block(source_.data(), plan.shape, src.lo, extents(src),
                            values_of(plan, plan.from, device_), stream));
  const rd::Box dst = rd::block_of(plan.mesh, plan.shape, plan.to, device_);
  OVERLAPSIM_TRY(expected_.allocate(static_cast<std::size_t>(std::max<std::int64_t>(dst.elements(), 1) * eb)));
  OVERLAPSIM_TRY(fill_block(expected_.data(), plan.shape, dst.lo, extents(dst),
                            values_of(plan, plan.to, device_), stream));
  OVERLAPSIM_TRY(counter_.allocate(sizeof(unsigned long long)));

  steps_.clear();
  steps_.reserve(plan.steps.size());
  char* input = source_.as<char>();
  for (const rd::Step& step : plan.steps) {
    StepBuffers s;
    s.recipe = rd::recipe(plan, step, device_);
    s.input = input;
    if (s.recipe.output_view_offset) {
      s.result = input + *s.recipe.output_view_offset * eb;
    } else {
      OVERLAPSIM_TRY(s.output.allocate(static_cast<std::size_t>(s.recipe.output_elements * eb)));
      s.result = s.output.as<char>();
    }
    if (s.recipe.staging_elements > 0)
      OVERLAPSIM_TRY(s.staging.allocate(static_cast<std::size_t>(s.recipe.staging_elements * eb)));
    if (s.recipe.call != rd::CallKind::None) {
      if (static_cast<int>(s.recipe.group.size()) == ctx.comm.world) {
        s.comm = &ctx.comm;
      } else {
        auto& c = comms_[step.axes];
        if (!c) {
          // Every rank splits, in the same order of steps: colour = the group's first
          // device, key = the position in the group (NCCL rank order = group order).
          c = std::make_unique<CommHandle>();
          const auto pos = std::find(s.recipe.group.begin(), s.recipe.group.end(), device_) -
                           s.recipe.group.begin();
          OVERLAPSIM_TRY(split_comm(ctx.comm, s.recipe.group.front(), static_cast<int>(pos),
                                    static_cast<int>(s.recipe.group.size()), c.get()));
        }
        s.comm = c.get();
      }
    }
    input = s.result;
    steps_.push_back(std::move(s));
  }
  return wait_stream(ctx.comm, stream, "redistribution prepare");
}

char* PlanExecutor::base(const StepBuffers& s, rd::BufferKind kind) const {
  switch (kind) {
    case rd::BufferKind::Input: return s.input;
    case rd::BufferKind::Output: return s.result;
    case rd::BufferKind::Staging: return s.staging.as<char>();
  }
  return nullptr;
}

int PlanExecutor::comm_rank(const StepBuffers& s, int device) const {
  const auto& g = s.recipe.group;
  return static_cast<int>(std::find(g.begin(), g.end(), device) - g.begin());
}

Status PlanExecutor::copy(const rd::BoxCopy& c, StepBuffers& s, cudaStream_t stream) {
  const int eb = plan_->element_bytes;
  const char* src = base(s, c.src.buffer) +
                    (c.src.offset + rd::offset_within(c.box, c.src.frame)) * eb;
  char* dst = base(s, c.dst.buffer) + (c.dst.offset + rd::offset_within(c.box, c.dst.frame)) * eb;
  return copy_box(src, strides(c.src.frame), dst, strides(c.dst.frame), extents(c.box), eb, stream);
}

Status PlanExecutor::run_step(StepBuffers& s, cudaStream_t stream) {
  const int eb = plan_->element_bytes;
  const ncclDataType_t type = ncclBfloat16;  // any 2-byte type moves the same bits
  for (const rd::BoxCopy& c : s.recipe.before) OVERLAPSIM_TRY(copy(c, s, stream));
  const auto at = [&](const rd::Span& sp) { return base(s, sp.buffer) + sp.offset * eb; };
  const auto count = [](const rd::Span& sp) { return static_cast<std::size_t>(sp.count); };
  switch (s.recipe.call) {
    case rd::CallKind::None: break;
    case rd::CallKind::AllReduce:
      NCCL_SETTLE(*s.comm, ncclAllReduce(at(s.recipe.send), at(s.recipe.recv), count(s.recipe.recv),
                                         type, ncclSum, s.comm->comm, stream));
      break;
    case rd::CallKind::ReduceScatter:
      NCCL_SETTLE(*s.comm, ncclReduceScatter(at(s.recipe.send), at(s.recipe.recv),
                                             count(s.recipe.recv), type, ncclSum, s.comm->comm,
                                             stream));
      break;
    case rd::CallKind::AllGather:
      NCCL_SETTLE(*s.comm, ncclAllGather(at(s.recipe.send), at(s.recipe.recv),
                                         count(s.recipe.send), type, s.comm->comm, stream));
      break;
    case rd::CallKind::SendRecv:
      NCCL_SETTLE(*s.comm, ncclGroupStart());
      for (const rd::PeerSpan& p : s.recipe.sends)
        NCCL_SETTLE(*s.comm, ncclSend(at(p.span), count(p.span), type, comm_rank(s, p.peer),
                                      s.comm->comm, stream));
      for (const rd::PeerSpan& p : s.recipe.recvs)
        NCCL_SETTLE(*s.comm, ncclRecv(at(p.span), count(p.span), type, comm_rank(s, p.peer),
                                      s.comm->comm, stream));
      NCCL_SETTLE(*s.comm, ncclGroupEnd());
      break;
  }
  for (const rd::BoxCopy& c : s.recipe.after) OVERLAPSIM_TRY(copy(c, s, stream));
  return Status::success();
}

Status PlanExecutor::run(cudaStream_t stream, const std::vector<cudaEvent_t>* step_end) {
  for (std::size_t k = 0; k < steps_.size(); ++k) {
    OVERLAPSIM_TRY(run_step(steps_[k], stream));
    if (step_end) CUDA_CHECK(cudaEventRecord((*step_end)[k], stream));
  }
  return Status::success();
}

Status PlanExecutor::poison_outputs(cudaStream_t stream) {
  for (StepBuffers& s : steps_) {
    if (s.output.bytes() > 0) OVERLAPSIM_TRY(poison(s.output.data(), s.output.bytes() / 2, stream));
    if (s.staging.bytes() > 0)
      OVERLAPSIM_TRY(poison(s.staging.data(), s.staging.bytes() / 2, stream));
  }
  return Status::success();
}

Status PlanExecutor::count_wrong(cudaStream_t stream, std::uint64_t* wrong) {
  const char* result = steps_.empty() ? source_.as<char>() : steps_.back().result;
  OVERLAPSIM_TRY(wait_stream(ctx_->comm, stream, "redistribution result"));
  return count_differences(result, expected_.data(), static_cast<std::size_t>(result_elements()),
                           counter_.data(), stream, wrong);
}

Status PlanExecutor::release() {
  steps_.clear();
  source_.release();
  expected_.release();
  counter_.release();
  Status result = Status::success();
  for (auto& [axes, c] : comms_) {
    if (!c || c->comm == nullptr) continue;
    const ncclResult_t f = ncclCommFinalize(c->comm);
    const ncclResult_t d = ncclCommDestroy(c->comm);
    c->comm = nullptr;
    if ((f != ncclSuccess || d != ncclSuccess) && result.ok)
      result = Status::failure(std::string("ncclCommDestroy: ") +
                               ncclGetErrorString(f != ncclSuccess ? f : d));
  }
  comms_.clear();
  return result;
}

}  // namespace overlapsim::kernels::redistribution
