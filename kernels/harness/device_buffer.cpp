#include "kernels/harness/device_buffer.hpp"

#include <cuda_runtime.h>

#include <utility>

#include "kernels/harness/free_queue.hpp"

namespace overlapsim::kernels {

void release_now(const PendingFree& f) {
  if (f.ptr == nullptr) return;
  // Destructors cannot report; a failed free here would mean a broken context anyway.
  if (f.host) {
    cudaFreeHost(f.ptr);
    return;
  }
  int current = -1;
  cudaGetDevice(&current);
  if (current != f.device) cudaSetDevice(f.device);
  cudaFree(f.ptr);
  if (current != f.device && current >= 0) cudaSetDevice(current);
}

void free_device_memory(void* ptr, int device) {
  if (ptr == nullptr) return;
  const PendingFree f{ptr, device, false};
  if (FreeQueue* q = thread_free_queue()) {
    q->push(f);
  } else {
    release_now(f);
  }
}

void free_pinned_host_memory(void* ptr) {
  if (ptr == nullptr) return;
  const PendingFree f{ptr, -1, true};
  if (FreeQueue* q = thread_free_queue()) {
    q->push(f);
  } else {
    release_now(f);
  }
}

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
  free_device_memory(ptr_, device_);  // in a rank thread: at the next quiesce()
  ptr_ = nullptr;
  bytes_ = 0;
}

}  // namespace overlapsim::kernels
