// The fused GEMV + all-reduce kernel (design: docs/kernels/design.md, "Fused GEMV +
// AllReduce"). One persistent grid; CTA c owns slices c, c + grid, ... of kSliceCols
// output columns.
//   Phase 1, per slice: the 8 warps each take a share of K and compute the slice's
//     partial for every token on the tensor cores (mma.sync m16n8k16, W as the 16-row
//     operand, the tokens as the 8-column one), the warps' fp32 partials are summed in warp
//     order through shared memory and rounded to bf16; the CTA stores the partial into
//     every rank's receive buffer (its own included) at slot [parity][this rank][slice],
//     then, after one system-scope release fence, writes the call's epoch into each
//     peer's flag [this rank][slice].
//   Phase 2, per slice: wait for every peer's flag, sum the world's partials in rank order
//     0, 1, ... in fp32, round once, store y's slice.
// No CTA waits before it has pushed all its slices, so the only requirement for progress is
// that every CTA of a rank's grid is resident (the grid is capped by occupancy).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl_device.h>

#include <string>

#include "kernels/common/global_timer.cuh"
#include "kernels/fused/gemv_allreduce_kernel.hpp"

namespace overlapsim::kernels::fused {
namespace {

constexpr int kWarps = kThreads / 32;
constexpr int kRowPad = kSliceCols + 4;  // floats per token row in shared memory (no conflicts)

__device__ __forceinline__ uint4 load_stream(const std::uint16_t* p) {
  // W is read once per call: keep it out of L1.
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], std::uint32_t a0, std::uint32_t a1,
                                         std::uint32_t a2, std::uint32_t a3, std::uint32_t b0,
                                         std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void store_relaxed_sys(std::uint32_t* flag, std::uint32_t value) {
  asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}

__device__ __forceinline__ std::uint32_t acquire_sys(const std::uint32_t* flag) {
  std::uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
  return v;
}

// Rank r's receive buffer and flags, through the peer pointers or NCCL's window.
__device__ __forceinline__ std::uint16_t* recv_of(const GemvKernelArgs& a, int r) {
  if (a.window != nullptr) return static_cast<std::uint16_t*>(ncclGetPeerPointer(a.window, 0, r));
  return a.recv[r];
}
__device__ __forceinline__ std::uint32_t* flags_of(const GemvKernelArgs& a, int r) {
  if (a.window != nullptr)
    return static_cast<std::uint32_t*>(ncclGetPeerPointer(a.window, a.flags_offset_bytes, r));
  return a.flags[r];
}

__device__ __forceinline__ std::uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&v);
}

__device__ __forceinline__ void add_bf16x8(float (&acc)[8], uint4 v) {
  const std::uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    acc[2 * i] += __uint_as_float(words[i] << 16);
    acc[2 * i + 1] += __uint_as_float(words[i] & 0xFFFF0000u);
  }
}

// K chunks of 32 a warp loads before its MMAs: fewer when more token tiles need registers.
template <int kTokenTiles>
constexpr int unroll_for() {
  return kTokenTiles >= 8 ? 1 : kTokenTiles >= 4 ? 2 : 4;
}

// One slice's partial into shared memory red[warp][token][row] (rows padded to kRowPad).
//
// Fragment mapping (PTX m16n8k16, lane = 4 g + t): A (16 x 16) rows g and g + 8, logical
// columns 2t, 2t + 1, 2t + 8, 2t + 9; B (16 x 8) logical rows the same, column g. A K chunk
// of 32 is loaded as one 16-byte run per thread and row, physical columns 8t .. 8t + 7; the
// first four feed MMA 0's logical columns {2t, 2t+1, 2t+8, 2t+9}, the last four MMA 1's.
// A and B use the same logical-to-physical map (it depends on t alone), so the products
// pair the right elements; only the order of the K sum differs from a plain loop.
template <int kTokenTiles>
__device__ void slice_partial(const GemvKernelArgs& a, std::int64_t slice, float* red) {
  constexpr int kUnroll = unroll_for<kTokenTiles>();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const std::int64_t chunks = a.k / 32;
  float acc[2][kTokenTiles][4];
#pragma unroll
  for (int mb = 0; mb < 2; ++mb)
#pragma unroll
    for (int tb = 0; tb < kTokenTiles; ++tb)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mb][tb][i] = 0.f;

  const std::uint16_t* w_rows[4];  // rows g, g + 8, g + 16, g + 24 of the slice
