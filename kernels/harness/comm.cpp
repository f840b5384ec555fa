#include "kernels/harness/comm.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/free_queue.hpp"

namespace overlapsim::kernels {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point deadline_after(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

bool peer_has_failed(const CommHandle& handle) {
  return handle.peer_failed != nullptr && handle.peer_failed->load();
}

// Stream drains: a short sleep (the timed region has already been enqueued).
void pause_briefly() { std::this_thread::sleep_for(std::chrono::microseconds(50)); }

// handle.trace: every stream wait and rendezvous says on stderr which rank starts it, so a
// run that hangs (and is killed before its deadline) still shows where each rank was.
void trace(const CommHandle& handle, const char* kind, const char* what) {
  if (!handle.trace) return;
  static const Clock::time_point start = Clock::now();
  std::fprintf(stderr, "[trace %.6f s] rank %d %s: %s\n",
               std::chrono::duration<double>(Clock::now() - start).count(), handle.rank, kind,
               what);
}

}  // namespace

Status abort_comm(CommHandle& handle, const std::string& reason) {
  // Said before the abort: ncclCommAbort itself can block behind a kernel that never
  // ends, and then this is the only trace of why the rank gave up.
  std::fprintf(stderr, "overlapsim harness: rank %d: %s: aborting its communicator\n", handle.rank,
               reason.c_str());
  if (handle.comm != nullptr) {
    ncclCommAbort(handle.comm);  // best effort: the communicator is unusable either way
    handle.comm = nullptr;
  }
  return Status::failure("rank " + std::to_string(handle.rank) + ": " + reason +
                         " (communicator aborted)");
}

Status nccl_settle(CommHandle& handle, ncclResult_t result, const char* where) {
  if (result != ncclSuccess && result != ncclInProgress)
    return abort_comm(handle, std::string(where) + ": " + ncclGetErrorString(result));
  if (result == ncclSuccess) return Status::success();
  const auto deadline = deadline_after(handle.timeout_s);
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t query = ncclCommGetAsyncError(handle.comm, &state);
    if (query != ncclSuccess)
      return abort_comm(
          handle, std::string(where) + ": ncclCommGetAsyncError: " + ncclGetErrorString(query));
    if (state == ncclSuccess) return Status::success();
    if (state != ncclInProgress)
      return abort_comm(handle, std::string(where) + ": " + ncclGetErrorString(state));
    if (peer_has_failed(handle)) return abort_comm(handle, std::string(where) + ": peer failed");
    if (Clock::now() > deadline)
      return abort_comm(handle, std::string(where) + ": timed out after " +
                                    std::to_string(handle.timeout_s) + " s");
    // Spin, do not sleep: enqueues sit inside timed loops, and a sleep's timer slack
    // (~100 us measured on the H200 machines) would leave the GPU idle behind the host.
    std::this_thread::yield();
  }
}

Status wait_stream(CommHandle& handle, cudaStream_t stream, const char* what) {
  trace(handle, "wait", what);
  cudaEvent_t done = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  cudaError_t record = cudaEventRecord(done, stream);
  if (record != cudaSuccess) {
    cudaEventDestroy(done);
    return abort_comm(handle,
                      std::string(what) + ": cudaEventRecord: " + cudaGetErrorString(record));
  }
  const auto deadline = deadline_after(handle.timeout_s);
  Status result = Status::success();
  for (;;) {
    cudaError_t query = cudaEventQuery(done);
    if (query == cudaSuccess) break;
    if (query != cudaErrorNotReady) {
      result = abort_comm(handle, std::string(what) + ": " + cudaGetErrorString(query));
      break;
    }
    if (handle.comm != nullptr) {
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(handle.comm, &state);
      if (state != ncclSuccess && state != ncclInProgress) {
        result = abort_comm(handle, std::string(what) + ": NCCL: " + ncclGetErrorString(state));
        break;
      }
    }
    if (peer_has_failed(handle)) {
      result = abort_comm(handle, std::string(what) + ": peer failed");
      break;
    }
    if (Clock::now() > deadline) {
      result = abort_comm(handle, std::string(what) + ": timed out after " +
                                      std::to_string(handle.timeout_s) + " s");
      break;
    }
    pause_briefly();
  }
  // After an abort the stream may never drain; destroying the event is still safe.
  cudaEventDestroy(done);
  return result;
}

