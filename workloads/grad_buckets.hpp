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
//                          then the updated params are all-gathered (Megatron's
//                          distributed optimizer), either
//                          - overlapped (overlap_param_gather, Megatron-LM
//                            --overlap-param-gather): one all-gather per layer and family,
//                            emitted by the generator through param_gather() where the
//                            layer's first forward begins and issued when the previous
//                            block's forward starts. In steady state the gather of step
//                            n's update overlaps step n + 1's forward; a single simulated
//                            step places it in its own forward, ahead of the first use
//                            (same bytes, same overlap). Megatron buckets hold at least
//                            40M parameters (DistributedDataParallelConfig.bucket_size),
//                            about one layer of the shipped models per rank, hence one
//                            gather per layer. With an interleaved pipeline a model
//                            chunk's gathers are issued together, a chunk ahead
//                            (TransformerEmitter::prefetch_chunk_params);
//                          - or serialised after the optimizer, one per bucket.
// Without overlap_grad_reduce the reductions wait for the end of the backward pass.
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/model.hpp"
#include "workloads/rank_builder.hpp"

namespace overlapsim::workloads {

// Bytes of device memory the Adam update touches per parameter besides the gradient
// (the default of GradSyncOptions::optimizer_state_bytes): read+write the fp32 master
// weight, exp_avg and exp_avg_sq (3 x 8 bytes). The 16-bit model weight is written by
// the separate copy pass of the Megatron step (below), not by the Adam kernel.
inline constexpr int kAdamStateBytesPerParam = 24;

// Megatron-LM's optimizer step besides the Adam pass, as MixedPrecisionOptimizer::step
// and the training loop run it (github.com/NVIDIA/Megatron-LM,
// megatron/core/optimizer/optimizer.py, clip_grads.py,
// megatron/core/distributed/param_and_grad_buffer.py), each a memory-bound pass over
// the parameters the rank's optimizer updates (all local ones, or its 1/dp shard with
// the distributed optimizer) unless said otherwise; bytes per parameter:
//  - main grads from a 16-bit gradient buffer: `main_grad.float()` reads 2 and writes 4
//    (a no-op view when the buffer is fp32, Megatron's default);
//  - fp16 only: the loss-scale unscale and inf/nan check of the main grads
//    (torch._amp_foreach_non_finite_check_and_unscale_): reads and writes 4;
//  - --clip-grad > 0 (default 1.0): the gradient L2 norm (get_grad_norm_fp32,
//    multi_tensor_l2norm) reads every fp32 main grad once: 4. The scaling by
//    max_norm / norm is not charged: apex-era Megatron runs it only when the norm
//    exceeds the threshold, a property of the data;
//  - Adam reads the fp32 main grad (4) besides its 24 bytes of state;
//  - _copy_main_params_to_model_params: reads the fp32 master weight and writes the
//    16-bit model weight: 4 + 2;
//  - zero_grad_buffer at the start of the next step: the whole local gradient buffer
//    (every local parameter, not the shard: the buffer the reduce-scatter reads) is
//    zeroed: grad_bytes written.
struct MegatronStepBytes {
  std::uint64_t copy_main_grads = 0;
  std::uint64_t unscale = 0;
  std::uint64_t grad_norm = 0;
  std::uint64_t adam = 0;
  std::uint64_t copy_main_params = 0;
  std::uint64_t zero_grad_buffer = 0;
  std::uint64_t total() const {
    return copy_main_grads + unscale + grad_norm + adam + copy_main_params + zero_grad_buffer;
  }
};
// `updated`: parameters this rank's optimizer updates; `local`: parameters in its
// gradient buffer.
MegatronStepBytes megatron_step_bytes(std::int64_t updated, std::int64_t local, int grad_bytes,
                                      int param_bytes, bool clip_grad, bool unscale);

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
  bool overlap_grad_reduce = true;    // reductions start as their buckets fill
  bool overlap_param_gather = false;  // distributed_optimizer: gathers via param_gather()
  // Megatron-LM's optimizer step (MegatronStepBytes) instead of one pass of
  // grad_bytes + optimizer_state_bytes per parameter.
  bool megatron_step = false;
  bool clip_grad = false;      // megatron_step: --clip-grad > 0
  bool unscale_grads = false;  // megatron_step: fp16 loss scaling
};

// Slots of param_gather(): layers use their index; these name the blocks outside them.
inline constexpr int kNoGatherSlot = -1;
inline constexpr int kEmbeddingGatherSlot = -2;
inline constexpr int kHeadGatherSlot = -3;

class GradientBuckets {
 public:
  // `slot`: the param_gather() slot whose all-gather brings this tensor's updated values
  // back (kNoGatherSlot: gathered after the optimizer).
  void add(std::string name, std::int64_t params, OpVertex producer, bool expert,
           int slot = kNoGatherSlot);
  // Overlapped parameter all-gather of `slot`'s tensors of one family (dense or expert)
  // over `group`, on the DataComm stream after `after`. Its bytes are filled in by emit()
  // once the tensors are registered. Returns the all-gather.
  OpVertex param_gather(RankBuilder& builder, int slot, bool expert, int group, OpVertex after,
                        std::string name, int layer);
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
    int slot;
  };
  struct Gather {
    int slot;
    bool expert;
    OpVertex op;
  };
  std::vector<Tensor> tensors_;
  std::vector<Gather> gathers_;
  std::int64_t tied_params_ = 0;
  OpVertex tied_producer_ = kNoOp;
};

}  // namespace overlapsim::workloads
