#include "kernels/designs/sequential.hpp"

namespace overlapsim::kernels {

Status run_sequential(const PairKernels& pair, const PairBuffers& buffers, cudaStream_t stream) {
  if (collective_first(pair.op())) {
    OVERLAPSIM_TRY(pair.enqueue_collective(buffers, 1, 0, stream));
    return pair.enqueue_op(buffers, 1, 0, stream);
  }
  OVERLAPSIM_TRY(pair.enqueue_op(buffers, 1, 0, stream));
  return pair.enqueue_collective(buffers, 1, 0, stream);
}

}  // namespace overlapsim::kernels
