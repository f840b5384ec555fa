// Host side of the own GEMM: argument and device checks, tensor maps, padding workspace,
// launch. The kernel itself is in own_gemm_sm90.cuh.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "kernels/gemm/own_gemm.hpp"
#include "kernels/gemm/own_gemm_sm90.cuh"
#include "kernels/gemm/owner_epilogue.cuh"
#include "kernels/harness/free_queue.hpp"

namespace overlapsim::kernels::gemm {
namespace {

using sm90::KernelParams;
using sm90::OwnerEpilogue;
using sm90::StoreEpilogue;

// cuTensorMapEncodeTiled through the runtime's driver entry point, so the library does not
// link libcuda directly (CI has no driver).
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder(Status& status) {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  if (fn != nullptr) return fn;
  void* ptr = nullptr;
  cudaDriverEntryPointQueryResult query{};
  const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000,
                                                         cudaEnableDefault, &query);
  if (e != cudaSuccess || query != cudaDriverEntryPointSuccess || ptr == nullptr) {
    status = Status::failure(std::string(OVERLAPSIM_WHERE ": cuTensorMapEncodeTiled not found: ") +
                             cudaGetErrorString(e));
    return nullptr;
  }
  fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(ptr);
  return fn;
}

Status encode_k_major(CUtensorMap* map, DType dtype, const void* base, int64_t k_padded,
                      int64_t rows, uint32_t box_rows) {
  Status status;
  auto encode = tensor_map_encoder(status);
  if (encode == nullptr) return status;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k_padded), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(k_padded) * 2};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(GemmConfig::kTileK), box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = encode(
      map,
      dtype == DType::kBf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
      const_cast<void*>(base), dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return Status::failure(
        std::string(OVERLAPSIM_WHERE ": cuTensorMapEncodeTiled failed, CUresult ") +
        std::to_string(static_cast<int>(r)));
  return Status::success();
}

template <class T, class Epilogue, bool kDeferStores, int kClusterM, bool kSplit = false>
Status prepare_kernel() {
  auto kernel = sm90::own_gemm_kernel<T, Epilogue, kDeferStores, kClusterM, kSplit>;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  GemmConfig::kSharedBytes));
  // Touching the function loads its module now rather than at first launch, which lazy
  // loading would otherwise do while another stream may be spinning on our signals.
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, sm90::pad_k_kernel));
  return Status::success();
}

template <class T, class Epilogue, int kClusterM>
Status prepare_kernel(bool defer_stores) {
  return defer_stores ? prepare_kernel<T, Epilogue, true, kClusterM>()
                      : prepare_kernel<T, Epilogue, false, kClusterM>();
}

// The split tail's kernels (single CTAs only: effective_cluster_m is 1 with a split).
template <class T>
Status prepare_split_kernel(bool defer_stores, bool owner) {
  if (owner)
    return defer_stores ? prepare_kernel<T, OwnerEpilogue, true, 1, true>()
                        : prepare_kernel<T, OwnerEpilogue, false, 1, true>();
  return defer_stores ? prepare_kernel<T, StoreEpilogue, true, 1, true>()
                      : prepare_kernel<T, StoreEpilogue, false, 1, true>();
}

template <class T>
Status prepare_kernel(bool defer_stores, bool owner, int cluster_m) {
  if (cluster_m == 2)
    return owner ? prepare_kernel<T, OwnerEpilogue, 2>(defer_stores)
                 : prepare_kernel<T, StoreEpilogue, 2>(defer_stores);
  return owner ? prepare_kernel<T, OwnerEpilogue, 1>(defer_stores)
               : prepare_kernel<T, StoreEpilogue, 1>(defer_stores);
}

template <class T, class Epilogue, bool kDeferStores, int kClusterM, bool kSplit = false>
Status launch(const KernelParams<Epilogue>& params, int num_ctas, cudaStream_t stream) {
  auto kernel = sm90::own_gemm_kernel<T, Epilogue, kDeferStores, kClusterM, kSplit>;
  if constexpr (kClusterM == 1) {
    kernel<<<num_ctas, GemmConfig::kThreads, GemmConfig::kSharedBytes, stream>>>(params);
  } else {
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(static_cast<unsigned>(num_ctas), 1, 1);
    config.blockDim = dim3(GemmConfig::kThreads, 1, 1);
    config.dynamicSmemBytes = GemmConfig::kSharedBytes;
    config.stream = stream;
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = kClusterM;
    attribute[0].val.clusterDim.y = 1;
    attribute[0].val.clusterDim.z = 1;
    config.attrs = attribute;
    config.numAttrs = 1;
    CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, params));
  }
  CUDA_CHECK(cudaGetLastError());
  return Status::success();
}

