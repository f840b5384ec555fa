// The fused embedding-bag + all-to-all kernel (design: docs/kernels/embedding_alltoall.md).
// One grid over every table this rank owns; a warp takes one bag (or, for bags shorter
// than its lane groups' loads, one bag per lane group) and sums its rows exactly as our
// embedding-bag kernel does (kernels/ops/embedding_bag.cu, vectorised path: the same lane
// groups, the same batches of indices, the same order of fp32 adds), so the pooled rows
// are bit-identical to it (the row loads a group keeps in flight, KernelArgs::row_loads,
// and the next batch of indices loaded while the current batch's rows are, change when
// loads issue, not what is added in which order). The difference is where a row goes: with push,
// straight into the destination rank's receive buffer over NVLink (bag b belongs to rank b / B).
// After its last bag a CTA passes a barrier, one thread issues a system-scope release fence
// (cumulative over the barrier) and adds 1 to this rank's counter on every rank. CTA 0,
// after its own bags, waits until every source's counter reaches the calls' grids summed: the call
// ends when this rank's receive buffer is complete. No CTA waits before its pushes are
// out, so progress needs only CTA 0 of each rank resident, whatever the grid. A warp walks
// the rank's tables slot by slot, taking every (grid x 8)-th task of the concatenated list.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl_device.h>

#include <algorithm>
#include <string>

#include "kernels/common/global_timer.cuh"
#include "kernels/fused/embedding_alltoall_kernel.hpp"
#include "kernels/fused/system_scope.cuh"
#include "kernels/ops/half_float.cuh"

