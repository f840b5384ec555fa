#pragma once
// Data-parallel gradient synchronisation and the optimizer step of one rank.
//
// Generators register each weight tensor when the backward op that finishes its
// gradient (the wgrad GEMM of the last microbatch) is emitted. emit() then packs the
// tensors, in that production order, into buckets of at most `bucket_bytes` (a tensor
// larger than a bucket gets its own, as in PyTorch DDP) and launches one reduction per
// bucket on the DataComm stream as soon as the bucket's last gradient is produced, so
// the reductions overlap the rest of the backward pass. Dense tensors reduce over the
// "dp" family (DP×CP), expert tensors over "edp".
//   allreduce:             one all-reduce per bucket; optimizer on all local params
//   distributed_optimizer: reduce-scatter per bucket; optimizer on 1/dp of the params;
//                          then an all-gather of the updated params per bucket
//                          (Megatron's distributed optimizer; the all-gather is placed
//                          at the end of the step, not overlapped with the next one)
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/model.hpp"
#include "workloads/rank_builder.hpp"

namespace overlapsim::workloads {

// Bytes of device memory the Adam update touches per parameter besides the gradient
// (the default of GradSyncOptions::optimizer_state_bytes):
// read+write the fp32 master weight, exp_avg and exp_avg_sq (3 x 8 bytes) and write the
// 16-bit model weight (2 bytes) -- mixed-precision Adam as in Megatron-LM.
inline constexpr int kAdamStateBytesPerParam = 26;

struct GradSyncOptions {
  GradSync mode = GradSync::AllReduce;
  int dp_group = -1;  // StepGraph::groups index, -1 when dp·cp == 1
  int dp_size = 1;
  int edp_group = -1;  // expert-data-parallel group, -1 when size 1
  int edp_size = 1;
  int embd_group = -1;  // first/last stage pair for tied embeddings, -1 when not tied
  std::uint64_t bucket_bytes = 25ull << 20;
  int grad_bytes = 2;   // per element of the reduced gradient
  int param_bytes = 2;  // per element of the gathered parameters (16-bit model weights)
  int optimizer_state_bytes = kAdamStateBytesPerParam;
};

class GradientBuckets {
 public:
  void add(std::string name, std::int64_t params, OpVertex producer, bool expert);
  void add_tied_embedding(std::int64_t params, OpVertex producer);

  // Emits the reductions, the optimizer step and (distributed optimizer) the parameter
  // all-gathers. Returns the last op of the step.
  OpVertex emit(RankBuilder& builder, const GradSyncOptions& opt) const;

  std::int64_t dense_params() const;
  std::int64_t expert_params() const;

 private:
  struct Tensor {
    std::string name;
    std::int64_t params;
    OpVertex producer;
    bool expert;
  };
  std::vector<Tensor> tensors_;
  std::int64_t tied_params_ = 0;
  OpVertex tied_producer_ = kNoOp;
};

}  // namespace overlapsim::workloads
