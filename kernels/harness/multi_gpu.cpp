#include "kernels/harness/multi_gpu.hpp"

#include <stdlib.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "kernels/harness/rank_lifecycle.hpp"

namespace overlapsim::kernels {

Status run_ranks_mpi(const HarnessOptions& options, const RankBody& body);  // multi_gpu_mpi.cpp

int visible_gpu_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error for later callers
    return 0;
  }
  return count;
}

void keep_nvlink_multicast_off() {
  // NVLS (NVLink multicast) can take a shared host's GPUs out of service; unless the
  // caller chose otherwise, NCCL must not use it (design.md, KINDS.md).
  setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);
}

Status run_ranks(const HarnessOptions& options, const RankBody& body) {
  keep_nvlink_multicast_off();
  if (options.use_mpi) return run_ranks_mpi(options, body);
  const int gpus = visible_gpu_count();
  if (gpus == 0) return Status::failure("harness: no GPU is visible");
  const int world = options.world == 0 ? gpus : options.world;
  if (world < 1 || world > gpus)
    return Status::failure("harness: asked for " + std::to_string(options.world) +
                           " ranks but " + std::to_string(gpus) + " GPUs are visible");
  ncclUniqueId id;
  NCCL_CHECK(ncclGetUniqueId(&id));

  std::atomic<bool> failed{false};
  std::vector<Status> statuses(world);
  std::vector<std::thread> threads;
  threads.reserve(world);
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      RankContext ctx;
      ctx.comm.peer_failed = &failed;
      Status status = open_rank(ctx, rank, rank, world, id, options);
      if (status.ok) status = body(ctx);
      if (!status.ok) failed = true;
      Status closed = close_rank(ctx, !status.ok);
      if (status.ok && !closed.ok) {
        status = closed;
        failed = true;
      }
      statuses[rank] = status;
    });
  }
  for (auto& t : threads) t.join();
  return first_failure(statuses.data(), world);
}

}  // namespace overlapsim::kernels
