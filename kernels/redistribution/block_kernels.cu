#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "kernels/redistribution/block_kernels.hpp"

namespace overlapsim::kernels::redistribution {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 132 * 16;

unsigned blocks_for(std::uint64_t count) {
  const std::uint64_t b = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::min<std::uint64_t>(std::max<std::uint64_t>(b, 1), kMaxBlocks));
}

struct CopyDesc {
  int dims = 0;
  std::int64_t extent[kMaxDims];  // innermost last
  std::int64_t src_stride[kMaxDims];
  std::int64_t dst_stride[kMaxDims];
  std::uint64_t total = 0;
};

// Source and destination offsets (units) of the box's i-th unit, row-major.
template <typename Index>
__device__ void unit_offsets(Index i, const CopyDesc& d, std::int64_t* s, std::int64_t* t) {
  Index rest = i;
  std::int64_t so = 0, to = 0;
  for (int k = d.dims - 1; k > 0; --k) {
    const Index e = static_cast<Index>(d.extent[k]);
    const Index c = rest % e;
    rest /= e;
    so += static_cast<std::int64_t>(c) * d.src_stride[k];
    to += static_cast<std::int64_t>(c) * d.dst_stride[k];
  }
  *s = so + static_cast<std::int64_t>(rest) * d.src_stride[0];
  *t = to + static_cast<std::int64_t>(rest) * d.dst_stride[0];
}

// Grid-stride over the box's units of U, four loads in flight per thread before their
// stores (one at a time left HBM bandwidth unused); Index is 32-bit where the box allows
// (the divisions that decode an index are the kernel's main arithmetic).
template <typename U, typename Index>
__global__ void copy_box_kernel(const U* __restrict__ src, U* __restrict__ dst, CopyDesc d) {
  constexpr int kInFlight = 4;
  const Index total = static_cast<Index>(d.total);
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (kInFlight - 1) * stride < total; i += kInFlight * stride) {
    U v[kInFlight];
    std::int64_t so[kInFlight], to[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      unit_offsets<Index>(i + u * stride, d, &so[u], &to[u]);
      v[u] = src[so[u]];
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) dst[to[u]] = v[u];
  }
  for (; i < total; i += stride) {
    std::int64_t so = 0, to = 0;
    unit_offsets<Index>(i, d, &so, &to);
    dst[to] = src[so];
  }
}

template <typename U>
Status launch_copy(const void* src, void* dst, const CopyDesc& d, cudaStream_t stream) {
  const unsigned blocks = blocks_for(d.total);
  if (d.total < (std::uint64_t{1} << 31))
    copy_box_kernel<U, std::uint32_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<const U*>(src), static_cast<U*>(dst), d);
  else
    copy_box_kernel<U, std::uint64_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<const U*>(src), static_cast<U*>(dst), d);
  CUDA_CHECK(cudaGetLastError());
  return Status::success();
}

struct FillDesc {
  int dims = 0;
  std::int64_t shape[kMaxDims];
  std::int64_t lo[kMaxDims];
  std::int64_t extent[kMaxDims];
  std::uint64_t total = 0;
  int combos = 1;
  int summed_count = 0;
  int summed[64];
};

__device__ std::uint16_t mixed_bits(std::uint64_t i) {
  std::uint64_t z = i + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<std::uint16_t>(z ^ (z >> 31));
}

__device__ int addend(int k, int combos, std::int64_t i) {
  if (k > 0) return static_cast<int>((i + 3 * k) % 5);
  int v = static_cast<int>(i % 61);
  for (int j = 1; j < combos; ++j) v -= static_cast<int>((i + 3 * j) % 5);
  return v;
}

__global__ void fill_block_kernel(std::uint16_t* data, FillDesc d) {
  for (std::uint64_t e = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; e < d.total;
       e += std::uint64_t{gridDim.x} * blockDim.x) {
    // Global row-major index of local element e.
    std::uint64_t rest = e;
    std::int64_t coord[kMaxDims];
    for (int k = d.dims - 1; k >= 0; --k) {
      coord[k] = d.lo[k] + static_cast<std::int64_t>(rest % d.extent[k]);
      rest /= d.extent[k];
    }
    std::int64_t i = 0;
    for (int k = 0; k < d.dims; ++k) i = i * d.shape[k] + coord[k];
    if (d.combos == 1) {
      data[e] = mixed_bits(static_cast<std::uint64_t>(i));
    } else {
      int v = 0;
      for (int s = 0; s < d.summed_count; ++s) v += addend(d.summed[s], d.combos, i);
      data[e] = __bfloat16_as_ushort(__float2bfloat16(static_cast<float>(v)));
    }
  }
}

__global__ void count_differences_kernel(const std::uint16_t* a, const std::uint16_t* b,
                                         std::size_t count, unsigned long long* result) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x)
    local += a[i] != b[i] ? 1 : 0;
  if (local) atomicAdd(result, local);
}

}  // namespace

