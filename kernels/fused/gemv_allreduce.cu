// The fused GEMV + all-reduce kernel (design: docs/kernels/design.md, "Fused GEMV +
// AllReduce"). One persistent grid over work units: a unit is a slice of kSliceCols output
// columns and one of k_splits equal ranges of K. CTA c starts with unit c; units past the
// grid go to whichever CTA asks first (a ticket counter), so CTAs that stream W faster take
// more and the GEMV ends evenly. Early claim (GemvKernelArgs::early_claim, one token tile
// only): a CTA asks before its unit's last loop iteration and has L2 fetch the head of the
// unit it gets, so the next unit starts on W already in L2. Finer last wave
// (GemvKernelArgs::last_wave_slices, up to two token tiles): the last slices are cut into
// more K ranges and numbered last, so the CTAs that free up near the end share small units.
//   Per unit: the 8 warps each take a share of the unit's K range and compute the slice's
//     partial for every token on the tensor cores (mma.sync m16n8k16, W as the 16-row
//     operand, the tokens as the 8-column one); the warps' fp32 partials are summed in warp
//     order through shared memory. With one split that is the rank's partial; with more,
//     each split leaves its fp32 sum in `partials` and the last split of the slice to
//     arrive adds all of them in split order. The partial is rounded to bf16 once, then
//     (push) stored into every rank's receive buffer, its own included, as lines of
//     {bf16 pair, epoch, bf16 pair, epoch}: a 16-byte store whose 8-byte halves land whole,
//     so a reader that sees the epoch sees the data, and no fence or flag sits between a
//     finished slice and its peers.
//   Reduction, once no unit is left to hand out: CTA c takes slices c, c + grid, ...; each
//     thread polls its lines from every rank until they carry this call's epoch, sums the
//     world's partials in rank order 0, 1, ... in fp32, rounds once and stores y's slice.
// No CTA waits before every unit of its rank has been handed out to a running CTA, so the
// only requirement for progress is that every CTA of a rank's grid is resident (the grid is
// capped by occupancy).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl_device.h>

#include <algorithm>
#include <string>

#include "kernels/common/global_timer.cuh"
#include "kernels/fused/gemv_allreduce_kernel.hpp"