template <class T, class Epilogue>
Status launch(const KernelParams<Epilogue>& params, bool defer_stores, int num_ctas,
              cudaStream_t stream) {
  if (params.split > 1)
    return defer_stores ? launch<T, Epilogue, true, 1, true>(params, num_ctas, stream)
                        : launch<T, Epilogue, false, 1, true>(params, num_ctas, stream);
  if (params.cluster_m == 2)
    return defer_stores ? launch<T, Epilogue, true, 2>(params, num_ctas, stream)
                        : launch<T, Epilogue, false, 2>(params, num_ctas, stream);
  return defer_stores ? launch<T, Epilogue, true, 1>(params, num_ctas, stream)
                      : launch<T, Epilogue, false, 1>(params, num_ctas, stream);
}

// How many clusters of `cluster_m` CTAs of this kernel fit on the GPU at once.
template <class T>
Status max_active_clusters(bool owner, int num_ctas, int* clusters) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(num_ctas), 1, 1);
  config.blockDim = dim3(GemmConfig::kThreads, 1, 1);
  config.dynamicSmemBytes = GemmConfig::kSharedBytes;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeClusterDimension;
  attribute[0].val.clusterDim.x = 2;
  attribute[0].val.clusterDim.y = 1;
  attribute[0].val.clusterDim.z = 1;
  config.attrs = attribute;
  config.numAttrs = 1;
  if (owner) {
    CUDA_CHECK(cudaOccupancyMaxActiveClusters(
        clusters, sm90::own_gemm_kernel<T, OwnerEpilogue, true, 2>, &config));
  } else {
    CUDA_CHECK(cudaOccupancyMaxActiveClusters(
        clusters, sm90::own_gemm_kernel<T, StoreEpilogue, true, 2>, &config));
  }
  return Status::success();
}

// The parts of the kernel parameters every epilogue shares.
template <class Epilogue>
void fill_common(KernelParams<Epilogue>& params, const CUtensorMap* maps, const GemmArgs& args,
                 int64_t k_padded, int32_t tiles_m, int32_t tiles_n,
                 const SchedulerOptions& sched) {
  params.map_a = maps[0];
  params.map_b = maps[1];
  params.m = static_cast<int32_t>(args.m);
  params.n = static_cast<int32_t>(args.n);
  params.k_blocks = static_cast<int32_t>((k_padded + GemmConfig::kTileK - 1) / GemmConfig::kTileK);
  params.tiles_m = tiles_m;
  params.tiles_n = tiles_n;
  params.group_m = sched.group_m;
  params.row_blocks = sched.row_blocks;
  params.row_shift = rotation_row_shift(args.m, sched);
  params.row_period = rotation_row_period(args.m, sched);
  params.skew_world = params.row_period > 0 && sched.skew_slabs ? sched.rotate_world : 0;
  params.cluster_m = effective_cluster_m(args.m, args.n, sched);
}

// The split tail's part of the kernel parameters (OwnGemm::initialize sized the workspace).
template <class Epilogue>
void fill_split(KernelParams<Epilogue>& params, int32_t split_first, int split_parts,
                void* workspace, size_t partial_bytes) {
  params.split = split_parts;
  params.split_first = split_first;
  if (split_parts <= 1) return;
  params.split_partials = static_cast<float4*>(workspace);
  params.split_counters =
      reinterpret_cast<uint32_t*>(static_cast<unsigned char*>(workspace) + partial_bytes);
  const int32_t tail = params.tiles_m * params.tiles_n - split_first;
  params.split_timed_out = reinterpret_cast<int*>(params.split_counters + 2 * tail);
  params.split_timeout_ns = 30'000'000'000ull;  // a part missing for 30 s is a bug
}

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

namespace sm90 {
__global__ void pad_k_kernel(const uint16_t* src, uint16_t* dst, int64_t rows, int64_t k,
                             int64_t k_padded) {
  const int64_t total = rows * k_padded;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / k_padded;
    const int64_t col = i - row * k_padded;
    dst[i] = col < k ? src[row * k + col] : uint16_t{0};
  }
}
}  // namespace sm90

