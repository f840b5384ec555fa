#pragma once
// What both tile-wise transports (tilewise_design.cpp: NCCL, copy_engine_design.cpp: copy
// engines) and the one-GPU owner rehearsal do the same way when they set up: upload a
// plan's tables to the device and describe the owner GEMM's epilogue and order. Internal
// to kernels/tilewise. C++17.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "kernels/common/status.hpp"
#include "kernels/gemm/own_gemm.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/dtype.hpp"
#include "kernels/tilewise/copy_engine_layout.hpp"

namespace overlapsim::kernels::tilewise {

// Both transports move bf16 partials and results.
inline constexpr std::size_t kElementBytes = 2;

// The current device's SM count (what a persistent GEMM's grid is sized by).
inline Status current_device_sms(int* sms) {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, device));
  return Status::success();
}

// Allocates `buffer` for `values` and copies them in (synchronous).
template <class T>
Status upload(DeviceBuffer& buffer, const std::vector<T>& values) {
  OVERLAPSIM_TRY(buffer.allocate(values.size() * sizeof(T)));
  if (!values.empty())
    CUDA_CHECK(cudaMemcpy(buffer.data(), values.data(), values.size() * sizeof(T),
                          cudaMemcpyHostToDevice));
  return Status::success();
}

// Allocates `bytes` and sets them to zero (synchronous).
inline Status zeroed(DeviceBuffer& buffer, std::size_t bytes) {
  OVERLAPSIM_TRY(buffer.allocate(bytes));
  if (bytes > 0) CUDA_CHECK(cudaMemset(buffer.data(), 0, bytes));
  return Status::success();
}

// The owner epilogue's arguments that come from the plan and its device tables (copies of
// plan.tile_offset_elems, the group counters, plan.tile_group, plan.tile_arrival and the
// arrival flags), as the copy-engine design and the one-GPU rehearsal both set them; the
// caller sets recv, own_out, world, rank, reduce and the waits.
inline gemm::EpilogueArgs owner_epilogue_args(
    const CopyEngineLayout& plan, const DeviceBuffer& offsets, const DeviceBuffer& counters,
    const DeviceBuffer& groups, const DeviceBuffer& arrival, const DeviceBuffer& arrived) {
  gemm::EpilogueArgs e;
  e.tile_offset_elems = offsets.as<std::int64_t>();
  e.group_counters = counters.as<std::uint32_t>();
  e.tile_group = groups.as<std::int32_t>();
  e.tile_arrival = arrival.as<std::int32_t>();
  e.arrived = arrived.as<std::uint32_t>();
  e.own_groups = plan.groups_per_part;
  e.part_elems = plan.part_elems;
  e.own_begin_elems = plan.own_begin_elems;
  return e;
}

// The owner GEMM's rank-rotated order for `rank` of `world` on the plan's CTAs.
inline gemm::SchedulerOptions owner_scheduler(const CopyEngineLayout& plan, int world, int rank) {
  gemm::SchedulerOptions sched;
  sched.num_ctas = plan.num_ctas;
  sched.group_m = plan.group_m;
  sched.rotate_world = world;
  sched.rotate_rank = rank;
  sched.rotate_slabs = plan.slabs;
  sched.skew_slabs = plan.slab_skew;
  return sched;
}

}  // namespace overlapsim::kernels::tilewise