namespace overlapsim::kernels::fused::embedding_a2a {
namespace {

constexpr int kWarps = kThreads / 32;
constexpr int kVec = 8;     // elements per 16-byte load
constexpr int kUnroll = 4;  // row loads per lane group per round (as embedding_bag.cu)

// Lane groups per warp for a row of `dim` elements, as embedding_bag.cu chooses them.
int groups_for(std::int64_t dim) {
  const std::int64_t pieces = dim / kVec;
  return pieces <= 8 ? 4 : pieces <= 16 ? 2 : 1;
}

// Whether a table's bags go one per lane group (short bags), as embedding_bag.cu decides.
bool bag_per_group(int groups, std::int64_t pooling) {
  return groups > 1 && pooling < groups * kUnroll;
}

template <typename T>
__device__ __forceinline__ T* recv_of(const KernelArgs& a, int r) {
  if (a.window != nullptr) return static_cast<T*>(ncclGetPeerPointer(a.window, 0, r));
  return static_cast<T*>(a.recv[r]);
}

__device__ __forceinline__ std::uint32_t* counters_of(const KernelArgs& a, int r) {
  if (a.window != nullptr)
    return static_cast<std::uint32_t*>(ncclGetPeerPointer(a.window, a.counters_offset_bytes, r));
  return a.counters[r];
}

// Where bag `bag` of slot s, columns col .. col + 7, goes.
template <typename T>
__device__ __forceinline__ T* destination(const KernelArgs& a, int s, std::int64_t bag,
                                          std::int64_t col) {
  if (!a.push) return static_cast<T*>(a.out) + (s * a.local_batch * a.world + bag) * a.dim + col;
  const int dst = static_cast<int>(bag / a.local_batch);
  const std::int64_t parity = a.epoch & 1u;
  const std::int64_t row =
      (parity * a.tables_total + a.table_id[s]) * a.local_batch + bag % a.local_batch;
  return recv_of<T>(a, dst) + row * a.dim + col;
}

// One warp task: bag `task` of slot s, or with kBagPerGroup bags kGroups * task + group.
// The loads and adds follow embedding_bag_vector_kernel step for step, with kLoads row
// loads a group issues before adding (that kernel's kUnroll, 4) and the next batch of
// indices loaded while the current batch's rows are: neither changes what is added in
// which order.
template <typename T, int kGroups, bool kBagPerGroup, int kLoads>
__device__ __forceinline__ void pool_task(const KernelArgs& a, int s, int task) {
  constexpr int kGroupLanes = 32 / kGroups;
  constexpr int kBatch = kBagPerGroup ? kGroupLanes : 32;
  constexpr int kStep = kBagPerGroup ? 1 : kGroups;
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = threadIdx.x % 32;
  const int group = lane / kGroupLanes;
  const int group_lane = lane % kGroupLanes;
  const int batch_lane = kBagPerGroup ? group_lane : lane;
  const int offset = kBagPerGroup ? 0 : group;
  // 32-bit bag and column arithmetic (can_launch bounds bags and dim): fewer registers
  // under the 64 that 4 CTAs an SM allow (ptxas: 12 bytes spilled at 4 row loads, none at
  // 8 with 80 registers; the old 64-bit form spilled 64).
  const int bags = static_cast<int>(a.local_batch) * a.world;
  const int item = kBagPerGroup ? task * kGroups + group : task;
  const bool valid = item < bags;
  const int bag = valid ? item : 0;
  const T* table = static_cast<const T*>(a.tables[s]);
  const int dim = static_cast<int>(a.dim);
  const int pooling = a.pooling[s];
  const std::int32_t* bag_indices = a.indices[s] + static_cast<std::int64_t>(bag) * pooling;
  for (int col0 = 0; col0 < dim; col0 += kGroupLanes * kVec) {
    const int col = col0 + group_lane * kVec;
    const bool active = valid && col < dim;
    const T* column = table + col;
    float acc[kVec];
#pragma unroll
    for (int v = 0; v < kVec; ++v) acc[v] = 0.0f;
    std::int32_t next = valid && batch_lane < (pooling < kBatch ? pooling : kBatch)
                            ? __ldg(bag_indices + batch_lane)
                            : 0;
    for (int base = 0; base < pooling; base += kBatch) {
      const int n = pooling - base < kBatch ? pooling - base : kBatch;
      const std::int32_t mine = next;
      if (base + kBatch < pooling) {
        const int later = pooling - base - kBatch;
        next = valid && batch_lane < (later < kBatch ? later : kBatch)
                   ? __ldg(bag_indices + base + kBatch + batch_lane)
                   : 0;
      }
      for (int first = 0; first < n; first += kStep * kLoads) {
        uint4 packed[kLoads];
#pragma unroll
        for (int u = 0; u < kLoads; ++u) {
          const int j = first + u * kStep + offset;
          const std::int32_t row = __shfl_sync(kAll, mine, j & (kBatch - 1), kBatch);
          packed[u] = make_uint4(0, 0, 0, 0);
          if (j < n && active)
            packed[u] = __ldg(
                reinterpret_cast<const uint4*>(column + static_cast<std::int64_t>(row) * dim));
        }
#pragma unroll
        for (int u = 0; u < kLoads; ++u) {
          const T* values = reinterpret_cast<const T*>(&packed[u]);
#pragma unroll
          for (int v = 0; v < kVec; ++v) acc[v] += to_float(values[v]);
        }
      }
    }
    if constexpr (!kBagPerGroup) {
#pragma unroll
      for (int stride = kGroupLanes; stride < 32; stride *= 2)
#pragma unroll
        for (int v = 0; v < kVec; ++v) acc[v] += __shfl_xor_sync(kAll, acc[v], stride);
    }
    if (active && (kBagPerGroup || group == 0)) {
      uint4 result;
      T* values = reinterpret_cast<T*>(&result);
#pragma unroll
      for (int v = 0; v < kVec; ++v) values[v] = from_float<T>(acc[v]);
      *reinterpret_cast<uint4*>(destination<T>(a, s, bag, col)) = result;
    }
  }
}

// Tasks of slot s for this kernel's lane groups, and where each slot's tasks start.
template <int kGroups>
__device__ __forceinline__ int slot_tasks(const KernelArgs& a, int s) {
  const int bags = static_cast<int>(a.local_batch) * a.world;
  const bool per_group = kGroups > 1 && a.pooling[s] < kGroups * kUnroll;
  return per_group ? (bags + kGroups - 1) / kGroups : bags;
}

// Blocks an SM the launch bounds hold each depth to (no spills at 64 and 80 registers).
template <int kLoads>
constexpr int blocks_per_sm() {
  return kLoads > kUnroll ? 3 : 4;
}

template <typename T, int kGroups, int kLoads>
__global__ void __launch_bounds__(kThreads, blocks_per_sm<kLoads>())
    embedding_alltoall_kernel(const KernelArgs a) {
  const int warps = static_cast<int>(gridDim.x) * kWarps;
  const int warp = static_cast<int>(blockIdx.x) * kWarps + static_cast<int>(threadIdx.x) / 32;
  // Tasks are numbered slot after slot; the warp takes those congruent to it mod warps,
  // slot by slot (one branch per slot, no slot search per task). can_launch keeps every
  // slot's and the sum's task numbers in int.
  int slot_first = 0;
  for (int s = 0; s < a.slots; ++s) {
    const int count = slot_tasks<kGroups>(a, s);
    const int r = (warp - slot_first) % warps;
    const int start = r < 0 ? r + warps : r;  // this warp's first task in the slot
    if (kGroups > 1 && a.pooling[s] < kGroups * kUnroll) {
      for (int t = start; t < count; t += warps)
        pool_task<T, kGroups, kGroups != 1, kUnroll>(a, s, t);
    } else {
      for (int t = start; t < count; t += warps) pool_task<T, kGroups, false, kLoads>(a, s, t);
    }
    slot_first += count;
  }
  if (!a.push) return;
  __syncthreads();
  if (threadIdx.x == 0) {
    fence_release_sys();
    for (int d = 1; d <= a.world; ++d) {
      const int dst = (a.rank + d) % a.world;
      add_relaxed_sys(counters_of(a, dst) + a.rank, 1u);
    }
  }
  if (blockIdx.x != 0 || static_cast<int>(threadIdx.x) >= a.world) return;
  // Thread src of CTA 0 waits for source src's CTAs: counters only grow (wrapping), so a
  // count at or past `expected` has arrived; a source may already be a call ahead.
  const int src = static_cast<int>(threadIdx.x);
  const std::uint32_t* counter = counters_of(a, a.rank) + src;
  const std::uint32_t expected = a.expected;
  const std::uint64_t deadline = global_timer_ns() + a.timeout_ns;
  unsigned sleep_ns = 0;
  while (static_cast<std::int32_t>(acquire_sys(counter) - expected) < 0) {
    if (global_timer_ns() > deadline) {
      atomicExch(a.timed_out, 1);
      return;
    }
    if (sleep_ns > 0) __nanosleep(sleep_ns);
    sleep_ns = sleep_ns == 0 ? 32 : (sleep_ns < 512 ? 2 * sleep_ns : sleep_ns);
  }
}

template <typename T, int kGroups, int kLoads>
Status max_resident(int* ctas) {
  int device = 0, sms = 0, per_sm = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, embedding_alltoall_kernel<T, kGroups, kLoads>, kThreads, 0));
  *ctas = sms * per_sm;
  return Status::success();
}

