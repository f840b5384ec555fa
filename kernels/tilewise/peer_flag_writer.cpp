#include "kernels/tilewise/peer_flag_writer.hpp"

#include <cuda_runtime.h>

#include "kernels/tilewise/design_support.hpp"
#include "kernels/tilewise/signal_wait.hpp"

namespace overlapsim::kernels::tilewise {

Status PeerFlagWriter::initialize() { return zeroed(source_, sizeof(std::uint32_t)); }

Status PeerFlagWriter::write(std::uint32_t* peer_flag, std::uint32_t epoch, cudaStream_t stream) {
  if (!by_copy_) {
    const Status direct = enqueue_write_value(peer_flag, epoch, stream);
    if (direct.ok) return direct;
    by_copy_ = true;
  }
  OVERLAPSIM_TRY(enqueue_write_value(source_.as<std::uint32_t>(), epoch, stream));
  CUDA_CHECK(cudaMemcpyAsync(peer_flag, source_.data(), sizeof(std::uint32_t),
                             cudaMemcpyDeviceToDevice, stream));
  return Status::success();
}

}  // namespace overlapsim::kernels::tilewise
