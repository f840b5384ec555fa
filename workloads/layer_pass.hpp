#pragma once
// One layer's forward or backward pass as a coroutine that stops at the boundaries between
// its parts, so that a scheduler can emit two passes' parts in an interleaved order:
// Megatron-Core's EP communication overlap (overlap_moe_expert_parallel_comm) runs one
// microbatch's forward beside the previous one's backward, layer by layer, each pass's token
// exchange on the communication stream while the other pass computes
// (megatron/core/models/common/model_chunk_schedule_plan.py, TransformerLayerSchedulePlan.run).
// Run straight through, a pass emits its ops in the order it always did.

#include <coroutine>
#include <cstdint>
#include <exception>
#include <utility>

namespace overlapsim::workloads {

// The part a pass is about to emit, named as Megatron-Core's schedule nodes. A pass starts
// in its first part (forward: the pre-dispatch computation, attention to permutation;
// backward: the combine's backward) and yields each later part in this order.
enum class LayerStage : std::uint8_t {
  Dispatch,        // forward: the token dispatch
  Experts,         // forward: the experts
  Combine,         // forward: the token combine
  PostCombine,     // forward: unpermutation and the residual
  ExpertsBwd,      // backward: the experts' backward (data gradients)
  DispatchBwd,     // backward: the dispatch's backward exchange
  ExpertsDw,       // backward: the experts' weight gradients left after it
  PreDispatchBwd,  // backward: permutation, router, norm and attention backward
};

class LayerPass {
 public:
  struct promise_type {
    LayerStage stage = LayerStage::Dispatch;
    std::exception_ptr error;
    LayerPass get_return_object() {
      return LayerPass(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    std::suspend_always yield_value(LayerStage s) noexcept {
      stage = s;
      return {};
    }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { error = std::current_exception(); }
  };

  LayerPass(LayerPass&& o) noexcept : h_(std::exchange(o.h_, {})), yielded_(o.yielded_) {}
  LayerPass(const LayerPass&) = delete;
  LayerPass& operator=(const LayerPass&) = delete;
  LayerPass& operator=(LayerPass&&) = delete;
  ~LayerPass() {
    if (h_) h_.destroy();
  }

  // Emits the current part; false once the pass has ended.
  bool next() {
    if (h_.done()) return false;
    h_.resume();
    if (h_.promise().error) std::rethrow_exception(h_.promise().error);
    yielded_ = !h_.done();
    return yielded_;
  }
  // The part it emits next (valid while next() last returned true).
  LayerStage stage() const { return h_.promise().stage; }
  // Emits every part before `s`: on return the pass is about to emit `s`, or has ended (a
  // dense layer has no parts, and emits all of itself in its first).
  void run_to(LayerStage s) {
    while (!h_.done() && (!yielded_ || stage() < s)) next();
  }
  void finish() {
    while (next()) {
    }
  }

 private:
  explicit LayerPass(std::coroutine_handle<promise_type> h) : h_(h) {}
  std::coroutine_handle<promise_type> h_;
  bool yielded_ = false;
};

}  // namespace overlapsim::workloads
