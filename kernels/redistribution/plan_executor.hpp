#pragma once
// Executes a redistribution plan (redistribution/plan.hpp) on real device buffers: one rank
// of the multi-GPU harness per mesh device (mesh device d = harness rank d), each following
// its step recipes (redistribution/recipe.hpp) literally: box copies with our copy kernel
// (block_kernels.hpp), the collectives through NCCL on a communicator per group (split from
// the world's), exchanges as one NCCL group of ncclSend/ncclRecv. Every step writes a fresh
// output buffer (reductions run out of place), so the source stays intact and the plan can
// be run again and again for timing. 2-byte elements only.
//
// prepare() and release() allocate, free and create communicators: call them on every rank,
// between quiesce() fences. run() only enqueues work on the stream. C++20 host code.
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "kernels/common/status.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/multi_gpu.hpp"
#include "redistribution/plan.hpp"
#include "redistribution/recipe.hpp"

namespace overlapsim::kernels::redistribution {

namespace rd = overlapsim::redistribution;

class PlanExecutor {
 public:
  PlanExecutor() = default;
  ~PlanExecutor();
  PlanExecutor(const PlanExecutor&) = delete;
  PlanExecutor& operator=(const PlanExecutor&) = delete;

  // The plan's mesh must have as many devices as the harness has ranks.
  Status prepare(RankContext& ctx, const rd::Plan& plan);
  // Enqueues the plan on `stream`; records step_end[k] (when given) after step k.
  Status run(cudaStream_t stream, const std::vector<cudaEvent_t>* step_end = nullptr);
  // Poisons every buffer the plan writes (0xFFFF), so an element no step wrote shows.
  Status poison_outputs(cudaStream_t stream);
  // Elements of this rank's result that differ bitwise from the target block's values
  // (block_kernels.hpp ValueSpec: the values the source was filled with, moved and
  // summed as the layouts say). Waits for `stream`.
  Status count_wrong(cudaStream_t stream, std::uint64_t* wrong);
  // Frees the buffers and destroys the group communicators.
  Status release();

  std::int64_t result_elements() const;

 private:
  struct StepBuffers {
    rd::StepRecipe recipe;
    DeviceBuffer output, staging;
    char* input = nullptr;   // this step's input block
    char* result = nullptr;  // its output block (a view into the input for a kept slice)
    CommHandle* comm = nullptr;
  };
  Status run_step(StepBuffers& s, cudaStream_t stream);
  Status copy(const rd::BoxCopy& c, StepBuffers& s, cudaStream_t stream);
  char* base(const StepBuffers& s, rd::BufferKind kind) const;
  int comm_rank(const StepBuffers& s, int device) const;

  RankContext* ctx_ = nullptr;
  const rd::Plan* plan_ = nullptr;
  int device_ = 0;
  DeviceBuffer source_, expected_, counter_;
  std::vector<StepBuffers> steps_;
  // One communicator per set of group axes that is not the whole mesh.
  std::map<std::vector<int>, std::unique_ptr<CommHandle>> comms_;
};

}  // namespace overlapsim::kernels::redistribution