namespace overlapsim::kernels::fused {
namespace {

constexpr int kWarps = kThreads / 32;
constexpr int kRowPad = kSliceCols + 4;  // floats per token row in shared memory (no conflicts)

// W is read once per call: keep it out of L1. kPrefetch also asks L2 to fetch the whole
// 256-byte block around each access (a warp's load covers 64 bytes of 8 rows; the CTA's
// other warps take the rest of each block a moment later), a hint for DRAM to serve W in
// longer bursts.
template <bool kPrefetch>
__device__ __forceinline__ uint4 load_stream(const std::uint16_t* p) {
  uint4 v;
  if constexpr (kPrefetch)
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
  else
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

// One line of a receive buffer: two bf16 pairs, each beside the epoch in one 8-byte half.
// Volatile 16-byte accesses (as NCCL's LL protocol uses them): each 8-byte half is stored
// and loaded whole, over NVLink too, so data and epoch arrive together.
__device__ __forceinline__ void store_line(uint4* p, std::uint32_t lo, std::uint32_t hi,
                                           std::uint32_t epoch) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(lo), "r"(epoch),
               "r"(hi), "r"(epoch)
               : "memory");
}
__device__ __forceinline__ uint4 load_line(const uint4* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

// Rank r's receive buffer as lines, through the peer pointers or NCCL's window.
__device__ __forceinline__ uint4* recv_of(const GemvKernelArgs& a, int r) {
  if (a.window != nullptr) return static_cast<uint4*>(ncclGetPeerPointer(a.window, 0, r));
  return reinterpret_cast<uint4*>(a.recv[r]);
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

// One unit's partial (chunks [c0, c1) of the slice's K) into shared memory
// red[warp][token][row] (rows padded to kRowPad).
//
// Fragment mapping (PTX m16n8k16, lane = 4 g + t): A (16 x 16) rows g and g + 8, logical
// columns 2t, 2t + 1, 2t + 8, 2t + 9; B (16 x 8) logical rows the same, column g. A K chunk
// of 32 is loaded as one 16-byte run per thread and row, physical columns 8t .. 8t + 7; the
// first four feed MMA 0's logical columns {2t, 2t+1, 2t+8, 2t+9}, the last four MMA 1's.
// A and B use the same logical-to-physical map (it depends on t alone), so the products
// pair the right elements; only the order of the K sum differs from a plain loop.
// Early claim (kEarly: kEarlyClaim with one token tile, and `claim`): lane 0 of warp 0 takes
// the next ticket at the start of warp 0's second-to-last loop iteration, and at the start of
// its last one warp 0 asks L2 to fetch the first loop iteration's W of the unit the ticket
// names (cp.async.bulk.prefetch.L2, one row a lane). Every CTA reaches the end of its unit at
// about the same time, so without it the whole GPU drains and refills between units; with
// it the next unit's first loads find W in L2. Both steps sit where no loaded W is held in
// registers: a claim beside the loads made the compiler spill, and with more token tiles even
// this placement did, so there the kernel claims after the loop. Returns the next unit (warp
// 0 under kEarly and claim); else `units`.
template <int kTokenTiles, bool kPrefetch, bool kEarlyClaim>
__device__ long long unit_partial(const GemvKernelArgs& a, std::int64_t slice, std::int64_t c0,
                                  std::int64_t c1, float* red, bool claim, std::int64_t units,
                                  std::int64_t chunks) {
  constexpr int kUnroll = unroll_for<kTokenTiles>();
  constexpr bool kEarly = kEarlyClaim && kTokenTiles == 1;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  float acc[2][kTokenTiles][4];
#pragma unroll
  for (int mb = 0; mb < 2; ++mb)
#pragma unroll
    for (int tb = 0; tb < kTokenTiles; ++tb)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mb][tb][i] = 0.f;

  // Warp 0's iterations, the one it claims in (-1: none) and the unit the ticket names
  // (relative to the grid's first).
  const int iterations =
      kEarly ? static_cast<int>((c1 - c0 + kWarps * kUnroll - 1) / (kWarps * kUnroll)) : 0;
  const int claim_at = kEarly && claim && warp == 0 ? max(iterations - 2, 0) : -1;
  int next = -1;
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

  // Warp w takes chunks c0 + w, c0 + w + 8, ...: the CTA's 8 warps read 512 consecutive
  // bytes a row.
  int it = 0;
  for (std::int64_t base = c0 + warp; base < c1; base += kWarps * kUnroll, ++it) {
    if constexpr (kEarly) {
      if (it == claim_at && lane == 0)
        next = static_cast<int>(atomicAdd(a.tickets, 1ull) - a.ticket_base);
      if (claim_at >= 0 && it == iterations - 1) {
        next = __shfl_sync(0xFFFFFFFFu, next, 0);
        const std::int64_t unit = static_cast<std::int64_t>(next) + gridDim.x;
        if (unit < units) {
          const std::int64_t next_slice = unit / a.k_splits;
          const std::int64_t split = unit - next_slice * a.k_splits;
          const std::int64_t n0 = split * chunks / a.k_splits,
                             n1 = (split + 1) * chunks / a.k_splits;
          const unsigned bytes =
              static_cast<unsigned>(min(n1 - n0, static_cast<std::int64_t>(kWarps) * kUnroll) * 64);
          const std::uint16_t* row = a.w + (next_slice * kSliceCols + lane) * a.k + n0 * 32;
          asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(row), "r"(bytes)
                       : "memory");
        }
      }
    }
    uint4 wa[kUnroll][4];
    uint4 xb[kUnroll][kTokenTiles];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t c = base + static_cast<std::int64_t>(u) * kWarps;
      const bool ok = c < c1;
#pragma unroll
      for (int r = 0; r < 4; ++r)
        wa[u][r] = ok ? load_stream<kPrefetch>(w_rows[r] + c * 32) : make_uint4(0, 0, 0, 0);
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
  return kEarly && claim ? static_cast<long long>(next) + gridDim.x : units;
}

// Thread i < 4 tokens: token i / 4, rows 8 (i % 4) .. + 7 of the slice, the warps' fp32
// sums in warp order.
template <int kTokenTiles>
__device__ void reduce_warps(const float* red, int token, int q, float (&s)[8]) {
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
}

// Where unit `unit` lies under the finer last wave: units [0, bulk) are the first slices'
// k_splits ranges as without it; the rest the last slices' last_wave_splits ranges, each a
// whole number of kLastWaveChunks (the last may be shorter), so no loop iteration of a small
// unit runs half empty.
struct UnitPlace {
  std::int64_t slice, c0, c1;
  int split, splits;
};
__device__ __forceinline__ UnitPlace last_wave_place(const GemvKernelArgs& a, std::int64_t unit,
                                                     std::int64_t bulk, std::int64_t slices,
                                                     std::int64_t chunks) {
  UnitPlace p;
  if (unit < bulk) {
    p.splits = a.k_splits;
    p.slice = unit / p.splits;
    p.split = static_cast<int>(unit - p.slice * p.splits);
    p.c0 = p.split * chunks / p.splits;
    p.c1 = (p.split + 1) * chunks / p.splits;
  } else {
    p.splits = a.last_wave_splits;
    const std::int64_t v = unit - bulk;
    p.slice = slices - a.last_wave_slices + v / p.splits;
    p.split = static_cast<int>(v - (v / p.splits) * p.splits);
    const std::int64_t steps = (chunks + kLastWaveChunks - 1) / kLastWaveChunks;
    p.c0 = min(chunks, p.split * steps / p.splits * kLastWaveChunks);
    p.c1 = min(chunks, (p.split + 1) * steps / p.splits * kLastWaveChunks);
  }
  return p;
}

template <int kTokenTiles, bool kPrefetch, bool kEarlyClaim, bool kLastWave>
__global__ void __launch_bounds__(kThreads, 2) gemv_allreduce_kernel(GemvKernelArgs a) {
  constexpr bool kEarly = kEarlyClaim && kTokenTiles == 1;
  static_assert(!(kEarlyClaim && kLastWave), "the early claim has no last wave");
  extern __shared__ float4 shared_raw[];
  __shared__ long long next_unit;  // the unit this CTA takes next, from thread 0
  __shared__ int last_split;       // this CTA's split was the slice's last to arrive
  float* red = reinterpret_cast<float*>(shared_raw);
  const std::int64_t slices = a.n / kSliceCols;
  const int splits = a.k_splits;
  const std::int64_t chunks = a.k / 32;
  // Units of the first slices (all of them without the last wave), all units, and the
  // partials' stride per slice.
  const std::int64_t bulk = kLastWave ? (slices - a.last_wave_slices) * splits : slices * splits;
  const std::int64_t units = kLastWave ? bulk + a.last_wave_slices * a.last_wave_splits : bulk;
  const int stride = kLastWave ? max(splits, a.last_wave_splits) : splits;
  const bool dynamic = units > gridDim.x;
  const bool push = a.push && a.world > 1;
  const int i = threadIdx.x;
  const int token = i >> 2, q = i & 3;
  const bool active = token < a.tokens;  // this thread moves 8 outputs of a slice
  const std::int64_t slot_elems = static_cast<std::int64_t>(a.tokens) * kSliceCols;
  const std::int64_t slot_lines = static_cast<std::int64_t>(a.tokens) * 8;  // 4 threads x 2
  const std::int64_t parity_lines =
      static_cast<std::int64_t>(a.epoch & 1u) * a.world * slices * slot_lines;
  std::uint64_t* trace = a.trace != nullptr && i == 0 ? a.trace + 4 * blockIdx.x : nullptr;
  if (trace != nullptr) trace[0] = global_timer_ns();

  for (std::int64_t unit = blockIdx.x; unit < units;) {
    std::int64_t slice, c0, c1;
    int split, unit_splits;
    if constexpr (kLastWave) {
      const UnitPlace p = last_wave_place(a, unit, bulk, slices, chunks);
      slice = p.slice, split = p.split, unit_splits = p.splits, c0 = p.c0, c1 = p.c1;
    } else {
      slice = unit / splits;
      split = static_cast<int>(unit - slice * splits);
      unit_splits = splits;
      c0 = split * chunks / splits;
      c1 = (split + 1) * chunks / splits;
    }
    // kEarly: warp 0 holds the next unit, claimed near this one's end. Else thread 0 claims
    // it now, its round trip overlapping this unit's epilogue (used before the last barrier).
    const long long claimed = unit_partial<kTokenTiles, kPrefetch, kEarlyClaim>(
        a, slice, c0, c1, red, dynamic, units, chunks);
    unsigned long long ticket = 0;
    if (!kEarly && i == 0 && dynamic) ticket = atomicAdd(a.tickets, 1ull);
    __syncthreads();
    float acc[8];
    if (active) reduce_warps<kTokenTiles>(red, token, q, acc);
    bool complete = unit_splits == 1;
    if (!complete) {
      float* mine = a.partials + (slice * stride + split) * slot_elems + i * 8;
      if (active) {
        __stcg(reinterpret_cast<float4*>(mine), make_float4(acc[0], acc[1], acc[2], acc[3]));
        __stcg(reinterpret_cast<float4*>(mine) + 1, make_float4(acc[4], acc[5], acc[6], acc[7]));
      }
      // The barrier orders every thread's partial before thread 0's release fence
      // (cumulative), the fence before its arrival; the last arriver's acquire fence and
      // the next barrier order the other splits' partials before this CTA's loads. GPU
      // scope: the splits meet on this GPU.
      __syncthreads();
      if (i == 0) {
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
        // The count cycles 0 .. splits - 1 (atomicInc wraps past splits - 1 to 0): the last
        // arriver read splits - 1, for any split and any number of calls (a plain add's
        // residue would break at the u32 wrap unless the split divides 2^32).
        const unsigned old = atomicInc(a.arrivals + slice, static_cast<unsigned>(unit_splits - 1));
        const bool last = old == static_cast<unsigned>(unit_splits - 1);
        if (last) asm volatile("fence.acq_rel.gpu;" ::: "memory");
        last_split = last;
      }
      __syncthreads();
      complete = last_split != 0;
      if (complete && active) {
        float sum[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) sum[j] = 0.f;
        // Split order 0, 1, ..., whichever arrived last: every call gets the same bits.
        for (int s = 0; s < unit_splits; ++s) {
          float part[8];
          if (s == split) {
#pragma unroll
            for (int j = 0; j < 8; ++j) part[j] = acc[j];
          } else {
            const float4* p = reinterpret_cast<const float4*>(
                a.partials + (slice * stride + s) * slot_elems + i * 8);
            const float4 v0 = __ldcg(p), v1 = __ldcg(p + 1);
            part[0] = v0.x, part[1] = v0.y, part[2] = v0.z, part[3] = v0.w;
            part[4] = v1.x, part[5] = v1.y, part[6] = v1.z, part[7] = v1.w;
          }
#pragma unroll
          for (int j = 0; j < 8; ++j) sum[j] += part[j];
        }
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[j] = sum[j];
      }
    }
    if (complete && active) {
      const std::uint32_t w0 = pack_bf16(acc[0], acc[1]), w1 = pack_bf16(acc[2], acc[3]),
                          w2 = pack_bf16(acc[4], acc[5]), w3 = pack_bf16(acc[6], acc[7]);
      if (!push) {
        *reinterpret_cast<uint4*>(a.y + token * a.n + slice * kSliceCols + q * 8) =
            make_uint4(w0, w1, w2, w3);
      } else {
        const std::int64_t line = parity_lines + (a.rank * slices + slice) * slot_lines + 2 * i;
        // Peers first, from the next rank on (the senders spread over the links), own last.
        for (int d = 1; d <= a.world; ++d) {
          uint4* p = recv_of(a, (a.rank + d) % a.world) + line;
          store_line(p, w0, w1, a.epoch);
          store_line(p + 1, w2, w3, a.epoch);
        }
      }
    }
    if (i == 0)
      next_unit =
          kEarly || !dynamic ? claimed : static_cast<long long>(ticket - a.ticket_base) + gridDim.x;
    // Everyone is done with red, next_unit and last_split before the next unit rewrites them.
    __syncthreads();
    unit = next_unit;
  }
  if (trace != nullptr) trace[1] = global_timer_ns();
  if (!push || !active) return;  // no barrier below

  // Every rank's lines for this thread, in this rank's buffer.
  const uint4* mine = recv_of(a, a.rank) + parity_lines + 2 * i;
  const std::uint64_t deadline = global_timer_ns() + a.timeout_ns;
  for (std::int64_t slice = blockIdx.x; slice < slices; slice += gridDim.x) {
    uint4 got[kMaxWorld][2];
    unsigned pending = (1u << a.world) - 1u;
    unsigned sleep_ns = 0;
    // All ranks' lines are loaded together each round (one latency, not world of them);
    // an arrived rank's lines are kept. The first rounds do not sleep: the partials are
    // usually there or a microsecond away.
    for (;;) {
#pragma unroll
      for (int src = 0; src < kMaxWorld; ++src)
        if ((pending >> src) & 1u) {
          const uint4* p = mine + (src * slices + slice) * slot_lines;
          got[src][0] = load_line(p);
          got[src][1] = load_line(p + 1);
        }
#pragma unroll
      for (int src = 0; src < kMaxWorld; ++src)
        if (((pending >> src) & 1u) && got[src][0].y == a.epoch && got[src][0].w == a.epoch &&
            got[src][1].y == a.epoch && got[src][1].w == a.epoch)
          pending &= ~(1u << src);
      if (pending == 0) break;
      if (global_timer_ns() > deadline) {
        atomicExch(a.timed_out, 1);
        return;
      }
      if (sleep_ns > 0) __nanosleep(sleep_ns);
      sleep_ns = sleep_ns == 0 ? 16 : (sleep_ns < 128 ? 2 * sleep_ns : sleep_ns);
    }
    if (trace != nullptr) trace[2] = global_timer_ns();
    float acc[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[j] = 0.f;
      // Rank order 0, 1, ..., whatever this rank is: every rank gets the same bits.
#pragma unroll
    for (int src = 0; src < kMaxWorld; ++src)
      if (src < a.world)
        add_bf16x8(acc, make_uint4(got[src][0].x, got[src][0].z, got[src][1].x, got[src][1].z));
    *reinterpret_cast<uint4*>(a.y + token * a.n + slice * kSliceCols + q * 8) =
        make_uint4(pack_bf16(acc[0], acc[1]), pack_bf16(acc[2], acc[3]), pack_bf16(acc[4], acc[5]),
                   pack_bf16(acc[6], acc[7]));
  }
  if (trace != nullptr) trace[3] = global_timer_ns();
}

template <int kTokenTiles>
constexpr std::size_t shared_bytes() {
  return static_cast<std::size_t>(kWarps) * kTokenTiles * 8 * kRowPad * sizeof(float);
}

// The early claim is built for one token tile only (with more it spilled): other token
// counts run the plain kernel whatever early_claim says.
template <int kTokenTiles>
constexpr bool has_early() {
  return kTokenTiles == 1;
}

// The finer last wave is built for one and two token tiles (up to kLastWaveMaxTokens).
template <int kTokenTiles>
constexpr bool has_last_wave() {
  return kTokenTiles * 8 <= kLastWaveMaxTokens;
}

template <int kTokenTiles, bool kPrefetch, bool kEarlyClaim, bool kLastWave = false>
Status prepare(int* per_sm) {
  const auto kernel = gemv_allreduce_kernel<kTokenTiles, kPrefetch, kEarlyClaim, kLastWave>;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(shared_bytes<kTokenTiles>())));
  int fit = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, kThreads,
                                                           shared_bytes<kTokenTiles>()));
  *per_sm = std::min(*per_sm, fit);
  // Loads the kernel now (see preload_gemv_allreduce).
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  return Status::success();
}

