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

// Interleaved 1F1B (Narayanan et al. 2021, sec. 2.2.2; Megatron-LM
// forward_backward_pipelining_with_interleaving): each stage holds `chunks` model chunks;
// chunk c of stage s is virtual stage c·stages + s. The order of forward and backward
// passes of one stage, as Megatron runs them: virtual microbatch k is microbatch
// (k div (stages·chunks))·stages + k mod stages of chunk (k div stages) mod chunks
// (backward: the chunks in reverse); warm-up of (stages - stage - 1)·2 + (chunks - 1)·stages
// forwards (all of them when microbatches == stages). Needs microbatches % stages == 0.
struct ChunkPass {
  bool forward;
  int chunk;
  int microbatch;
};
// `extra_warmup`: forwards run ahead of the first backward beyond Megatron's warm-up (1 with
// its EP overlap, which merges each steady-state forward with the backward after it).
std::vector<ChunkPass> interleaved_order(int stages, int chunks, int microbatches, int stage,
                                         int extra_warmup = 0);

}  // namespace overlapsim::workloads