Status copy_box(const void* src, const std::vector<std::int64_t>& src_stride, void* dst,
                const std::vector<std::int64_t>& dst_stride, std::vector<std::int64_t> extent,
                int element_bytes, cudaStream_t stream) {
  // In bytes, outermost first, with the element's bytes as the innermost dimension (stride
  // one byte); unit dimensions dropped.
  std::vector<std::int64_t> e, ss, ds;
  for (std::size_t i = 0; i < extent.size(); ++i) {
    if (extent[i] <= 0) return Status::success();
    if (extent[i] == 1) continue;
    e.push_back(extent[i]);
    ss.push_back(src_stride[i] * element_bytes);
    ds.push_back(dst_stride[i] * element_bytes);
  }
  e.push_back(element_bytes);
  ss.push_back(1);
  ds.push_back(1);
  // Merge a dimension into the next inner one where both arrays continue across it.
  for (std::size_t k = e.size() - 1; k > 0; --k)
    if (ss[k - 1] == e[k] * ss[k] && ds[k - 1] == e[k] * ds[k]) {
      e[k] *= e[k - 1];
      e.erase(e.begin() + static_cast<std::ptrdiff_t>(k - 1));
      ss.erase(ss.begin() + static_cast<std::ptrdiff_t>(k - 1));
      ds.erase(ds.begin() + static_cast<std::ptrdiff_t>(k - 1));
    }
  if (e.size() > static_cast<std::size_t>(kMaxDims))
    return Status::failure("copy_box: more than " + std::to_string(kMaxDims) +
                           " strided dimensions after merging");
  // The innermost dimension is a contiguous run of e.back() bytes: copy it in the widest
  // unit dividing the run, both base addresses and every outer stride.
  const auto fits = [&](int u) {
    if (e.back() % u || reinterpret_cast<std::uintptr_t>(src) % u ||
        reinterpret_cast<std::uintptr_t>(dst) % u)
      return false;
    for (std::size_t i = 0; i + 1 < e.size(); ++i)
      if (ss[i] % u || ds[i] % u) return false;
    return true;
  };
  int unit = 16;
  while (unit > 1 && !fits(unit)) unit /= 2;
  CopyDesc d;
  d.dims = static_cast<int>(e.size());
  d.total = 1;
  for (std::size_t i = 0; i < e.size(); ++i) {
    const bool last = i + 1 == e.size();
    d.extent[i] = last ? e[i] / unit : e[i];
    d.src_stride[i] = last ? 1 : ss[i] / unit;
    d.dst_stride[i] = last ? 1 : ds[i] / unit;
    d.total *= static_cast<std::uint64_t>(d.extent[i]);
  }
  switch (unit) {
    case 16: return launch_copy<uint4>(src, dst, d, stream);
    case 8: return launch_copy<uint2>(src, dst, d, stream);
    case 4: return launch_copy<std::uint32_t>(src, dst, d, stream);
    case 2: return launch_copy<std::uint16_t>(src, dst, d, stream);
    default: return launch_copy<std::uint8_t>(src, dst, d, stream);
  }
}

Status fill_block(void* data, const std::vector<std::int64_t>& shape,
                  const std::vector<std::int64_t>& lo, const std::vector<std::int64_t>& extent,
                  const ValueSpec& spec, cudaStream_t stream) {
  if (shape.size() > static_cast<std::size_t>(kMaxDims) || shape.size() != lo.size() ||
      shape.size() != extent.size())
    return Status::failure("fill_block: bad dimensions");
  if (spec.summed.size() > 64 || spec.summed.empty())
    return Status::failure("fill_block: 1..64 summed addends expected");
  FillDesc d;
  d.dims = static_cast<int>(shape.size());
  d.total = 1;
  for (int k = 0; k < d.dims; ++k) {
    d.shape[k] = shape[static_cast<std::size_t>(k)];
    d.lo[k] = lo[static_cast<std::size_t>(k)];
    d.extent[k] = extent[static_cast<std::size_t>(k)];
    d.total *= static_cast<std::uint64_t>(d.extent[k]);
  }
  d.combos = spec.combos;
  d.summed_count = static_cast<int>(spec.summed.size());
  for (std::size_t s = 0; s < spec.summed.size(); ++s) d.summed[s] = spec.summed[s];
  if (d.total == 0) return Status::success();
  fill_block_kernel<<<blocks_for(d.total), kThreads, 0, stream>>>(static_cast<std::uint16_t*>(data),
                                                                  d);
  CUDA_CHECK(cudaGetLastError());
  return Status::success();
}

Status count_differences(const void* a, const void* b, std::size_t count, void* counter,
                         cudaStream_t stream, std::uint64_t* result) {
  CUDA_CHECK(cudaMemsetAsync(counter, 0, sizeof(unsigned long long), stream));
  if (count > 0) {
    count_differences_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<const std::uint16_t*>(a), static_cast<const std::uint16_t*>(b), count,
        static_cast<unsigned long long*>(counter));
    CUDA_CHECK(cudaGetLastError());
  }
  unsigned long long host = 0;
  CUDA_CHECK(cudaMemcpyAsync(&host, counter, sizeof(host), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  *result = host;
  return Status::success();
}

}  // namespace overlapsim::kernels::redistribution