template <int kTokenTiles>
Status max_ctas(int* ctas) {
  int device = 0, sms = 0, per_sm = 1 << 30;
  OVERLAPSIM_TRY((prepare<kTokenTiles, false, false>(&per_sm)));
  OVERLAPSIM_TRY((prepare<kTokenTiles, true, false>(&per_sm)));
  if constexpr (has_early<kTokenTiles>()) {
    OVERLAPSIM_TRY((prepare<kTokenTiles, false, true>(&per_sm)));
    OVERLAPSIM_TRY((prepare<kTokenTiles, true, true>(&per_sm)));
  }
  if constexpr (has_last_wave<kTokenTiles>()) {
    OVERLAPSIM_TRY((prepare<kTokenTiles, false, false, true>(&per_sm)));
    OVERLAPSIM_TRY((prepare<kTokenTiles, true, false, true>(&per_sm)));
  }
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // One grid for every load form and claim: every CTA of it must be resident under each.
  *ctas = sms * per_sm;
  return Status::success();
}

template <int kTokenTiles, bool kEarlyClaim, bool kLastWave = false>
void launch_as(const GemvKernelArgs& args, int grid, cudaStream_t stream) {
  if (args.l2_prefetch)
    gemv_allreduce_kernel<kTokenTiles, true, kEarlyClaim, kLastWave>
        <<<grid, kThreads, shared_bytes<kTokenTiles>(), stream>>>(args);
  else
    gemv_allreduce_kernel<kTokenTiles, false, kEarlyClaim, kLastWave>
        <<<grid, kThreads, shared_bytes<kTokenTiles>(), stream>>>(args);
}