Status OwnGemm::can_implement(const GemmArgs& args, const SchedulerOptions& sched) {
  if (args.m < 1 || args.n < 1 || args.k < 1)
    return Status::failure("own GEMM: m, n, k must be >= 1 (got m=" + std::to_string(args.m) +
                           ", n=" + std::to_string(args.n) + ", k=" + std::to_string(args.k) + ")");
  constexpr int64_t kMaxDim = (int64_t{1} << 31) - GemmConfig::kTileN;
  if (args.m > kMaxDim || args.n > kMaxDim || args.k > kMaxDim)
    return Status::failure("own GEMM: m, n, k must be < 2^31 - 256");
  if (ceil_div_i32(args.m, GemmConfig::kTileM) *
          static_cast<int64_t>(ceil_div_i32(args.n, GemmConfig::kTileN)) >=
      (int64_t{1} << 31))
    return Status::failure("own GEMM: more than 2^31 tiles");
  if (args.a == nullptr || args.b == nullptr || args.c == nullptr)
    return Status::failure("own GEMM: a, b and c must be device pointers, got a null pointer");
  if (sched.num_ctas < 0 || sched.group_m < 1)
    return Status::failure("own GEMM: num_ctas must be >= 0 and group_m >= 1");
  if (sched.store_steps != 1 && sched.store_steps != 2 && sched.store_steps != 4 &&
      sched.store_steps != 8)
    return Status::failure("own GEMM: store_steps must be 1, 2, 4 or 8 (got " +
                           std::to_string(sched.store_steps) + ")");
  if (sched.split_k_tail < 1 || sched.split_k_tail > 8)
    return Status::failure("own GEMM: split_k_tail must be 1 to 8 (got " +
                           std::to_string(sched.split_k_tail) + ")");
  if (sched.row_blocks < 1 || ceil_div_i32(args.m, GemmConfig::kTileM) % sched.row_blocks != 0)
    return Status::failure("own GEMM: row_blocks must be >= 1 and divide the " +
                           std::to_string(ceil_div_i32(args.m, GemmConfig::kTileM)) + " tile rows");
  if (sched.rotate_slabs < 1 || (sched.rotate_slabs > 1 && sched.rotate_world < 2))
    return Status::failure(
        "own GEMM: rotate_slabs must be >= 1, and above 1 only with a "
        "rank-rotated order (rotate_world > 1)");
  if (sched.rotate_world > 1) {
    const int32_t tiles_m = ceil_div_i32(args.m, GemmConfig::kTileM);
    const int32_t parts = sched.rotate_world * sched.rotate_slabs;
    const int32_t per_part = tiles_m / parts;
    if (sched.row_blocks != 1 || sched.rotate_rank < 0 || sched.rotate_rank >= sched.rotate_world ||
        tiles_m % parts != 0 || per_part % sched.group_m != 0)
      return Status::failure("own GEMM: a rank-rotated order needs row_blocks = 1, 0 <= rank < " +
                             std::to_string(sched.rotate_world) + ", the " +
                             std::to_string(tiles_m) + " tile rows divisible by the world x " +
                             "slabs and group_m dividing the rows per rank and slab");
  }
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  if (prop.major != 9 || prop.minor != 0)
    return Status::failure("own GEMM: unsupported GPU (needs sm_90): " + std::string(prop.name) +
                           " is sm_" + std::to_string(prop.major) + std::to_string(prop.minor));
  if (prop.sharedMemPerBlockOptin < static_cast<size_t>(GemmConfig::kSharedBytes))
    return Status::failure("own GEMM: needs " + std::to_string(GemmConfig::kSharedBytes) +
                           " bytes of shared memory per block, device allows " +
                           std::to_string(prop.sharedMemPerBlockOptin));
  return Status::success();
}

