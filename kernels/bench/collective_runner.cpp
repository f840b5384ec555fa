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
    CheckInput check;
    check.result = recv.data();
    check.rows = 1;
    check.cols = static_cast<std::int64_t>(counts.recv);
    check.dtype = c.dtype;
    check.samples = sample_positions(1, check.cols, 1024, env.seed ^ (0x5151u + env.rank()));
    check.expected = [&](const Sample& s) {
      return reference.result(env.rank(), static_cast<std::size_t>(s.col));
    };
    std::uint64_t wrong = 0;
    OVERLAPSIM_TRY(check_result(env, check, &wrong));
    OVERLAPSIM_TRY(sum_over_ranks(env, &wrong));

    BenchRow row;
    row.op = c.op;
    row.design = "nccl";
    row.dtype = to_string(c.dtype);
    row.bytes = counts.bytes;
    row.time_s = timing.median_s;
    row.time_min_s = timing.min_s;
    row.time_max_s = timing.max_s;
    row.busbw_factor = busbw_factor(op, env.world());
    row.wrong = wrong;
    env.emit(row);
    OVERLAPSIM_TRY(quiesce(*env.ctx, "collective: before freeing"));
  }
  return Status::success();
}

}  // namespace overlapsim::kernels::bench
