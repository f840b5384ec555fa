#pragma once
// The order in which one pipeline stage runs its forward and backward passes and its
// point-to-point transfers: Megatron-LM's non-interleaved 1F1B schedule (Narayanan et
// al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters", fig. 4).
// Stage s runs min(p-s-1, m) warm-up forwards, then alternates one forward and one
// backward, then drains the remaining backwards.
//
// Megatron pairs a send and a receive with the same neighbour into one batched call
// (send_forward_recv_backward, send_backward_recv_forward). Here the two halves of such
// an exchange are separate ops, ordered backward-direction first on both sides, so that
// the k-th transfer on each link is the same on its two ends and a rendezvous
// (NCCL-style) send/receive never waits on a transfer queued behind it.
#include <vector>

namespace overlapsim::workloads {

enum class PipeAction { Forward, Backward, RecvForward, SendForward, RecvBackward, SendBackward };
const char* to_string(PipeAction a);

struct PipeStep {
  PipeAction action;
  int microbatch;
};

// Steps of stage `stage` of `stages` with `microbatches` microbatches. Sends/receives
// towards a missing neighbour (first/last stage) are left out.
std::vector<PipeStep> one_f_one_b(int stages, int microbatches, int stage);

}  // namespace overlapsim::workloads
