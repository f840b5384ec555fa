#include "kernels/harness/multi_gpu.hpp"

#include <stdlib.h>

#include <atomic>
#include <barrier>
#include <string>
#include <thread>
#include <vector>

#include "kernels/harness/free_queue.hpp"
#include "kernels/harness/rank_lifecycle.hpp"

namespace overlapsim::kernels {

Status run_ranks_mpi(const HarnessOptions& options, const RankBody& body);  // multi_gpu_mpi.cpp

Status quiesce(RankContext& ctx, const char* what) {
  return quiesce(ctx.comm, {ctx.compute_stream, ctx.comm_stream}, what);
}

int visible_gpu_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error for later callers
    return 0;
  }
  return count;
}

void set_nccl_environment(const HarnessOptions&) {
  // NVLS (NVLink multicast) can take a shared host's GPUs out of service; unless the
  // caller chose otherwise, NCCL must not use it (design.md, KINDS.md).
  setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);
  // Connect every collective channel during init (when all ranks are known to be
  // present) rather than inside the first collective, where with a blocking communicator
  // a vanished peer would block the host with no deadline. NCCL reads this once per
  // process, at the first init: set it for every kind of communicator.
  setenv("NCCL_RUNTIME_CONNECT", "0", /*overwrite=*/0);
}

Status run_ranks(const HarnessOptions& options, const RankBody& body) {
  set_nccl_environment(options);
  if (options.use_mpi) return run_ranks_mpi(options, body);
  const int gpus = visible_gpu_count();
  if (gpus == 0) return Status::failure("harness: no GPU is visible");
  const int world = options.world == 0 ? gpus : options.world;
  if (world < 1 || world > gpus)
    return Status::failure("harness: asked for " + std::to_string(options.world) + " ranks but " +
                           std::to_string(gpus) + " GPUs are visible");
  ncclUniqueId id;
  NCCL_CHECK(ncclGetUniqueId(&id));

  std::atomic<bool> failed{false};
  std::barrier prepared(world);
  std::barrier finished(world);
  RankBarrier rendezvous(world);
  std::vector<Status> statuses(world);
  std::vector<std::thread> threads;
  threads.reserve(world);
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      // Declared first, so it outlives every buffer of the body (free_queue.hpp).
      FreeQueue frees(&release_now);
      ScopedFreeQueue parked(frees);
      RankContext ctx;
      ctx.comm.peer_failed = &failed;
      ctx.comm.barrier = &rendezvous;
      Status status = prepare_rank(ctx, rank, rank, world, options);
      if (!status.ok) failed = true;
      prepared.arrive_and_wait();  // nobody enters NCCL init unless every rank can
      if (status.ok && failed) status = Status::failure("peer failed before NCCL init");
      if (status.ok) status = connect_rank(ctx, id, options);
      if (status.ok) status = body(ctx);
      if (!status.ok) {
        // Abort at once, before the rendezvous below: a peer may be inside a NCCL call
        // that only returns once this communicator is gone.
        failed = true;
        close_rank(ctx, true);
      }
      // Nobody finalizes unless every rank finished its body: ncclCommFinalize is
      // collective and, with a blocking communicator, would wait with no deadline for a
      // peer that has already aborted.
      finished.arrive_and_wait();
      if (status.ok) {
        Status closed = close_rank(ctx, failed.load());
        if (!closed.ok) {
          status = closed;
          failed = true;
        }
      }
      statuses[rank] = status;
    });
  }
  for (auto& t : threads) t.join();
  return first_failure(statuses.data(), world);
}

}  // namespace overlapsim::kernels
