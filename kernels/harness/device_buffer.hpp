#pragma once
// Owning handle to one plain cudaMalloc allocation on the current device. In a rank
// thread its free waits for the next quiesce() (free_queue.hpp says why). C++17.
#include <cstddef>

#include "kernels/common/status.hpp"

namespace overlapsim::kernels {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Frees what was held, then allocates `bytes` (0 holds nothing) on the current device.
  Status allocate(std::size_t bytes);
  void release();

  void* data() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  int device_ = -1;  // freed with this device current
};

}  // namespace overlapsim::kernels
