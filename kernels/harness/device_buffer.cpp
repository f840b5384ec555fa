#include "kernels/harness/device_buffer.hpp"

#include <cuda_runtime.h>

#include <utility>

namespace overlapsim::kernels {

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      device_(std::exchange(other.device_, -1)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    device_ = std::exchange(other.device_, -1);
  }
  return *this;
}

Status DeviceBuffer::allocate(std::size_t bytes) {
  release();
  if (bytes == 0) return Status::success();
  CUDA_CHECK(cudaGetDevice(&device_));
  CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  bytes_ = bytes;
  return Status::success();
}

void DeviceBuffer::release() {
  if (ptr_ == nullptr) return;
  // Destructors cannot report; a failed free here would mean a broken context anyway.
  int current = -1;
  cudaGetDevice(&current);
  if (current != device_) cudaSetDevice(device_);
  cudaFree(ptr_);
  if (current != device_ && current >= 0) cudaSetDevice(current);
  ptr_ = nullptr;
  bytes_ = 0;
}

}  // namespace overlapsim::kernels