template <int kTokenTiles>
Status launch(const GemvKernelArgs& args, int grid, cudaStream_t stream) {
  bool done = false;
  if constexpr (has_last_wave<kTokenTiles>()) {
    if (args.last_wave_slices > 0) {
      launch_as<kTokenTiles, false, true>(args, grid, stream);
      done = true;
    }
  }
  if constexpr (has_early<kTokenTiles>()) {
    if (!done && args.early_claim) {
      launch_as<kTokenTiles, true>(args, grid, stream);
      done = true;
    }
  }
  if (!done) launch_as<kTokenTiles, false>(args, grid, stream);
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
  const int s = args.k_splits;
  const std::int64_t slices = args.n / kSliceCols, tail = args.last_wave_slices;
  const int ts = args.last_wave_splits;
  const std::int64_t units = (slices - tail) * s + tail * ts;
  const bool bad_last_wave =
      tail < 0 || tail > slices ||
      (tail > 0 &&
       (args.tokens > kLastWaveMaxTokens || args.early_claim || ts < 2 || ts > kMaxKSplits ||
        (args.k / 32 + kLastWaveChunks - 1) / kLastWaveChunks < ts || args.partials == nullptr ||
        args.arrivals == nullptr));
  if (bad_last_wave || args.tokens < 1 || args.tokens > kMaxTokens || args.n % kSliceCols != 0 ||
      args.k % 32 != 0 || args.world < 1 || args.world > kMaxWorld || grid < 1 || s < 1 ||
      s > kMaxKSplits || args.k / 32 < s ||
      (s > 1 && (args.partials == nullptr || args.arrivals == nullptr)) ||
      (units > grid && args.tickets == nullptr) ||
      (args.push && args.world > 1 && (args.epoch == 0 || args.timed_out == nullptr)))
    return Status::failure("fused gemv+allreduce: bad launch (tokens " +
                           std::to_string(args.tokens) + ", n " + std::to_string(args.n) + ", k " +
                           std::to_string(args.k) + ", world " + std::to_string(args.world) +
                           ", grid " + std::to_string(grid) + ", k splits " + std::to_string(s) +
                           ", last wave " + std::to_string(tail) + " x " + std::to_string(ts) +
                           ")");
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
  int ctas = 0;  // prepares every instantiation
  OVERLAPSIM_TRY(max_ctas<1>(&ctas));
  OVERLAPSIM_TRY(max_ctas<2>(&ctas));
  OVERLAPSIM_TRY(max_ctas<4>(&ctas));
  OVERLAPSIM_TRY(max_ctas<8>(&ctas));
  return Status::success();
}

}  // namespace overlapsim::kernels::fused