#pragma unroll
  for (int r = 0; r < 4; ++r) w_rows[r] = a.w + (slice * kSliceCols + g + 8 * r) * a.k + 8 * t;
  const std::uint16_t* x_rows[kTokenTiles];
  bool x_valid[kTokenTiles];
#pragma unroll
  for (int tb = 0; tb < kTokenTiles; ++tb) {
    const int token = tb * 8 + g;
    x_valid[tb] = token < a.tokens;
    x_rows[tb] = a.x + static_cast<std::int64_t>(x_valid[tb] ? token : 0) * a.k + 8 * t;
  }

  // Warp w takes chunks w, w + 8, ...: the CTA's 8 warps read 512 consecutive bytes a row.
  for (std::int64_t base = warp; base < chunks; base += kWarps * kUnroll) {
    uint4 wa[kUnroll][4];
    uint4 xb[kUnroll][kTokenTiles];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t c = base + static_cast<std::int64_t>(u) * kWarps;
      const bool ok = c < chunks;
#pragma unroll
      for (int r = 0; r < 4; ++r)
        wa[u][r] = ok ? load_stream(w_rows[r] + c * 32) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int tb = 0; tb < kTokenTiles; ++tb)
        xb[u][tb] = ok && x_valid[tb] ? __ldg(reinterpret_cast<const uint4*>(x_rows[tb] + c * 32))
                                      : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int mb = 0; mb < 2; ++mb) {
        const uint4 lo = wa[u][2 * mb], hi = wa[u][2 * mb + 1];  // rows g, g + 8 of tile mb
#pragma unroll
        for (int tb = 0; tb < kTokenTiles; ++tb) {
          mma_bf16(acc[mb][tb], lo.x, hi.x, lo.y, hi.y, xb[u][tb].x, xb[u][tb].y);
          mma_bf16(acc[mb][tb], lo.z, hi.z, lo.w, hi.w, xb[u][tb].z, xb[u][tb].w);
        }
      }
  }
  // D (16 x 8): rows g, g + 8 (output columns), columns 2t, 2t + 1 (tokens).
  float* mine = red + warp * (kTokenTiles * 8) * kRowPad;
#pragma unroll
  for (int mb = 0; mb < 2; ++mb)
#pragma unroll
    for (int tb = 0; tb < kTokenTiles; ++tb) {
      const int token = tb * 8 + 2 * t, row = mb * 16 + g;
      mine[token * kRowPad + row] = acc[mb][tb][0];
      mine[(token + 1) * kRowPad + row] = acc[mb][tb][1];
      mine[token * kRowPad + row + 8] = acc[mb][tb][2];
      mine[(token + 1) * kRowPad + row + 8] = acc[mb][tb][3];
    }
}

// Thread i < 4 tokens: token i / 4, rows 8 (i % 4) .. + 7 of the slice, the warps' sums in
// warp order, as 8 bf16.
template <int kTokenTiles>
__device__ uint4 reduce_warps(const float* red, int token, int q) {
  float s[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) s[j] = 0.f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const float4* p =
        reinterpret_cast<const float4*>(red + (w * kTokenTiles * 8 + token) * kRowPad + q * 8);
    const float4 v0 = p[0], v1 = p[1];
    s[0] += v0.x;
    s[1] += v0.y;
    s[2] += v0.z;
    s[3] += v0.w;
    s[4] += v1.x;
    s[5] += v1.y;
    s[6] += v1.z;
    s[7] += v1.w;
  }
  return make_uint4(pack_bf16(s[0], s[1]), pack_bf16(s[2], s[3]), pack_bf16(s[4], s[5]),
                    pack_bf16(s[6], s[7]));
}

