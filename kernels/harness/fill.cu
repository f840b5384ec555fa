#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/fill.hpp"
#include "kernels/harness/random_values.hpp"

namespace overlapsim::kernels {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::size_t count) {
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::min<std::size_t>(std::max<std::size_t>(blocks, 1), 65535u * 8));
}

__global__ void fill_random_kernel(std::uint16_t* data, std::size_t count, DType dtype,
                                   std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x)
    data[i] = random_bits(dtype, seed, i);
}

__global__ void fill_random_fp8_kernel(std::uint8_t* data, std::size_t count, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x)
    data[i] = random_fp8_bits(seed, i);
}

__global__ void fill_indices_kernel(std::int32_t* data, std::size_t count, std::int32_t range,
                                    std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x)
    data[i] = random_index(seed, i, range);
}

__global__ void count_nonfinite_kernel(const std::uint16_t* data, std::size_t count, DType dtype,
                                       unsigned long long* result) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x)
    local += bits_nonfinite(dtype, data[i]) ? 1 : 0;
  if (local) atomicAdd(result, local);
}

__global__ void count_mismatches_kernel(const std::uint16_t* a, const std::uint16_t* b,
                                        std::size_t count, DType dtype, float rel_tol,
                                        float abs_tol, unsigned long long* result) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const float x = bits_to_float(dtype, a[i]);
    const float y = bits_to_float(dtype, b[i]);
    const bool finite = !bits_nonfinite(dtype, a[i]) && !bits_nonfinite(dtype, b[i]);
    const float tol = abs_tol + rel_tol * fmaxf(fabsf(x), fabsf(y));
    local += (!finite || fabsf(x - y) > tol) ? 1 : 0;
  }
  if (local) atomicAdd(result, local);
}

__global__ void gather_kernel(const std::uint16_t* data, DType dtype, const std::uint64_t* indices,
                              std::size_t count, float* values) {
  const std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (i < count) values[i] = bits_to_float(dtype, data[indices[i]]);
}

// A count over `count` 16-bit elements: a zeroed device counter, `launch(counter)` when
// there is anything to count, then the counter read back into *result.
template <class Launch>
Status count_16bit(const char* what, std::size_t count, DType dtype, cudaStream_t stream,
                   std::uint64_t* result, Launch&& launch) {
  if (dtype == DType::FP8_E4M3)
    return Status::failure(std::string(what) + ": reads 16-bit outputs (bf16, fp16), not fp8");
  DeviceBuffer counter;
  OVERLAPSIM_TRY(counter.allocate(sizeof(unsigned long long)));
  CUDA_CHECK(cudaMemsetAsync(counter.data(), 0, sizeof(unsigned long long), stream));
  if (count > 0) {
    launch(counter.as<unsigned long long>());
    CUDA_CHECK(cudaGetLastError());
  }
  unsigned long long host = 0;
  CUDA_CHECK(cudaMemcpyAsync(&host, counter.data(), sizeof(host), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  *result = host;
  return Status::success();
}

}  // namespace

Status fill_random(void* data, std::size_t count, DType dtype, std::uint64_t seed,
                   cudaStream_t stream) {
  if (count == 0) return Status::success();
  if (dtype == DType::FP8_E4M3) {
    fill_random_fp8_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<std::uint8_t*>(data), count, seed);
    CUDA_CHECK(cudaGetLastError());
    return Status::success();
  }
  fill_random_kernel<<<blocks_for(count), kThreads, 0, stream>>>(static_cast<std::uint16_t*>(data),
                                                                 count, dtype, seed);
  CUDA_CHECK(cudaGetLastError());
  return Status::success();
}

Status fill_indices(std::int32_t* data, std::size_t count, std::int32_t range, std::uint64_t seed,
                    cudaStream_t stream) {
  if (count == 0) return Status::success();
  if (range < 1) return Status::failure("fill_indices: range must be >= 1");
  fill_indices_kernel<<<blocks_for(count), kThreads, 0, stream>>>(data, count, range, seed);
  CUDA_CHECK(cudaGetLastError());
  return Status::success();
}

Status poison(void* data, std::size_t count, cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(data, 0xFF, count * 2, stream));
  return Status::success();
}

Status count_nonfinite(const void* data, std::size_t count, DType dtype, cudaStream_t stream,
                       std::uint64_t* result) {
  return count_16bit("count_nonfinite", count, dtype, stream, result,
                     [&](unsigned long long* counter) {
                       count_nonfinite_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
                           static_cast<const std::uint16_t*>(data), count, dtype, counter);
                     });
}

Status count_mismatches(const void* a, const void* b, std::size_t count, DType dtype,
                        double rel_tol, double abs_tol, cudaStream_t stream,
                        std::uint64_t* result) {
  return count_16bit("count_mismatches", count, dtype, stream, result,
                     [&](unsigned long long* counter) {
                       count_mismatches_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
                           static_cast<const std::uint16_t*>(a),
                           static_cast<const std::uint16_t*>(b), count, dtype,
                           static_cast<float>(rel_tol), static_cast<float>(abs_tol), counter);
                     });
}

Status gather_values(const void* data, DType dtype, const std::vector<std::uint64_t>& indices,
                     cudaStream_t stream, std::vector<double>* values) {
  if (dtype == DType::FP8_E4M3)
    return Status::failure("gather_values: reads 16-bit outputs (bf16, fp16), not fp8");
  values->assign(indices.size(), 0.0);
  if (indices.empty()) return Status::success();
  DeviceBuffer device_indices;
  DeviceBuffer device_values;
  OVERLAPSIM_TRY(device_indices.allocate(indices.size() * sizeof(std::uint64_t)));
  OVERLAPSIM_TRY(device_values.allocate(indices.size() * sizeof(float)));
  CUDA_CHECK(cudaMemcpyAsync(device_indices.data(), indices.data(),
                             indices.size() * sizeof(std::uint64_t), cudaMemcpyHostToDevice,
                             stream));
  const unsigned blocks = static_cast<unsigned>((indices.size() + kThreads - 1) / kThreads);
  gather_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const std::uint16_t*>(data), dtype,
                                                 device_indices.as<std::uint64_t>(), indices.size(),
                                                 device_values.as<float>());
  CUDA_CHECK(cudaGetLastError());
  std::vector<float> host(indices.size());
  CUDA_CHECK(cudaMemcpyAsync(host.data(), device_values.data(), host.size() * sizeof(float),
                             cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  for (std::size_t i = 0; i < host.size(); ++i) (*values)[i] = host[i];
  return Status::success();
}

}  // namespace overlapsim::kernels
