#pragma once
// Frees that wait for the next fence. cudaFree and cudaFreeHost wait for work on every
// GPU that maps the memory (with peer access, every peer GPU). A cudaMalloc or a pageable
// copy can wait behind them on the driver's page-table lock. Suppose a rank thread makes
// such a call while a peer GPU runs a collective kernel that needs this rank's part.
// The rank can never enqueue its part, and nothing ever ends: the peer GPU spins and
// every other GPU idles. PyTorch (its cudaFree mutex) and XLA (a barrier after
// communicator init) guard against the same interaction. The tile-wise all-to-all hang
// of docs/kernels/log.md looked like this.
//
// The harness therefore installs a FreeQueue in every rank thread (thread mode), and
// DeviceBuffer and the GEMM workspaces hand their frees to it. quiesce() releases the
// queue between two rendezvous of all rank threads, when every rank has drained its
// streams and none can start a collective. Outside rank threads (tests, single-GPU
// tools) frees happen at once. C++17, no CUDA in this header.
#include <cstddef>
#include <vector>

namespace overlapsim::kernels {

struct PendingFree {
  void* ptr = nullptr;
  int device = -1;    // device memory: the GPU it lives on
  bool host = false;  // pinned host memory (cudaMallocHost / cudaHostAlloc)
};

class FreeQueue {
 public:
  using Releaser = void (*)(const PendingFree&);
  explicit FreeQueue(Releaser releaser) : releaser_(releaser) {}
  ~FreeQueue() { release_all(); }
  FreeQueue(const FreeQueue&) = delete;
  FreeQueue& operator=(const FreeQueue&) = delete;

  void push(const PendingFree& f) { pending_.push_back(f); }
  std::size_t size() const { return pending_.size(); }
  // Frees everything parked, in the order it was parked; returns how many.
  std::size_t release_all();

 private:
  Releaser releaser_;
  std::vector<PendingFree> pending_;
};

// The calling thread's queue, or null when none is installed.
FreeQueue* thread_free_queue();

// Installs `queue` as this thread's for the scope's lifetime (then releases what is left
// and restores the previous one). Not nestable across threads; one per rank thread.
class ScopedFreeQueue {
 public:
  explicit ScopedFreeQueue(FreeQueue& queue);
  ~ScopedFreeQueue();
  ScopedFreeQueue(const ScopedFreeQueue&) = delete;
  ScopedFreeQueue& operator=(const ScopedFreeQueue&) = delete;

 private:
  FreeQueue* previous_;
};

// Frees device memory `ptr` of `device` (cudaFree), or parks it in this thread's queue.
void free_device_memory(void* ptr, int device);
// Frees pinned host memory (cudaFreeHost), or parks it in this thread's queue.
void free_pinned_host_memory(void* ptr);
// What a rank thread's queue releases with: the CUDA free for each kind.
void release_now(const PendingFree& f);

}  // namespace overlapsim::kernels