template <int kTokenTiles>
__global__ void __launch_bounds__(kThreads, 2) gemv_allreduce_kernel(GemvKernelArgs a) {
  extern __shared__ float4 shared_raw[];
  float* red = reinterpret_cast<float*>(shared_raw);
  const std::int64_t slices = a.n / kSliceCols;
  const bool push = a.push && a.world > 1;
  const int i = threadIdx.x;
  const int token = i >> 2, q = i & 3;
  const bool active = token < a.tokens;  // this thread moves one 16-byte vector of a slice
  const std::int64_t slot_elems = static_cast<std::int64_t>(a.tokens) * kSliceCols;
  const std::int64_t source_elems = slices * slot_elems;
  const std::int64_t parity_elems = a.world * source_elems;
  const std::int64_t parity_off = static_cast<std::int64_t>(a.epoch & 1u) * parity_elems;

  for (std::int64_t slice = blockIdx.x; slice < slices; slice += gridDim.x) {
    slice_partial<kTokenTiles>(a, slice, red);
    __syncthreads();
    if (active) {
      const uint4 v = reduce_warps<kTokenTiles>(red, token, q);
      if (!push) {
        *reinterpret_cast<uint4*>(a.y + token * a.n + slice * kSliceCols + q * 8) = v;
      } else {
        const std::int64_t off = parity_off + a.rank * source_elems + slice * slot_elems + i * 8;
        // Peers first, from the next rank on (the senders spread over the links), own last.
        for (int d = 1; d <= a.world; ++d) {
          const int dst = (a.rank + d) % a.world;
          *reinterpret_cast<uint4*>(recv_of(a, dst) + off) = v;
        }
      }
    }
    // Every thread's stores precede the flags (the barrier), and one system-scope release
    // fence by the flag writer, cumulative over the barrier, makes them visible to the
    // peers before any flag (acq_rel, not the sequentially consistent fence of
    // __threadfence_system: a release pattern needs no more).
    __syncthreads();
    if (push && i == 0) {
      asm volatile("fence.acq_rel.sys;" ::: "memory");
      for (int d = 1; d < a.world; ++d) {
        const int dst = (a.rank + d) % a.world;
        store_relaxed_sys(flags_of(a, dst) + a.rank * slices + slice, a.epoch);
      }
    }
  }
  if (!push) return;

  const std::uint32_t* my_flags = flags_of(a, a.rank);
  const std::uint16_t* my_recv = recv_of(a, a.rank);
  const std::uint64_t deadline = global_timer_ns() + a.timeout_ns;
  for (std::int64_t slice = blockIdx.x; slice < slices; slice += gridDim.x) {
    if (!active) continue;
    for (int src = 0; src < a.world; ++src) {
      if (src == a.rank) continue;
      unsigned sleep_ns = 0;
      // Epochs only grow (wrapping): a flag at or past this call's epoch has arrived; a peer
      // may already be one call ahead, writing the other parity. The first polls do not
      // sleep: the partials are usually there or microseconds away.
      while (static_cast<std::int32_t>(acquire_sys(my_flags + src * slices + slice) - a.epoch) <
             0) {
        if (global_timer_ns() > deadline) {
          atomicExch(a.timed_out, 1);
          return;
        }
        if (sleep_ns > 0) __nanosleep(sleep_ns);
        sleep_ns = sleep_ns == 0 ? 16 : (sleep_ns < 256 ? 2 * sleep_ns : sleep_ns);
      }
    }
    float acc[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[j] = 0.f;
    const std::int64_t off = parity_off + slice * slot_elems + i * 8;
    // Rank order 0, 1, ..., whatever this rank is: every rank gets the same bits.
    for (int src = 0; src < a.world; ++src)
      add_bf16x8(acc, __ldcg(reinterpret_cast<const uint4*>(my_recv + off + src * source_elems)));
    *reinterpret_cast<uint4*>(a.y + token * a.n + slice * kSliceCols + q * 8) =
        make_uint4(pack_bf16(acc[0], acc[1]), pack_bf16(acc[2], acc[3]), pack_bf16(acc[4], acc[5]),
                   pack_bf16(acc[6], acc[7]));
  }
}

template <int kTokenTiles>
constexpr std::size_t shared_bytes() {
  return static_cast<std::size_t>(kWarps) * kTokenTiles * 8 * kRowPad * sizeof(float);
}

template <int kTokenTiles>
Status prepare() {
  CUDA_CHECK(cudaFuncSetAttribute(gemv_allreduce_kernel<kTokenTiles>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(shared_bytes<kTokenTiles>())));
  return Status::success();
}

template <int kTokenTiles>
Status max_ctas(int* ctas) {
  OVERLAPSIM_TRY(prepare<kTokenTiles>());
  int device = 0, sms = 0, per_sm = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, gemv_allreduce_kernel<kTokenTiles>, kThreads, shared_bytes<kTokenTiles>()));
  *ctas = sms * per_sm;
  return Status::success();
}

