#include "kernels/bench/embedding_alltoall_backward_case.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "kernels/bench/timing.hpp"
#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/fused/embedding_alltoall_backward.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/fill.hpp"
#include "kernels/harness/random_values.hpp"

namespace overlapsim::kernels::bench {
namespace {

using fused::EmbeddingAllToAllBackward;
using fused::EmbeddingAllToAllShape;

// Rank r's gradient rows are fill_random(grad_seed(seed, r)).
std::uint64_t grad_seed(std::uint64_t seed, int rank) { return buffer_seed(seed, rank, 7); }

// Sequential values off the reference at 64 places spread over this rank's slots: value
// [s][g][j][c] is the gradient of rank g / B's table owned[s], bag g % B, column c.
Status count_reference_misses(const void* values, const EmbeddingAllToAllShape& shape, int rank,
                              std::uint64_t seed, cudaStream_t stream, std::uint64_t* misses) {
  *misses = 0;
  const std::vector<int> owned = shape.owned(rank);
  if (owned.empty()) return Status::success();
  const std::int64_t B = shape.local_batch, G = shape.global_batch(), dim = shape.dim;
  std::vector<std::uint64_t> at;
  std::vector<float> want;
  std::uint64_t slot_start = 0;
  for (std::size_t s = 0; s < owned.size(); ++s) {
    const int t = owned[s];
    const std::int64_t p = shape.tables[static_cast<std::size_t>(t)].pooling;
    const int samples = std::max<int>(1, 64 / static_cast<int>(owned.size()));
    for (int i = 0; i < samples; ++i) {
      const std::uint64_t word = random_word(seed + 99, static_cast<std::uint64_t>(s * 64 + i));
      const std::int64_t g = static_cast<std::int64_t>(word % static_cast<std::uint64_t>(G));
      const std::int64_t j =
          static_cast<std::int64_t>((word >> 20) % static_cast<std::uint64_t>(p));
      const std::int64_t c =
          static_cast<std::int64_t>((word >> 40) % static_cast<std::uint64_t>(dim));
      at.push_back(slot_start + static_cast<std::uint64_t>((g * p + j) * dim + c));
      want.push_back(random_value(DType::BF16, grad_seed(seed, static_cast<int>(g / B)),
                                  static_cast<std::uint64_t>((t * B + g % B) * dim + c)));
    }
    slot_start += static_cast<std::uint64_t>(G * p * dim);
  }
  std::vector<double> got;
  OVERLAPSIM_TRY(gather_values(values, DType::BF16, at, stream, &got));
  for (std::size_t i = 0; i < at.size(); ++i)
    if (!(got[i] == static_cast<double>(want[i]))) ++*misses;
  return Status::success();
}

}  // namespace

Status run_embedding_backward_case(const EmbeddingBackwardCaseSettings& settings,
                                   const EmbeddingAllToAllShape& shape, RankContext& ctx,
                                   const DeviceTags& tags, std::vector<std::string>* lines) {
  const int world = ctx.comm.world, rank = ctx.comm.rank;
  cudaStream_t s = ctx.compute_stream;
  OVERLAPSIM_TRY(quiesce(ctx, "embedding-a2a backward alloc"));
  const std::size_t grad_count =
      shape.tables.size() * static_cast<std::size_t>(shape.local_batch * shape.dim);
  const std::size_t count = std::max<std::size_t>(fused::gradient_values_count(shape, rank), 1);
  DeviceBuffer grad, seq_values, fused_values, align;
  OVERLAPSIM_TRY(grad.allocate(grad_count * 2));
  OVERLAPSIM_TRY(seq_values.allocate(count * 2));
  OVERLAPSIM_TRY(fused_values.allocate(count * 2));
  OVERLAPSIM_TRY(align.allocate(256));
  OVERLAPSIM_TRY(
      fill_random(grad.data(), grad_count, DType::BF16, grad_seed(settings.seed, rank), s));
  OVERLAPSIM_TRY(fill_random(align.data(), 1, DType::BF16, 1, s));
  EmbeddingAllToAllBackward design;
  fused::EmbeddingAllToAllBackwardOptions options;
  options.timeout_s = settings.timeout_s;
  options.push = settings.push;
  options.push_warps = settings.push_warps;
  options.claim_tiles = settings.claim_tiles;
  OVERLAPSIM_TRY(design.initialize(&ctx.comm, shape, DType::BF16, options));
  OVERLAPSIM_TRY(quiesce(ctx, "embedding-a2a backward ready"));

  using Call = std::function<Status()>;
  const Call fused_call = [&] { return design.run(grad.data(), fused_values.data(), s); };
  const Call seq_call = [&] { return design.run_sequential(grad.data(), seq_values.data(), s); };
  const Call expand_call = [&] { return design.expand(grad.data(), seq_values.data(), s); };
  const Call nccl_call = [&] { return design.exchange(grad.data(), s); };

  // Correctness: fused against sequential bit for bit, the sequential design against the
  // reference.
  OVERLAPSIM_TRY(poison(seq_values.data(), count, s));
  OVERLAPSIM_TRY(poison(fused_values.data(), count, s));
  OVERLAPSIM_TRY(seq_call());
  OVERLAPSIM_TRY(fused_call());
  OVERLAPSIM_TRY(wait_stream(ctx.comm, s, "embedding-a2a backward check"));
  OVERLAPSIM_TRY(design.check_timeout(s));
  std::uint64_t unwritten = 0, fused_off = 0, misses = 0;
  if (fused::gradient_values_count(shape, rank) > 0) {
    OVERLAPSIM_TRY(count_nonfinite(seq_values.data(), count, DType::BF16, s, &unwritten));
    OVERLAPSIM_TRY(count_mismatches(fused_values.data(), seq_values.data(), count, DType::BF16, 0.0,
                                    0.0, s, &fused_off));
    OVERLAPSIM_TRY(
        count_reference_misses(seq_values.data(), shape, rank, settings.seed, s, &misses));
  }
  std::vector<double> wrong = {double(fused_off), double(unwritten + misses)};
  OVERLAPSIM_TRY(allreduce_host(ctx.comm, s, wrong, ncclSum));

  struct Variant {
    const char* op;
    const char* design;
    const Call* call;
    double wrong;
  };
  const std::vector<Variant> variants = {
      {"alltoall+embedding_bag_backward", "fused", &fused_call, wrong[0]},
      {"alltoall+embedding_bag_backward", "sequential", &seq_call, wrong[1]},
      {"embedding_bag_backward", "own", &expand_call, 0},
      {"alltoall_backward", "nccl", &nccl_call, 0}};
  // The variants in one rotated loop (time_interleaved: an untimed 1-element all-reduce
  // lines the ranks up before each timed call), then the fused and sequential designs
  // --b2b-calls times back to back each.
  std::vector<EnqueueIteration> timed;
  for (const Variant& v : variants) timed.push_back([call = v.call](int) { return (*call)(); });
  const EnqueueIteration align_ranks = [&](int) {
    return all_reduce(ctx.comm, align.data(), align.data(), 1, DType::BF16, s);
  };
  std::vector<Timing> timings;
  OVERLAPSIM_TRY(
      time_interleaved(ctx, settings.warmup, settings.iterations, timed, align_ranks, &timings));
  constexpr int kB2b = 2;
  const Call* b2b_calls[kB2b] = {&fused_call, &seq_call};
  const char* b2b_names[kB2b] = {"fused_b2b", "sequential_b2b"};
  std::vector<double> b2b_s(kB2b, 0.0);
  if (settings.b2b_calls > 0) {
    std::vector<cudaEvent_t> events(2 * kB2b);
    for (auto& e : events) CUDA_CHECK(cudaEventCreate(&e));
    for (int j = 0; j < kB2b; ++j) {
      OVERLAPSIM_TRY(align_ranks(0));
      CUDA_CHECK(cudaEventRecord(events[2 * j], s));
      for (int i = 0; i < settings.b2b_calls; ++i) OVERLAPSIM_TRY((*b2b_calls[j])());
      CUDA_CHECK(cudaEventRecord(events[2 * j + 1], s));
    }
    OVERLAPSIM_TRY(wait_stream(ctx.comm, s, "embedding-a2a backward back to back"));
    for (int j = 0; j < kB2b; ++j) {
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, events[2 * j], events[2 * j + 1]));
      b2b_s[static_cast<std::size_t>(j)] = 1e-3 * ms / settings.b2b_calls;
    }
    for (auto& e : events) cudaEventDestroy(e);
    OVERLAPSIM_TRY(allreduce_host(ctx.comm, s, b2b_s, ncclMax));
  }
  OVERLAPSIM_TRY(design.check_timeout(s));

  std::int64_t lookups = 0;
  for (const fused::EmbeddingTable& t : shape.tables) lookups += t.pooling;
  const std::uint64_t bytes = grad_count * 2;
  const double factor = busbw_factor(CollectiveOp::AllToAll, world);
  auto emit = [&](const std::string& op, const std::string& name, double med, double mn, double mx,
                  double w) {
    RowBuilder r(op, name, "bf16");
    r.shape(shape.local_batch, shape.dim, lookups)
        .bytes(op == "embedding_bag_backward" ? 0 : bytes)
        .chunks(design.grid())
        .times(med, mn, mx)
        .wrong(static_cast<std::uint64_t>(w));
    if (op != "embedding_bag_backward") r.busbw_factor(factor);
    if (rank == 0) {
      lines->push_back(csv_line(tags, r.row()));
      std::printf("%s\n", lines->back().c_str());
      std::fflush(stdout);
    }
  };
  for (std::size_t v = 0; v < variants.size(); ++v) {
    const Timing& t = timings[v];
    emit(variants[v].op, variants[v].design, t.median_s, t.min_s, t.max_s, variants[v].wrong);
  }
  for (int j = 0; j < kB2b && settings.b2b_calls > 0; ++j) {
    const double t = b2b_s[static_cast<std::size_t>(j)];
    emit("alltoall+embedding_bag_backward", b2b_names[j], t, t, t,
         wrong[static_cast<std::size_t>(j)]);
  }
  return quiesce(ctx, "embedding-a2a backward case done");
}

}  // namespace overlapsim::kernels::bench