template <typename T, int kLoads>
Status max_resident_for(std::int64_t dim, int* ctas) {
  switch (groups_for(dim)) {
    case 4:
      return max_resident<T, 4, kLoads>(ctas);
    case 2:
      return max_resident<T, 2, kLoads>(ctas);
    default:
      return max_resident<T, 1, kLoads>(ctas);
  }
}

template <typename T, int kLoads>
void launch_groups(const KernelArgs& a, int grid, cudaStream_t stream) {
  switch (groups_for(a.dim)) {
    case 4:
      embedding_alltoall_kernel<T, 4, kLoads><<<grid, kThreads, 0, stream>>>(a);
      break;
    case 2:
      embedding_alltoall_kernel<T, 2, kLoads><<<grid, kThreads, 0, stream>>>(a);
      break;
    default:
      embedding_alltoall_kernel<T, 1, kLoads><<<grid, kThreads, 0, stream>>>(a);
      break;
  }
}

template <typename T>
Status launch_typed(const KernelArgs& a, int grid, cudaStream_t stream) {
  if (a.row_loads == 2 * kUnroll)
    launch_groups<T, 2 * kUnroll>(a, grid, stream);
  else
    launch_groups<T, kUnroll>(a, grid, stream);
  CUDA_CHECK(cudaGetLastError());
  return Status::success();
}

