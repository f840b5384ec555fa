#pragma once
// One rank's NCCL communicator and the bounded waits around it. With a non-blocking
// communicator (HarnessOptions::blocking_comms = false) no NCCL call can hang the host: a
// call that returns ncclInProgress is settled by spinning on ncclCommGetAsyncError against
// a deadline. Stream waits poll a CUDA event and NCCL's async error the same way, for
// either kind. A failure or a timeout
// aborts the communicator (ncclCommAbort) and comes back as a failed Status, which the
// harness turns into a non-zero exit. C++17.
#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <initializer_list>
#include <string>
#include <vector>

#include "kernels/common/status.hpp"
#include "kernels/harness/rank_barrier.hpp"

namespace overlapsim::kernels {

struct CommHandle {
  ncclComm_t comm = nullptr;
  int rank = 0;
  int world = 1;
  double timeout_s = 120.0;
  // Raised by the harness when another rank of this process failed: waits give up at
  // once instead of running into their deadline.
  const std::atomic<bool>* peer_failed = nullptr;
  // Thread mode: the rendezvous of this process's rank threads (quiesce() below); null in
  // MPI mode, where each process drives one GPU and the allocation hazard does not arise.
  RankBarrier* barrier = nullptr;
  // HarnessOptions::trace: wait_stream and quiesce say on stderr where this rank waits.
  bool trace = false;
};

// Aborts the communicator (if still alive) and returns a failure carrying `reason`.
Status abort_comm(CommHandle& handle, const std::string& reason);

// Turns the result of a NCCL call into a Status; ncclInProgress is waited out.
Status nccl_settle(CommHandle& handle, ncclResult_t result, const char* where);

// Waits for the work enqueued so far on `stream` (and for NCCL's async errors). With
// handle.trace set, this and quiesce() print "[trace T s] rank R wait|rendezvous: <what>"
// on stderr as they start (where a hung run's ranks were).
Status wait_stream(CommHandle& handle, cudaStream_t stream, const char* what);

// Drains `streams` of this rank, then meets the other rank threads at handle.barrier (just
// the drain when there is none). Call it before and after allocating or freeing device or
// pinned memory, creating or destroying communicators, so no rank maps memory while a
// peer's NCCL kernel waits for it (rank_barrier.hpp says why). Every rank must call it the
// same number of times; a rank that fails instead releases the others (peer_failed).
Status quiesce(CommHandle& handle, std::initializer_list<cudaStream_t> streams, const char* what);

// Element-wise reduction of host doubles over all ranks (ncclSum, ncclMax, ...), used
// outside timed regions for the max-over-ranks time and the summed wrong count.
Status allreduce_host(CommHandle& handle, cudaStream_t stream, std::vector<double>& values,
                      ncclRedOp_t op);

// The linked NCCL version as "2.28.3".
std::string nccl_version_string();

}  // namespace overlapsim::kernels

// A NCCL call on a CommHandle's communicator, settled; returns on failure.
#define NCCL_SETTLE(handle, call) \
  OVERLAPSIM_TRY(::overlapsim::kernels::nccl_settle((handle), (call), OVERLAPSIM_WHERE ": " #call))