Status OwnGemm::initialize(const GemmArgs& args, const EpilogueArgs& epilogue,
                           const SchedulerOptions& sched) {
  release();
  OVERLAPSIM_TRY(can_implement(args, sched));
  if (epilogue.group_counters != nullptr && epilogue.tile_group == nullptr)
    return Status::failure("own GEMM: group_counters needs tile_group (the counter of each tile)");
  if (epilogue.tile_arrival != nullptr) {
    if (epilogue.tile_offset_elems == nullptr || epilogue.own_out == nullptr)
      return Status::failure("own GEMM: the owner epilogue needs tile_offset_elems and own_out");
    if (epilogue.world < 1 || epilogue.rank < 0 || epilogue.rank >= epilogue.world)
      return Status::failure("own GEMM: the owner epilogue needs 0 <= rank < world");
    if (epilogue.reduce && (epilogue.recv == nullptr || epilogue.arrived == nullptr ||
                            epilogue.own_groups < 1 || epilogue.part_elems % 2 != 0))
      return Status::failure(
          "own GEMM: the reducing owner epilogue needs recv, arrived, own_groups >= 1 and an "
          "even part_elems");
    if (epilogue.peer_out != nullptr &&
        (!epilogue.reduce || epilogue.world != 2 || args.m % GemmConfig::kTileM != 0 ||
         args.n % GemmConfig::kTileN != 0 ||
         (reinterpret_cast<uintptr_t>(epilogue.peer_out) & 15) != 0 ||
         (reinterpret_cast<uintptr_t>(epilogue.own_out) & 15) != 0 ||
         (reinterpret_cast<uintptr_t>(epilogue.recv) & 15) != 0))
      return Status::failure(
          "own GEMM: peer_out (all-reduce phase 2 by the epilogue) needs reduce, world = 2, m a "
          "multiple of " + std::to_string(GemmConfig::kTileM) + ", n a multiple of " +
          std::to_string(GemmConfig::kTileN) + " and 16-byte aligned own_out, recv and peer_out");
  } else if (epilogue.peer_out != nullptr) {
    return Status::failure("own GEMM: peer_out needs the owner epilogue (tile_arrival)");
  }
  args_ = args;
  epilogue_ = epilogue;
  gather_ = GatherArgs{};
  sched_ = sched;
  tiles_m_ = ceil_div_i32(args.m, GemmConfig::kTileM);
  tiles_n_ = ceil_div_i32(args.n, GemmConfig::kTileN);
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int64_t num_tiles = static_cast<int64_t>(tiles_m_) * tiles_n_;
  cluster_m_ = effective_cluster_m(args.m, args.n, sched);
  // Pairs: an even CTA count (tiles are even then too), no more clusters than fit at once
  // (a persistent CTA that is not resident would run its tiles after everyone else).
  const int wanted = sched.num_ctas > 0 ? sched.num_ctas : sms / cluster_m_ * cluster_m_;
  num_ctas_ = static_cast<int>(num_tiles < wanted ? num_tiles : wanted);

  const void* a = args.a;
  const void* b = args.b;
  k_padded_ = args.k;
  if (args.k % 8 != 0 || !aligned16(args.a) || !aligned16(args.b)) {
    k_padded_ = round_up(args.k, 8);
    const size_t bytes = static_cast<size_t>((args.m + args.n) * k_padded_) * 2;
    CUDA_CHECK(cudaMalloc(&workspace_, bytes));
    a = workspace_;
    b = static_cast<uint16_t*>(workspace_) + args.m * k_padded_;
  }
  auto* maps = reinterpret_cast<CUtensorMap*>(tensor_maps_);
  OVERLAPSIM_TRY(encode_k_major(&maps[0], args.dtype, a, k_padded_, args.m, GemmConfig::kTileM));
  OVERLAPSIM_TRY(
      encode_k_major(&maps[1], args.dtype, b, k_padded_, args.n, GemmConfig::kTileN / cluster_m_));
  const bool owner = epilogue.tile_arrival != nullptr;
  if (args.dtype == DType::kBf16) {
    OVERLAPSIM_TRY(prepare_kernel<__nv_bfloat16>(sched.defer_stores, owner, cluster_m_));
  } else {
    OVERLAPSIM_TRY(prepare_kernel<__half>(sched.defer_stores, owner, cluster_m_));
  }
  if (cluster_m_ == 2) {
    int clusters = 0;
    if (args.dtype == DType::kBf16) {
      OVERLAPSIM_TRY(max_active_clusters<__nv_bfloat16>(owner, num_ctas_, &clusters));
    } else {
      OVERLAPSIM_TRY(max_active_clusters<__half>(owner, num_ctas_, &clusters));
    }
    if (clusters < 1) return Status::failure("own GEMM: no cluster of 2 CTAs fits on this GPU");
    num_ctas_ = std::min(num_ctas_, 2 * clusters);
  }
  // The split tail's workspace: (split − 1) partial tiles of fp32 a tail tile, two counters
  // a tail tile (one a consumer warpgroup) and the timed-out flag.
  split_first_ = static_cast<int32_t>(num_tiles);
  split_parts_ = 1;
  if (sched.split_k_tail > 1) {
    const int32_t k_blocks =
        static_cast<int32_t>((k_padded_ + GemmConfig::kTileK - 1) / GemmConfig::kTileK);
    split_first_ = split_tail_first(static_cast<int32_t>(num_tiles), num_ctas_,
                                    sched.split_k_tail, k_blocks);
    if (split_first_ < num_tiles) {
      split_parts_ = sched.split_k_tail;
      if (args.dtype == DType::kBf16) {
        OVERLAPSIM_TRY(prepare_split_kernel<__nv_bfloat16>(sched.defer_stores, owner));
      } else {
        OVERLAPSIM_TRY(prepare_split_kernel<__half>(sched.defer_stores, owner));
      }
      const int64_t tail = num_tiles - split_first_;
      split_partial_bytes_ = static_cast<size_t>(tail * (split_parts_ - 1)) * 2 * 32 * 128 *
                             sizeof(float4);
      const size_t bytes = split_partial_bytes_ + static_cast<size_t>(tail * 2 + 1) * 4;
      CUDA_CHECK(cudaMalloc(&split_workspace_, bytes));
      split_zeroed_ = false;
    }
  }
  initialized_ = true;
  return Status::success();
}

