#pragma once
// Design `decomposed` (kernel-granular decomposition, Megatron/TransformerEngine style):
// the op split into k chunks (pair_op.hpp says how), chunk i's collective on the
// high-priority communication stream as soon as chunk i is done, ordered by events. For
// allgather+gemm the roles swap: chunk i's GEMM waits for chunk i's gather. The whole
// run is bracketed by a fork and a join event, so it composes on the compute stream
// like a single kernel. C++17.
#include <cuda_runtime.h>

#include <vector>

#include "kernels/designs/pair_kernels.hpp"

namespace overlapsim::kernels {

class DecomposedDesign {
 public:
  DecomposedDesign() = default;
  ~DecomposedDesign();
  DecomposedDesign(const DecomposedDesign&) = delete;
  DecomposedDesign& operator=(const DecomposedDesign&) = delete;

  // Creates the events for up to `max_chunks` chunks on the current device.
  Status initialize(int max_chunks);
  // Needs pair.prepare(chunks).
  Status run(const PairKernels& pair, const PairBuffers& buffers, int chunks,
             cudaStream_t compute_stream, cudaStream_t comm_stream);

 private:
  void destroy();
  std::vector<cudaEvent_t> chunk_done_;
  cudaEvent_t fork_ = nullptr;
  cudaEvent_t join_ = nullptr;
};

}  // namespace overlapsim::kernels
