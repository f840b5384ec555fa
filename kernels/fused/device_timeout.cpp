#include "kernels/fused/device_timeout.hpp"

namespace overlapsim::kernels::fused {

Status read_timeout_flag(const DeviceBuffer& flag, cudaStream_t stream, const std::string& kernel,
                         int rank, const std::string& waited_for, double timeout_s) {
  CUDA_CHECK(cudaStreamSynchronize(stream));
  int raised = 0;
  CUDA_CHECK(cudaMemcpy(&raised, flag.data(), sizeof raised, cudaMemcpyDeviceToHost));
  if (raised != 0)
    return Status::failure(kernel + ": rank " + std::to_string(rank) + " gave up waiting for " +
                           waited_for + " after " + std::to_string(timeout_s) + " s");
  return Status::success();
}

}  // namespace overlapsim::kernels::fused