Status OwnGemm::initialize_gathered(const GemmArgs& args, const GatherArgs& gather,
                                    const SchedulerOptions& sched) {
  if (gather.flags == nullptr) return initialize(args, EpilogueArgs{}, sched);
  const int64_t block_rows = gather.world > 0 ? args.m / gather.world : 0;
  if (gather.world < 1 || gather.rank < 0 || gather.rank >= gather.world || gather.chunks < 1 ||
      args.m % (int64_t{GemmConfig::kTileM} * gather.world * gather.chunks) != 0)
    return Status::failure("own GEMM: gathered A needs 0 <= rank < world, chunks >= 1 and m a "
                           "multiple of 128 x world x chunks (got m=" + std::to_string(args.m) +
                           ", world " + std::to_string(gather.world) + ", chunks " +
                           std::to_string(gather.chunks) + ")");
  if (gather.own_a == nullptr || args.k % 8 != 0 || !aligned16(args.a) || !aligned16(args.b) ||
      !aligned16(gather.own_a))
    return Status::failure("own GEMM: gathered A needs own_a, k a multiple of 8 (got " +
                           std::to_string(args.k) + ") and 16-byte aligned a, b and own_a");
  if (sched.cluster_m != 1 || sched.row_blocks != 1)
    return Status::failure("own GEMM: gathered A needs cluster_m = 1 and row_blocks = 1");
  OVERLAPSIM_TRY(initialize(args, EpilogueArgs{}, sched));
  gather_ = gather;
  auto* maps = reinterpret_cast<CUtensorMap*>(tensor_maps_);
  return encode_k_major(&maps[2], args.dtype, gather.own_a, k_padded_, block_rows,
                        GemmConfig::kTileM);
}

Status OwnGemm::run(cudaStream_t stream) { return run(stream, 0); }

