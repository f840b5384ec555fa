#pragma once
// The multi-GPU harness: one rank per GPU, each with its NCCL communicator, a compute
// stream and a high-priority communication stream.
//   Thread mode (default): one process, one thread per local GPU; rank r uses GPU r; the
//     ncclUniqueId is shared between the threads.
//   MPI mode (built with OVERLAPSIM_MPI, run under mpirun): one rank per process, GPU =
//     local rank modulo the visible GPUs, the id broadcast with MPI.
// Rank bodies return a Status; if one fails, the others are told (thread mode) or run
// into their deadline (MPI), every communicator is aborted and the failure comes back.
// C++17.
#include <cuda_runtime.h>

#include <functional>

#include "kernels/common/status.hpp"
#include "kernels/harness/comm.hpp"

namespace overlapsim::kernels {

struct RankContext {
  CommHandle comm;
  int device = 0;
  cudaStream_t compute_stream = nullptr;  // default (lowest) priority
  cudaStream_t comm_stream = nullptr;     // highest priority the device offers
};

struct HarnessOptions {
  int world = 0;             // thread mode: ranks (GPUs) to use, 0 = every visible GPU
  double timeout_s = 120.0;  // bound on any single wait (init, collective, stream drain)
  bool use_mpi = false;      // MPI mode; needs a build with OVERLAPSIM_MPI
  // Non-blocking communicators (the default) bound every NCCL call: a call that returns
  // ncclInProgress is settled against the deadline. Blocking ones (NCCL's own default)
  // are what timings use: on 2 x H200 (NCCL 2.28.9) a non-blocking communicator added
  // 40-80 us of host time to every NCCL call (1 MiB allreduce: 18 us blocking, 61 us
  // non-blocking), which the GPU sees as idle time. With blocking communicators, stream
  // waits stay bounded (event polling with a deadline, then ncclCommAbort), init starts
  // only once every rank is ready, and collective channels connect during init
  // (NCCL_RUNTIME_CONNECT=0), a failed rank aborts its own communicator at once, and
  // (thread mode) ranks finalize only after every body succeeded. What stays unbounded
  // is a NCCL call that itself blocks: init while a peer dies mid-init, and send/recv
  // (all-to-all), whose peer connections NCCL still makes lazily in the first call.
  bool blocking_comms = false;
  // Every stream wait and rendezvous logs its rank on stderr (CommHandle::trace).
  bool trace = false;
};

using RankBody = std::function<Status(RankContext&)>;

// Drains both streams of this rank and meets the other rank threads (comm.hpp quiesce):
// the fence runners put around every allocation and free phase.
Status quiesce(RankContext& ctx, const char* what);

// Runs `body` once on every rank and returns the first real failure (not the echoes of
// "peer failed" on the other ranks), or success.
Status run_ranks(const HarnessOptions& options, const RankBody& body);

// Sets NCCL_NVLS_ENABLE=0 and NCCL_RUNTIME_CONNECT=0 unless already set; run_ranks does
// this before NCCL starts.
void set_nccl_environment(const HarnessOptions& options);

// Number of GPUs this process can see (0 when there is no driver or no device).
int visible_gpu_count();

// True when this build has MPI mode.
bool mpi_available();

}  // namespace overlapsim::kernels
