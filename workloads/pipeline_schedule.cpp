#include "workloads/pipeline_schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace overlapsim::workloads {

const char* to_string(PipeAction a) {
  switch (a) {
    case PipeAction::Forward:
      return "F";
    case PipeAction::Backward:
      return "B";
    case PipeAction::RecvForward:
      return "recv_fwd";
    case PipeAction::SendForward:
      return "send_fwd";
    case PipeAction::RecvBackward:
      return "recv_bwd";
    case PipeAction::SendBackward:
      return "send_bwd";
  }
  return "?";
}

std::vector<PipeStep> one_f_one_b(int stages, int microbatches, int stage) {
  if (stages < 1 || microbatches < 1 || stage < 0 || stage >= stages)
    throw std::invalid_argument("one_f_one_b: needs stages >= 1, microbatches >= 1, 0 <= stage");
  const bool first = stage == 0;
  const bool last = stage == stages - 1;
  const int warmup = std::min(stages - stage - 1, microbatches);
  const int steady = microbatches - warmup;
  std::vector<PipeStep> out;
  auto push = [&](PipeAction a, int mb) { out.push_back({a, mb}); };

  for (int i = 0; i < warmup; ++i) {
    if (!first) push(PipeAction::RecvForward, i);
    push(PipeAction::Forward, i);
    if (!last) push(PipeAction::SendForward, i);
  }
  if (steady > 0 && !first) push(PipeAction::RecvForward, warmup);
  for (int j = 0; j < steady; ++j) {
    push(PipeAction::Forward, warmup + j);
    if (!last) {  // send_forward_recv_backward with stage + 1
      push(PipeAction::RecvBackward, j);
      push(PipeAction::SendForward, warmup + j);
    }
    push(PipeAction::Backward, j);
    if (!first) {  // send_backward_recv_forward with stage - 1
      push(PipeAction::SendBackward, j);
      if (j + 1 < steady) push(PipeAction::RecvForward, warmup + j + 1);
    }
  }
  for (int j = steady; j < microbatches; ++j) {
    if (!last) push(PipeAction::RecvBackward, j);
    push(PipeAction::Backward, j);
    if (!first) push(PipeAction::SendBackward, j);
  }
  return out;
}

std::vector<ChunkPass> interleaved_order(int stages, int chunks, int microbatches, int stage,
                                         int extra_warmup) {
  if (stages < 1 || chunks < 1 || microbatches < 1 || stage < 0 || stage >= stages ||
      microbatches % stages != 0)
    throw std::invalid_argument(
        "interleaved_order: needs stages, chunks, microbatches >= 1, microbatches % stages == 0");
  const int total = microbatches * chunks;
  const int group = stages * chunks;
  int warmup = (stages - stage - 1) * 2 + (chunks - 1) * stages + extra_warmup;
  if (microbatches == stages || warmup > total) warmup = total;
  auto pass = [&](int k, bool forward) {
    int c = (k / stages) % chunks;
    if (!forward) c = chunks - 1 - c;
    return ChunkPass{forward, c, (k / group) * stages + k % stages};
  };
  std::vector<ChunkPass> out;
  for (int k = 0; k < warmup; ++k) out.push_back(pass(k, true));
  const int steady = total - warmup;
  for (int k = 0; k < steady; ++k) {
    out.push_back(pass(warmup + k, true));
    out.push_back(pass(k, false));
  }
  for (int k = steady; k < total; ++k) out.push_back(pass(k, false));
  return out;
}

}  // namespace overlapsim::workloads