Status OwnGemm::run(cudaStream_t stream, uint32_t epoch) {
  if (!initialized_) return Status::failure("own GEMM: run() before a successful initialize()");
  if (workspace_ != nullptr) {
    constexpr int kThreads = 256;
    const int blocks = 4 * num_ctas_;
    auto* a_padded = static_cast<uint16_t*>(workspace_);
    auto* b_padded = a_padded + args_.m * k_padded_;
    sm90::pad_k_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint16_t*>(args_.a),
                                                        a_padded, args_.m, args_.k, k_padded_);
    CUDA_CHECK(cudaGetLastError());
    sm90::pad_k_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint16_t*>(args_.b),
                                                        b_padded, args_.n, args_.k, k_padded_);
    CUDA_CHECK(cudaGetLastError());
  }
  if (split_workspace_ != nullptr && !split_zeroed_) {
    // Counters start at zero; afterwards every finisher leaves its own at zero.
    const int64_t tail = int64_t{tiles_m_} * tiles_n_ - split_first_;
    CUDA_CHECK(cudaMemsetAsync(static_cast<unsigned char*>(split_workspace_) + split_partial_bytes_,
                               0, static_cast<size_t>(tail * 2 + 1) * 4, stream));
    split_zeroed_ = true;
  }
  const auto* maps = reinterpret_cast<const CUtensorMap*>(tensor_maps_);
  if (epilogue_.tile_arrival != nullptr) {
    KernelParams<OwnerEpilogue> params{};
    fill_common(params, maps, args_, k_padded_, tiles_m_, tiles_n_, sched_);
    fill_split(params, split_first_, split_parts_, split_workspace_, split_partial_bytes_);
    OwnerEpilogue::Params& e = params.epilogue;
    e.c = args_.c;
    e.tile_offset_elems = epilogue_.tile_offset_elems;
    e.group_counters = epilogue_.group_counters;
    e.tile_group = epilogue_.tile_group;
    e.order_record = epilogue_.order_record;
    e.tile_arrival = epilogue_.tile_arrival;
    e.arrived = epilogue_.arrived;
    e.own_groups = epilogue_.own_groups;
    e.recv = epilogue_.recv;
    e.part_elems = epilogue_.part_elems;
    e.own_begin_elems = epilogue_.own_begin_elems;
    e.own_out = epilogue_.own_out;
    e.own_out_begin_elems = epilogue_.own_out_begin_elems;
    e.peer_out = epilogue_.peer_out;
    e.prefetch_peer = epilogue_.prefetch_peer_l2 ? 1 : 0;
    e.packed_sum = epilogue_.packed_sum ? 1 : 0;
    e.world = epilogue_.world;
    e.rank = epilogue_.rank;
    e.reduce = epilogue_.reduce ? 1 : 0;
    e.epoch = epoch;
    e.timeout_ns = static_cast<uint64_t>(epilogue_.wait_timeout_s * 1e9);
    e.timed_out = epilogue_.timed_out;
    e.system_scope_signal = epilogue_.system_scope_signal ? 1 : 0;
    e.store_steps = sched_.store_steps;
    e.vector_stores = sched_.vector_stores ? 1 : 0;
    if (args_.dtype == DType::kBf16)
      return launch<__nv_bfloat16>(params, sched_.defer_stores, num_ctas_, stream);
    return launch<__half>(params, sched_.defer_stores, num_ctas_, stream);
  }
  KernelParams<StoreEpilogue> params{};
  fill_common(params, maps, args_, k_padded_, tiles_m_, tiles_n_, sched_);
  fill_split(params, split_first_, split_parts_, split_workspace_, split_partial_bytes_);
  params.epilogue.c = args_.c;
  params.epilogue.tile_offset_elems = epilogue_.tile_offset_elems;
  params.epilogue.group_counters = epilogue_.group_counters;
  params.epilogue.tile_group = epilogue_.tile_group;
  params.epilogue.order_record = epilogue_.order_record;
  params.epilogue.store_steps = sched_.store_steps;
  params.epilogue.vector_stores = sched_.vector_stores ? 1 : 0;
  if (gather_.flags != nullptr) {
    params.map_a_own = maps[2];
    sm90::GatherWait& g = params.gather;
    g.flags = gather_.flags;
    g.epoch = epoch;
    g.own_block = gather_.rank;
    g.block_tile_rows = tiles_m_ / gather_.world;
    g.chunks = gather_.chunks;
    g.chunk_tile_rows = g.block_tile_rows / gather_.chunks;
    g.timeout_ns = static_cast<uint64_t>(gather_.wait_timeout_s * 1e9);
    g.timed_out = gather_.timed_out;
  }
  if (args_.dtype == DType::kBf16)
    return launch<__nv_bfloat16>(params, sched_.defer_stores, num_ctas_, stream);
  return launch<__half>(params, sched_.defer_stores, num_ctas_, stream);
}

Status OwnGemm::check_split_wait() const {
  if (split_workspace_ == nullptr) return Status::success();
  const int64_t tail = int64_t{tiles_m_} * tiles_n_ - split_first_;
  int flag = 0;
  CUDA_CHECK(cudaMemcpy(&flag,
                        static_cast<unsigned char*>(split_workspace_) + split_partial_bytes_ +
                            static_cast<size_t>(tail * 2) * 4,
                        sizeof(flag), cudaMemcpyDeviceToHost));
  if (flag != 0)
    return Status::failure("own GEMM: a split tile's finisher timed out waiting for its parts");
  return Status::success();
}

void OwnGemm::release() {
  int device = 0;
  if (workspace_ != nullptr || split_workspace_ != nullptr) cudaGetDevice(&device);
  // In a rank thread both go at the next quiesce().
  if (workspace_ != nullptr) free_device_memory(workspace_, device);
  if (split_workspace_ != nullptr) free_device_memory(split_workspace_, device);
  split_workspace_ = nullptr;
  split_partial_bytes_ = 0;
  workspace_ = nullptr;
  initialized_ = false;
}

OwnGemm::~OwnGemm() { release(); }

}  // namespace overlapsim::kernels::gemm
