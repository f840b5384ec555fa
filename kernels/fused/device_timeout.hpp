#pragma once
// The fused kernels' device-side waits for their peers give up after a timeout and raise a
// flag in device memory instead of hanging; the host reads that flag once a stream's calls
// are done (each kernel's check_timeout).
#include <cuda_runtime.h>

#include <string>

#include "kernels/common/status.hpp"
#include "kernels/harness/device_buffer.hpp"

namespace overlapsim::kernels::fused {

// Synchronises `stream`, then fails with "<kernel>: rank <rank> gave up waiting for
// <waited_for> after <timeout_s> s" when the int at `flag` is non-zero.
Status read_timeout_flag(const DeviceBuffer& flag, cudaStream_t stream, const std::string& kernel,
                         int rank, const std::string& waited_for, double timeout_s);

}  // namespace overlapsim::kernels::fused