template <int kTokenTiles>
Status launch(const GemvKernelArgs& args, int grid, cudaStream_t stream) {
  gemv_allreduce_kernel<kTokenTiles><<<grid, kThreads, shared_bytes<kTokenTiles>(), stream>>>(args);
  CUDA_CHECK(cudaGetLastError());
  return Status::success();
}

// Token tiles of 8 the kernel is built for: 1, 2, 4 or 8 (up to 64 tokens).
int token_tiles(int tokens) {
  const int tiles = (tokens + 7) / 8;
  return tiles <= 1 ? 1 : tiles <= 2 ? 2 : tiles <= 4 ? 4 : 8;
}

}  // namespace

Status gemv_allreduce_max_ctas(int tokens, int* ctas) {
  switch (token_tiles(tokens)) {
    case 1:
      return max_ctas<1>(ctas);
    case 2:
      return max_ctas<2>(ctas);
    case 4:
      return max_ctas<4>(ctas);
    default:
      return max_ctas<8>(ctas);
  }
}

Status launch_gemv_allreduce(const GemvKernelArgs& args, int grid, cudaStream_t stream) {
  if (args.tokens < 1 || args.tokens > kMaxTokens || args.n % kSliceCols != 0 || args.k % 32 != 0 ||
      args.world < 1 || args.world > kMaxWorld || grid < 1 ||
      (args.push && args.world > 1 && (args.epoch == 0 || args.timed_out == nullptr)))
    return Status::failure("fused gemv+allreduce: bad launch (tokens " +
                           std::to_string(args.tokens) + ", n " + std::to_string(args.n) + ", k " +
                           std::to_string(args.k) + ", world " + std::to_string(args.world) +
                           ", grid " + std::to_string(grid) + ")");
  switch (token_tiles(args.tokens)) {
    case 1:
      return launch<1>(args, grid, stream);
    case 2:
      return launch<2>(args, grid, stream);
    case 4:
      return launch<4>(args, grid, stream);
    default:
      return launch<8>(args, grid, stream);
  }
}

Status preload_gemv_allreduce() {
  OVERLAPSIM_TRY(prepare<1>());
  OVERLAPSIM_TRY(prepare<2>());
  OVERLAPSIM_TRY(prepare<4>());
  OVERLAPSIM_TRY(prepare<8>());
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, gemv_allreduce_kernel<1>));
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, gemv_allreduce_kernel<2>));
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, gemv_allreduce_kernel<4>));
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, gemv_allreduce_kernel<8>));
  return Status::success();
}

}  // namespace overlapsim::kernels::fused
