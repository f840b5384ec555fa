#pragma once
// A checker for the epilogue's completion signals: a one-block kernel, launched on another
// stream before the GEMM, that waits for each group's counter in turn and, the moment it
// reaches the group's tile count, reads the group's whole region and counts elements
// still holding the poison pattern. A signal that ran ahead of its data shows up as
// violations > 0. C++17; the only CUDA type is cudaStream_t.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/common/status.hpp"

namespace overlapsim::kernels::gemm {

struct SignalProbeArgs {
  const uint32_t* group_counters = nullptr;  // device [groups]
  const int32_t* group_tiles = nullptr;      // device [groups]: count that completes group g
  const int64_t* region_begin = nullptr;     // device [groups]: first element of group g
  const int64_t* region_end = nullptr;       // device [groups]: one past its last element
  int32_t groups = 0;
  const uint16_t* data = nullptr;  // device, the GEMM's output (2-byte elements)
  uint16_t poison = 0xFFFF;
  // device [3]: violations, groups found incomplete on first look (the probe really
  // waited), groups abandoned after the timeout.
  int32_t* result = nullptr;
  double timeout_s = 10.0;
};

// Loads the probe's module up front (lazy loading would deadlock a cross-stream wait).
Status preload_signal_probe();
Status launch_signal_probe(const SignalProbeArgs& args, cudaStream_t stream);

}  // namespace overlapsim::kernels::gemm
