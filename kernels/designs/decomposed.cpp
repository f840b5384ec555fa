#include "kernels/designs/decomposed.hpp"

#include <string>

namespace overlapsim::kernels {

DecomposedDesign::~DecomposedDesign() { destroy(); }

void DecomposedDesign::destroy() {
  for (cudaEvent_t e : chunk_done_) cudaEventDestroy(e);
  chunk_done_.clear();
  if (fork_) cudaEventDestroy(fork_);
  if (join_) cudaEventDestroy(join_);
  fork_ = join_ = nullptr;
}

Status DecomposedDesign::initialize(int max_chunks) {
  destroy();
  if (max_chunks < 1) return Status::failure("decomposed: max_chunks must be >= 1");
  CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming));
  chunk_done_.resize(static_cast<std::size_t>(max_chunks), nullptr);
  for (cudaEvent_t& e : chunk_done_)
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return Status::success();
}

Status DecomposedDesign::run(const PairKernels& pair, const PairBuffers& buffers, int chunks,
                             cudaStream_t compute_stream, cudaStream_t comm_stream) {
  if (chunks < 1 || static_cast<std::size_t>(chunks) > chunk_done_.size())
    return Status::failure("decomposed: " + std::to_string(chunks) + " chunks, initialized for " +
                           std::to_string(chunk_done_.size()));
  CUDA_CHECK(cudaEventRecord(fork_, compute_stream));
  CUDA_CHECK(cudaStreamWaitEvent(comm_stream, fork_, 0));
  const bool gather_first = collective_first(pair.op());
  cudaStream_t producer = gather_first ? comm_stream : compute_stream;
  cudaStream_t consumer = gather_first ? compute_stream : comm_stream;
  for (int c = 0; c < chunks; ++c) {
    if (gather_first)
      OVERLAPSIM_TRY(pair.enqueue_collective(buffers, chunks, c, producer));
    else
      OVERLAPSIM_TRY(pair.enqueue_op(buffers, chunks, c, producer));
    CUDA_CHECK(cudaEventRecord(chunk_done_[c], producer));
    CUDA_CHECK(cudaStreamWaitEvent(consumer, chunk_done_[c], 0));
    if (gather_first)
      OVERLAPSIM_TRY(pair.enqueue_op(buffers, chunks, c, consumer));
    else
      OVERLAPSIM_TRY(pair.enqueue_collective(buffers, chunks, c, consumer));
  }
  CUDA_CHECK(cudaEventRecord(join_, comm_stream));
  CUDA_CHECK(cudaStreamWaitEvent(compute_stream, join_, 0));
  return Status::success();
}

}  // namespace overlapsim::kernels
