// Collectives alone (design `nccl`): nccl-tests-style sizes, out of place, on the compute
// stream; the send buffer rotates through input sets when it is small.
#include <string>
#include <vector>

#include "kernels/bench/bench_env.hpp"
#include "kernels/bench/collective_call.hpp"
#include "kernels/bench/timing.hpp"
#include "kernels/bench/verify.hpp"
#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/harness/fill.hpp"

namespace overlapsim::kernels::bench {
namespace {

using Counts = CollectiveCounts;

Status enqueue(BenchEnv& env, CollectiveOp op, const void* send, void* recv, const Counts& counts,
               DType dtype) {
  return enqueue_collective(env.ctx->comm, op, send, recv, counts, dtype, env.ctx->compute_stream);
}

}  // namespace

Status run_collective_case(BenchEnv& env, const BenchCase& c) {
  const CollectiveOp op = *parse_collective_op(c.op);
  const std::size_t elem = dtype_bytes(c.dtype);
  for (std::uint64_t requested : c.bytes) {
    const Counts counts = collective_counts(op, requested, c.dtype, env.world());
    if (counts.recv == 0 || counts.send == 0) continue;
    // Fences around allocation and free (harness quiesce): no cudaMalloc/cudaFree while a
    // peer's NCCL kernel waits for this rank.
    OVERLAPSIM_TRY(quiesce(*env.ctx, "collective: before allocating"));
    const int sets = env.rotation_sets(counts.send * elem);
    std::vector<DeviceBuffer> send(static_cast<std::size_t>(sets));
    DeviceBuffer recv;
    OVERLAPSIM_TRY(recv.allocate(counts.recv * elem));
    for (int s = 0; s < sets; ++s) {
      OVERLAPSIM_TRY(send[s].allocate(counts.send * elem));
      OVERLAPSIM_TRY(fill_random(send[s].data(), counts.send, c.dtype,
                                 input_seed(env.seed, env.rank(), s, kBufferCollective),
                                 env.ctx->compute_stream));
    }
    OVERLAPSIM_TRY(quiesce(*env.ctx, "collective: after allocating"));
    Timing timing;
    OVERLAPSIM_TRY(time_iterations(
        *env.ctx, c.warmup, c.iterations,
        [&](int i) {
          return enqueue(env, op, send[i % sets].data(), recv.data(), counts, c.dtype);
        },
        &timing));

    OVERLAPSIM_TRY(poison(recv.data(), counts.recv, env.ctx->compute_stream));
    OVERLAPSIM_TRY(enqueue(env, op, send[0].data(), recv.data(), counts, c.dtype));
    OVERLAPSIM_TRY(wait_stream(env.ctx->comm, env.ctx->compute_stream, "collective check"));
    const CollectiveReference reference(op, counts.send, c.dtype, env.world(), env.seed, 0);
    std::uint64_t wrong = 0;
    OVERLAPSIM_TRY(check_collective_result(env, reference, recv.data(), counts.recv, c.dtype,
                                           env.seed ^ (0x5151u + env.rank()), &wrong));

    env.emit(RowBuilder(c.op, "nccl", to_string(c.dtype))
                 .bytes(counts.bytes)
                 .time(timing)
                 .busbw_factor(busbw_factor(op, env.world()))
                 .wrong(wrong)
                 .row());
    OVERLAPSIM_TRY(quiesce(*env.ctx, "collective: before freeing"));
  }
  return Status::success();
}

}  // namespace overlapsim::kernels::bench
