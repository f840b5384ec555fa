#pragma once
// Writes an epoch into a peer GPU's flag in stream order, after the copies enqueued before
// it: what the copy-engine designs (copy_engine_design, allgather_gemm) signal a peer with.
// C++17.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/common/status.hpp"
#include "kernels/harness/device_buffer.hpp"

namespace overlapsim::kernels::tilewise {

// A stream memory write to peer memory where the driver allows it; where it refuses one,
// from then on the epoch is written locally and the copy engine carries those 4 bytes
// (stream order keeps them after the data).
class PeerFlagWriter {
 public:
  Status initialize();  // allocates the local copy of the epoch (synchronous)
  Status write(std::uint32_t* peer_flag, std::uint32_t epoch, cudaStream_t stream);

 private:
  DeviceBuffer source_;   // the epoch, when flags travel by copy
  bool by_copy_ = false;  // the driver refused a stream write to peer memory
};

}  // namespace overlapsim::kernels::tilewise
