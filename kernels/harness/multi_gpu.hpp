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
  int world = 0;            // thread mode: ranks (GPUs) to use, 0 = every visible GPU
  double timeout_s = 120.0; // bound on any single wait (init, collective, stream drain)
  bool use_mpi = false;     // MPI mode; needs a build with OVERLAPSIM_MPI
  // Blocking communicators (NCCL's default) or non-blocking ones. Measured on 2 x H200
  // (NCCL 2.28): a non-blocking communicator adds ~80 us of host time to every NCCL call
  // (1 MiB allreduce: 96 us vs 17 us), which the GPU sees as idle time, so timings use
  // blocking ones. Then stream waits stay bounded (event polling with a deadline, then
  // ncclCommAbort), init starts only once every rank is ready and collective channels
  // connect during init (NCCL_RUNTIME_CONNECT=0), but a NCCL call that itself blocks
  // (a first send/recv connection with a peer that died) has no deadline. Non-blocking
  // communicators bound every call.
  bool blocking_comms = true;
};

using RankBody = std::function<Status(RankContext&)>;

// Runs `body` once on every rank and returns the first real failure (not the echoes of
// "peer failed" on the other ranks), or success.
Status run_ranks(const HarnessOptions& options, const RankBody& body);

// Sets NCCL_NVLS_ENABLE=0 (and, for blocking communicators, NCCL_RUNTIME_CONNECT=0)
// unless already set; run_ranks does this before NCCL starts.
void set_nccl_environment(const HarnessOptions& options);

// Number of GPUs this process can see (0 when there is no driver or no device).
int visible_gpu_count();

// True when this build has MPI mode.
bool mpi_available();

}  // namespace overlapsim::kernels