namespace {

Status meet(CommHandle& handle, const char* what) {
  trace(handle, "rendezvous", what);
  switch (handle.barrier->arrive_and_wait(handle.timeout_s, handle.peer_failed)) {
    case RankBarrier::Outcome::Passed:
      return Status::success();
    case RankBarrier::Outcome::Aborted:
      return abort_comm(handle, std::string(what) + ": rendezvous: peer failed");
    case RankBarrier::Outcome::TimedOut:
      break;
  }
  return abort_comm(handle, std::string(what) + ": rendezvous: timed out after " +
                                std::to_string(handle.timeout_s) + " s");
}

}  // namespace

Status quiesce(CommHandle& handle, std::initializer_list<cudaStream_t> streams, const char* what) {
  for (cudaStream_t stream : streams) OVERLAPSIM_TRY(wait_stream(handle, stream, what));
  FreeQueue* frees = thread_free_queue();
  if (handle.barrier == nullptr) {
    if (frees != nullptr) frees->release_all();
    return Status::success();
  }
  OVERLAPSIM_TRY(meet(handle, what));
  // Every rank has drained and waits at the second meeting below, so no collective is in
  // flight anywhere while the parked frees run (free_queue.hpp).
  if (frees != nullptr) frees->release_all();
  return meet(handle, what);
}

namespace {

// This rank thread's scratch for allreduce_host, kept from call to call. A free after the
// collective would race the peers' next collective (timing loops enqueue one right after
// reading their times), and that race is the hang of free_queue.hpp; it grows only
// between the fences of a call, where every rank makes the same decision.
class HostReduceScratch {
 public:
  ~HostReduceScratch() {
    if (staging_ != nullptr) cudaFreeHost(staging_);  // thread exit: no peer left to race
  }
  Status reserve(std::size_t bytes) {
    int device = -1;
    CUDA_CHECK(cudaGetDevice(&device));
    if (bytes <= capacity_ && device == device_) return Status::success();
    std::size_t capacity = 4096;
    while (capacity < bytes) capacity *= 2;
    OVERLAPSIM_TRY(scratch_.allocate(capacity));
    if (staging_ != nullptr) free_pinned_host_memory(staging_);
    staging_ = nullptr;
    capacity_ = 0;
    // Pinned, so neither copy blocks the host behind a collective that may hang.
    void* staging = nullptr;
    CUDA_CHECK(cudaMallocHost(&staging, capacity));
    staging_ = static_cast<double*>(staging);
    capacity_ = capacity;
    device_ = device;
    return Status::success();
  }
  double* staging() const { return staging_; }
  void* scratch() const { return scratch_.data(); }

 private:
  DeviceBuffer scratch_;
  double* staging_ = nullptr;
  std::size_t capacity_ = 0;
  int device_ = -1;
};

thread_local HostReduceScratch t_reduce_scratch;

}  // namespace

Status allreduce_host(CommHandle& handle, cudaStream_t stream, std::vector<double>& values,
                      ncclRedOp_t op) {
  if (values.empty()) return Status::success();
  const std::size_t bytes = values.size() * sizeof(double);
  // A scratch that has to grow does so while no peer has a NCCL kernel in flight: every
  // rank drains and meets first, and meets again before the collective (a peer still
  // allocating must not be waited for by our kernel).
  OVERLAPSIM_TRY(quiesce(handle, {stream}, "allreduce_host: before allocating"));
  HostReduceScratch& s = t_reduce_scratch;
  OVERLAPSIM_TRY(s.reserve(bytes));
  OVERLAPSIM_TRY(quiesce(handle, {}, "allreduce_host: after allocating"));
  std::copy(values.begin(), values.end(), s.staging());
  CUDA_CHECK(cudaMemcpyAsync(s.scratch(), s.staging(), bytes, cudaMemcpyHostToDevice, stream));
  NCCL_SETTLE(handle, ncclAllReduce(s.scratch(), s.scratch(), values.size(), ncclFloat64, op,
                                    handle.comm, stream));
  CUDA_CHECK(cudaMemcpyAsync(s.staging(), s.scratch(), bytes, cudaMemcpyDeviceToHost, stream));
  OVERLAPSIM_TRY(wait_stream(handle, stream, "allreduce_host"));
  std::copy(s.staging(), s.staging() + values.size(), values.begin());
  return Status::success();
}

std::string nccl_version_string() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "unknown";
  // NCCL >= 2.9 encodes MAJOR*10000 + MINOR*100 + PATCH.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

}  // namespace overlapsim::kernels
