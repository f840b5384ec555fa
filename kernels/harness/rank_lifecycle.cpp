#include "kernels/harness/rank_lifecycle.hpp"

#include <string>

namespace overlapsim::kernels {

Status prepare_rank(RankContext& ctx, int device, int rank, int world,
                    const HarnessOptions& options) {
  ctx.device = device;
  ctx.comm.rank = rank;
  ctx.comm.world = world;
  ctx.comm.timeout_s = options.timeout_s;
  ctx.comm.trace = options.trace;
  CUDA_CHECK(cudaSetDevice(device));
  int least = 0;
  int greatest = 0;
  CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  CUDA_CHECK(cudaStreamCreateWithPriority(&ctx.compute_stream, cudaStreamNonBlocking, least));
  CUDA_CHECK(cudaStreamCreateWithPriority(&ctx.comm_stream, cudaStreamNonBlocking, greatest));
  return Status::success();
}

Status connect_rank(RankContext& ctx, const ncclUniqueId& id, const HarnessOptions& options) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = options.blocking_comms ? 1 : 0;
  NCCL_SETTLE(ctx.comm,
              ncclCommInitRankConfig(&ctx.comm.comm, ctx.comm.world, id, ctx.comm.rank, &config));
  return Status::success();
}

Status close_rank(RankContext& ctx, bool failed) {
  Status result = Status::success();
  if (failed) {
    if (ctx.comm.comm != nullptr) abort_comm(ctx.comm, "closing after a failure");
  } else if (ctx.comm.comm != nullptr) {
    result = wait_stream(ctx.comm, ctx.compute_stream, "close: compute stream");
    if (result.ok) result = wait_stream(ctx.comm, ctx.comm_stream, "close: comm stream");
    if (result.ok)
      result = nccl_settle(ctx.comm, ncclCommFinalize(ctx.comm.comm), "ncclCommFinalize");
    if (result.ok) {
      ncclResult_t destroyed = ncclCommDestroy(ctx.comm.comm);
      ctx.comm.comm = nullptr;
      if (destroyed != ncclSuccess)
        result = Status::failure(std::string("ncclCommDestroy: ") + ncclGetErrorString(destroyed));
    }
  }
  // A stream of an aborted rank may still hold stuck work; destroying it does not wait.
  if (ctx.compute_stream != nullptr) cudaStreamDestroy(ctx.compute_stream);
  if (ctx.comm_stream != nullptr) cudaStreamDestroy(ctx.comm_stream);
  ctx.compute_stream = ctx.comm_stream = nullptr;
  return result;
}

Status first_failure(const Status* statuses, int count) {
  const Status* echo = nullptr;
  for (int i = 0; i < count; ++i) {
    if (statuses[i].ok) continue;
    if (statuses[i].message.find("peer failed") == std::string::npos) return statuses[i];
    if (echo == nullptr) echo = &statuses[i];
  }
  return echo != nullptr ? *echo : Status::success();
}

}  // namespace overlapsim::kernels