template <typename T, int kGroups>
Status load() {
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, embedding_alltoall_kernel<T, kGroups, kUnroll>));
  CUDA_CHECK(
      cudaFuncGetAttributes(&attributes, embedding_alltoall_kernel<T, kGroups, 2 * kUnroll>));
  return Status::success();
}

}  // namespace

Status can_launch(std::int64_t dim, DType dtype) {
  if (dtype != DType::BF16 && dtype != DType::FP16)
    return Status::failure("fused embedding+alltoall: bf16 or fp16 tables only");
  if (dim < kVec || dim % kVec != 0)
    return Status::failure("fused embedding+alltoall: dim must be a multiple of 8, got " +
                           std::to_string(dim));
  return Status::success();
}

Status launch_grid(const KernelArgs& a, DType dtype, int* grid) {
  OVERLAPSIM_TRY(can_launch(a.dim, dtype));
  const int groups = groups_for(a.dim);
  const std::int64_t bags = a.local_batch * a.world;
  std::int64_t tasks = 0;
  for (int s = 0; s < a.slots; ++s)
    tasks += bag_per_group(groups, a.pooling[s]) ? (bags + groups - 1) / groups : bags;
  int resident = 0;
  const bool deep = a.row_loads == 2 * kUnroll;
  OVERLAPSIM_TRY(dtype == DType::BF16
                     ? (deep ? max_resident_for<__nv_bfloat16, 2 * kUnroll>(a.dim, &resident)
                             : max_resident_for<__nv_bfloat16, kUnroll>(a.dim, &resident))
                     : (deep ? max_resident_for<__half, 2 * kUnroll>(a.dim, &resident)
                             : max_resident_for<__half, kUnroll>(a.dim, &resident)));
  *grid = static_cast<int>(
      std::max<std::int64_t>(1, std::min<std::int64_t>((tasks + kWarps - 1) / kWarps, resident)));
  return Status::success();
}

Status launch(const KernelArgs& a, DType dtype, int grid, cudaStream_t stream) {
  OVERLAPSIM_TRY(can_launch(a.dim, dtype));
  if (a.slots < 0 || a.slots > kMaxSlots || a.world < 1 || a.world > kMaxWorld || grid < 1 ||
      a.local_batch < 1 || (a.row_loads != kUnroll && a.row_loads != 2 * kUnroll) ||
      (a.push && (a.epoch == 0 || a.timed_out == nullptr)) || (!a.push && a.out == nullptr))
    return Status::failure("fused embedding+alltoall: bad launch (slots " +
                           std::to_string(a.slots) + ", world " + std::to_string(a.world) +
                           ", grid " + std::to_string(grid) + ")");
  return dtype == DType::BF16 ? launch_typed<__nv_bfloat16>(a, grid, stream)
                              : launch_typed<__half>(a, grid, stream);
}

Status preload() {
  OVERLAPSIM_TRY((load<__nv_bfloat16, 1>()));
  OVERLAPSIM_TRY((load<__nv_bfloat16, 2>()));
  OVERLAPSIM_TRY((load<__nv_bfloat16, 4>()));
  OVERLAPSIM_TRY((load<__half, 1>()));
  OVERLAPSIM_TRY((load<__half, 2>()));
  OVERLAPSIM_TRY((load<__half, 4>()));
  return Status::success();
}

}  // namespace overlapsim::kernels::fused::embedding_a2a
