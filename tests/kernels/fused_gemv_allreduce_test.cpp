// The fused GEMV + all-reduce (kernels/fused/gemv_allreduce.hpp): its GEMV against a float64
// host reference on one GPU (K unsplit, the default split, 8 and 3 splits; with the L2
// prefetch hint, and with the early claim on a small grid, the same bits); on every visible
// GPU (2 or more) its result bit for bit against the same GEMV's partials summed in rank
// order, and against the partials through NCCL's all-reduce (bit for bit with 2 ranks), also
// with forced K splits (powers of two and not) on a small grid (units handed out by the
// counter), with and without the early claim; 200 calls back to back with no host
// synchronisation (also with the early claim and 3 splits); a small case for
// compute-sanitizer; a first call in a fresh process under lazy module loading (the plain
// kernel and the early claim); tune's split the same on every rank and its results bit for
// bit as above (also over the fine splits with the early claim). The finer last wave the
// same way: against the float64 reference on 4 CTAs (uneven last ranges, K not a multiple
// of its 1024), bit for bit against the rank-order sum and NCCL on small grids and the
// full one, ignored at 64 tokens, tuned over its candidates, 200 calls back to back, and a
// cold start.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/fused/gemv_allreduce.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/fill.hpp"
#include "tests/kernels/gpu_test_support.hpp"

namespace overlapsim::kernels::fused {
namespace {

using testing::fresh_seed;

struct Case {
  int tokens;
  std::int64_t n, k;
};

std::vector<std::uint16_t> host_bits(const void* data, std::size_t count) {
  std::vector<std::uint16_t> bits(count);
  EXPECT_EQ(cudaMemcpy(bits.data(), data, count * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  return bits;
}

// Every case unsplit, with the default split, with 8 and with 3 splits where K has as many
// chunks.
template <std::size_t N>
std::vector<std::pair<Case, int>> with_splits(const Case (&cases)[N]) {
  std::vector<std::pair<Case, int>> out;
  for (const int splits : {1, 0, 8, 3})
    for (const Case& c : cases)
      if (c.k / 32 >= splits) out.emplace_back(c, splits);
  return out;
}

TEST(FusedGemvLocal, MatchesHostReference) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const std::uint64_t seed = fresh_seed();
  // k = 96: fewer K chunks than warps; k = 4160: an unroll tail (and uneven splits).
  const Case cases[] = {Case{1, 256, 1024}, Case{3, 64, 96},     Case{8, 128, 4160},
                        Case{13, 96, 512},  Case{16, 256, 2048}, Case{40, 64, 256},
                        Case{64, 128, 1024}};
  for (const auto& [c, splits] : with_splits(cases)) {
    SCOPED_TRACE("tokens " + std::to_string(c.tokens) + " n " + std::to_string(c.n) + " k " +
                 std::to_string(c.k) + " k_splits " + std::to_string(splits));
    DeviceBuffer x, w, y;
    ASSERT_TRUE(x.allocate(c.tokens * c.k * 2).ok);
    ASSERT_TRUE(w.allocate(c.n * c.k * 2).ok);
    ASSERT_TRUE(y.allocate(c.tokens * c.n * 2).ok);
    ASSERT_TRUE(fill_random(x.data(), c.tokens * c.k, DType::BF16, seed + 1, nullptr).ok);
    ASSERT_TRUE(fill_random(w.data(), c.n * c.k, DType::BF16, seed + 2, nullptr).ok);
    ASSERT_TRUE(poison(y.data(), c.tokens * c.n, nullptr).ok);
    GemvAllReduce fused;
    GemvAllReduceOptions options;
    options.k_splits = splits;
    const Status init = fused.initialize(nullptr, c.tokens, c.n, c.k, DType::BF16, options);
    ASSERT_TRUE(init.ok) << init.message;
    const Status s = fused.run_local(x.data(), w.data(), y.data(), nullptr);
    ASSERT_TRUE(s.ok) << s.message;
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto got = testing::to_host(y.data(), c.tokens * c.n, DType::BF16);
    {
      // The L2 prefetch hint loads the same values: the same bits.
      const auto plain = host_bits(y.data(), c.tokens * c.n);
      ASSERT_TRUE(poison(y.data(), c.tokens * c.n, nullptr).ok);
      ASSERT_TRUE(fused.configure(fused.k_splits(), true, nullptr).ok);
      ASSERT_TRUE(fused.run_local(x.data(), w.data(), y.data(), nullptr).ok);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const auto hinted = host_bits(y.data(), c.tokens * c.n);
      std::size_t differ = 0;
      for (std::size_t e = 0; e < hinted.size(); ++e) differ += hinted[e] != plain[e];
      EXPECT_EQ(differ, 0u) << "the L2 prefetch hint changed the result";
      // The early claim on 4 CTAs (units handed out by the counter, claimed before each
      // unit's last loop iteration): the same units, the same bits.
      GemvAllReduce early;
      GemvAllReduceOptions early_options;
      early_options.k_splits = fused.k_splits();
      early_options.max_ctas = 4;
      early_options.early_claim = true;
      ASSERT_TRUE(early.initialize(nullptr, c.tokens, c.n, c.k, DType::BF16, early_options).ok);
      for (const bool hint : {false, true}) {
        ASSERT_TRUE(early.configure(fused.k_splits(), hint, nullptr).ok);
        ASSERT_TRUE(poison(y.data(), c.tokens * c.n, nullptr).ok);
        ASSERT_TRUE(early.run_local(x.data(), w.data(), y.data(), nullptr).ok);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const auto claimed = host_bits(y.data(), c.tokens * c.n);
        differ = 0;
        for (std::size_t e = 0; e < claimed.size(); ++e) differ += claimed[e] != plain[e];
        EXPECT_EQ(differ, 0u) << "the early claim changed the result (hint " << hint << ")";
      }
    }
    // The finer last wave on 4 CTAs (its units handed out by the counter): another order of
    // the K sum, so against the reference below; its run_local twice, the same bits.
    std::vector<std::vector<double>> outputs = {got};
    if (c.tokens <= 16 && fused.k_splits() <= 2) {
      const int slices = static_cast<int>(c.n / 32);
      const int steps = static_cast<int>((c.k / 32 + 31) / 32);
      GemvAllReduce wave;
      GemvAllReduceOptions wave_options;
      wave_options.k_splits = fused.k_splits();
      wave_options.max_ctas = 4;
      wave_options.last_wave = GemvLastWave{std::max(1, slices / 2), std::min(3, steps)};
      if (wave_options.last_wave.on()) {
        const Status wi = wave.initialize(nullptr, c.tokens, c.n, c.k, DType::BF16, wave_options);
        ASSERT_TRUE(wi.ok) << wi.message;
        ASSERT_TRUE(wave.last_wave().on());
        std::vector<std::uint16_t> first;
        for (int rep = 0; rep < 2; ++rep) {
          ASSERT_TRUE(poison(y.data(), c.tokens * c.n, nullptr).ok);
          ASSERT_TRUE(wave.run_local(x.data(), w.data(), y.data(), nullptr).ok);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          const auto bits = host_bits(y.data(), c.tokens * c.n);
          if (rep == 0) first = bits;
          std::size_t moved = 0;
          for (std::size_t e = 0; e < bits.size(); ++e) moved += bits[e] != first[e];
          EXPECT_EQ(moved, 0u) << "the last wave's result moved between calls";
        }
        outputs.push_back(testing::to_host(y.data(), c.tokens * c.n, DType::BF16));
      }
    }
    std::size_t bad = 0;
    for (int t = 0; t < c.tokens; ++t)
      for (std::int64_t j = 0; j < c.n; ++j) {
        double ref = 0;
        for (std::int64_t kk = 0; kk < c.k; ++kk)
          ref += static_cast<double>(random_value(DType::BF16, seed + 1, t * c.k + kk)) *
                 random_value(DType::BF16, seed + 2, j * c.k + kk);
        // One bf16 rounding of the output (2^-8 relative) and fp32 sums of k terms.
        for (std::size_t o = 0; o < outputs.size(); ++o) {
          const double v = outputs[o][static_cast<std::size_t>(t * c.n + j)];
          if (!(std::fabs(v - ref) <= std::fabs(ref) / 128 + 1e-3 * std::sqrt(double(c.k)))) {
            if (bad < 5)
              ADD_FAILURE() << (o == 0 ? "" : "last wave: ") << "y[" << t << "][" << j
                            << "] = " << v << ", expected " << ref;
            ++bad;
          }
        }
      }
    EXPECT_EQ(bad, 0u);
  }
}

// How check_against_partials sets the K split: as asked (k_splits), or by tune; and
// whether the design claims early and tunes over the fine splits too.
enum class Kernel { Default, Tuned };
struct Variant {
  bool early_claim = false;
  bool fine_k_splits = false;
  GemvLastWave last_wave = {};
  bool tune_last_wave = false;
};

// Runs the fused design `calls` times on every rank and checks each result against this
// rank's GEMV partials gathered and summed in rank order on the host, and the last one
// against the partials through NCCL's all-reduce.
Status check_against_partials(RankContext& ctx, const Case& c, std::uint64_t seed, int calls,
                              int max_ctas, GemvTransport transport, int k_splits = 0,
                              Kernel kernel = Kernel::Default, Variant variant = {}) {
  OVERLAPSIM_TRY(quiesce(ctx, "fused test alloc"));
  const int world = ctx.comm.world, rank = ctx.comm.rank;
  const std::size_t y_count = static_cast<std::size_t>(c.tokens) * c.n;
  DeviceBuffer x, w, y, partial, gathered, nccl_y;
  OVERLAPSIM_TRY(x.allocate(c.tokens * c.k * 2));
  OVERLAPSIM_TRY(w.allocate(c.n * c.k * 2));
  OVERLAPSIM_TRY(y.allocate(y_count * 2));
  OVERLAPSIM_TRY(partial.allocate(y_count * 2));
  OVERLAPSIM_TRY(gathered.allocate(y_count * 2 * world));
  OVERLAPSIM_TRY(nccl_y.allocate(y_count * 2));
  GemvAllReduce fused;
  GemvAllReduceOptions options;
  options.timeout_s = 60;
  options.max_ctas = max_ctas;
  options.transport = transport;
  options.k_splits = k_splits;
  options.early_claim = variant.early_claim;
  options.fine_k_splits = variant.fine_k_splits;
  options.last_wave = variant.last_wave;
  options.tune_last_wave = variant.tune_last_wave;
  OVERLAPSIM_TRY(fused.initialize(&ctx.comm, c.tokens, c.n, c.k, DType::BF16, options));
  OVERLAPSIM_TRY(quiesce(ctx, "fused test ready"));
  cudaStream_t s = ctx.compute_stream;
  OVERLAPSIM_TRY(fill_random(x.data(), c.tokens * c.k, DType::BF16, buffer_seed(seed, rank, 0), s));
  OVERLAPSIM_TRY(fill_random(w.data(), c.n * c.k, DType::BF16, buffer_seed(seed, rank, 1), s));
  if (kernel == Kernel::Tuned) {
    const void* xs[] = {x.data()};
    const void* ws[] = {w.data()};
    OVERLAPSIM_TRY(fused.tune(1, xs, ws, y.data(), s));
    // One choice on every rank.
    const double choice = fused.k_splits() + (fused.l2_prefetch() ? 100 : 0) +
                          1000.0 * fused.last_wave().splits + 1e5 * fused.last_wave().slices;
    std::vector<double> pick = {choice, -choice};
    OVERLAPSIM_TRY(allreduce_host(ctx.comm, s, pick, ncclMax));
    if (pick[0] != -pick[1]) return Status::failure("tune chose differently on different ranks");
  }
  OVERLAPSIM_TRY(fused.run_local(x.data(), w.data(), partial.data(), s));
  // Gathered exactly by a sum: this rank's slot holds its partial, every other slot zeros
  // (x + 0 = x whatever the order).
  CUDA_CHECK(cudaMemsetAsync(gathered.data(), 0, y_count * 2 * world, s));
  CUDA_CHECK(cudaMemcpyAsync(gathered.as<std::uint16_t>() + rank * y_count, partial.data(),
                             y_count * 2, cudaMemcpyDeviceToDevice, s));
  OVERLAPSIM_TRY(
      all_reduce(ctx.comm, gathered.data(), gathered.data(), y_count * world, DType::BF16, s));
  OVERLAPSIM_TRY(all_reduce(ctx.comm, partial.data(), nccl_y.data(), y_count, DType::BF16, s));
  OVERLAPSIM_TRY(wait_stream(ctx.comm, s, "fused test partials"));
  const auto parts = host_bits(gathered.data(), y_count * world);
  std::vector<std::uint16_t> expected(y_count);
  for (std::size_t e = 0; e < y_count; ++e) {
    float acc = 0.f;
    for (int r = 0; r < world; ++r) acc += bf16_bits_to_float(parts[r * y_count + e]);
    expected[e] = float_to_bf16_bits(acc);
  }
  for (int call = 0; call < calls; ++call) {
    OVERLAPSIM_TRY(poison(y.data(), y_count, s));
    OVERLAPSIM_TRY(fused.run(x.data(), w.data(), y.data(), s));
    OVERLAPSIM_TRY(wait_stream(ctx.comm, s, "fused test call"));
    OVERLAPSIM_TRY(fused.check_timeout(s));
    const auto got = host_bits(y.data(), y_count);
    std::size_t differ = 0;
    for (std::size_t e = 0; e < y_count; ++e) differ += got[e] != expected[e];
    if (differ != 0)
      return Status::failure(
          "rank " + std::to_string(rank) + " call " + std::to_string(call) + ": " +
          std::to_string(differ) + " of " + std::to_string(y_count) +
          " elements differ from the rank-order sum of the partials (" + to_string(transport) +
          ", k_splits " + std::to_string(fused.k_splits()) +
          (variant.early_claim ? ", early claim" : "") +
          (fused.last_wave().on() ? ", last wave " + std::to_string(fused.last_wave().slices) +
                                        " x " + std::to_string(fused.last_wave().splits)
                                  : "") +
          ")");
  }
  std::uint64_t off = 0;
  // NCCL's order is its own with more than 2 ranks, and its ring rounds to bf16 after every
  // hop: up to (world - 1) roundings at the running sum's magnitude (about the result's
  // rms, sqrt(world k) / 3 for inputs uniform in [-1, 1)). Exact with 2 ranks.
  const double rms = std::sqrt(static_cast<double>(world) * static_cast<double>(c.k)) / 3;
  const double rel = world == 2 ? 0.0 : 1.0 / 64;
  const double abs = world == 2 ? 0.0 : world * rms / 128;
  OVERLAPSIM_TRY(
      count_mismatches(y.data(), nccl_y.data(), y_count, DType::BF16, rel, abs, s, &off));
  if (off != 0)
    return Status::failure("rank " + std::to_string(rank) + ": " + std::to_string(off) +
                           " elements off the partials through NCCL's all-reduce (" +
                           to_string(transport) + ")");
  return quiesce(ctx, "fused test done");
}

// Blocking communicators, as fused-gemv-bench runs them.
HarnessOptions blocking() {
  HarnessOptions h;
  h.blocking_comms = true;
  return h;
}

TEST(FusedGemvAllReduce, MatchesRankOrderSumAndNccl) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  const std::uint64_t seed = fresh_seed();
  const Status status = run_ranks(blocking(), [&](RankContext& ctx) -> Status {
    for (GemvTransport transport : {GemvTransport::PeerPointers, GemvTransport::NcclWindow}) {
      for (const Case c : {Case{1, 1024, 512}, Case{16, 2048, 1024}, Case{64, 512, 256},
                           Case{5, 96, 64}, Case{16, 16384, 2048}})
        OVERLAPSIM_TRY(check_against_partials(ctx, c, seed, 2, 0, transport));
      // More units than CTAs: the counter hands them out, the splits meet in any order.
      OVERLAPSIM_TRY(check_against_partials(ctx, Case{16, 2048, 4096}, seed, 3, 24, transport, 4));
      OVERLAPSIM_TRY(check_against_partials(ctx, Case{1, 1024, 2048}, seed, 3, 8, transport, 8));
      // Tuned (every split run, the choice kept).
      OVERLAPSIM_TRY(check_against_partials(ctx, Case{16, 4096, 8192}, seed, 2, 0, transport, 0,
                                            Kernel::Tuned));
      // The early claim (one token tile): splits that divide 2^32 and splits that do not,
      // units of one, two and three of warp 0's loop iterations of 32 chunks (K 2048 / 8
      // splits: 8 chunks; 6144 / 3: 64; 8192 / 6: 42 or 43; 32768 / 12: 85 or 86), a grid
      // of 8 to 24 CTAs; then tuned over the fine splits.
      const Variant early{true, false};
      OVERLAPSIM_TRY(
          check_against_partials(ctx, Case{1, 1024, 2048}, seed, 3, 8, transport, 8, {}, early));
      OVERLAPSIM_TRY(
          check_against_partials(ctx, Case{4, 1024, 6144}, seed, 3, 16, transport, 3, {}, early));
      OVERLAPSIM_TRY(
          check_against_partials(ctx, Case{8, 2048, 8192}, seed, 3, 24, transport, 6, {}, early));
      OVERLAPSIM_TRY(
          check_against_partials(ctx, Case{1, 512, 32768}, seed, 3, 12, transport, 12, {}, early));
      // Not a power of two without the early claim, and 16 splits.
      OVERLAPSIM_TRY(check_against_partials(ctx, Case{16, 1024, 6144}, seed, 3, 16, transport, 3));
      OVERLAPSIM_TRY(check_against_partials(ctx, Case{2, 1024, 8192}, seed, 3, 20, transport, 16));
      OVERLAPSIM_TRY(check_against_partials(ctx, Case{1, 4096, 16384}, seed, 2, 0, transport, 0,
                                            Kernel::Tuned, Variant{true, true}));
      // The finer last wave: 1, 2 and 4 K splits under it, more ranges than the K split and
      // fewer, one slice with uneven ranges (K 2080: 65 chunks in 3 ranges of 32, 32 and 1),
      // the auto size on the full grid (70B down_proj and 405B o_proj at TP = 2); 64 tokens
      // (ignored); tuned over its candidates.
      auto wave = [](int slices, int splits) {
        Variant v;
        v.last_wave = GemvLastWave{slices, splits};
        return v;
      };
      OVERLAPSIM_TRY(check_against_partials(ctx, Case{1, 1024, 4096}, seed, 3, 8, transport, 1, {},
                                            wave(16, 4)));
      OVERLAPSIM_TRY(check_against_partials(ctx, Case{4, 1024, 8192}, seed, 3, 12, transport, 2, {},
                                            wave(32, 8)));
      OVERLAPSIM_TRY(check_against_partials(ctx, Case{16, 2048, 6144}, seed, 3, 16, transport, 4,
                                            {}, wave(5, 2)));
      OVERLAPSIM_TRY(check_against_partials(ctx, Case{8, 512, 2080}, seed, 3, 6, transport, 1, {},
                                            wave(1, 3)));
      OVERLAPSIM_TRY(check_against_partials(ctx, Case{1, 8192, 14336}, seed, 2, 0, transport, 0, {},
                                            wave(0, 4)));
      OVERLAPSIM_TRY(check_against_partials(ctx, Case{2, 16384, 8192}, seed, 2, 0, transport, 1, {},
                                            wave(0, 8)));
      OVERLAPSIM_TRY(check_against_partials(ctx, Case{64, 1024, 4096}, seed, 2, 8, transport, 2, {},
                                            wave(16, 4)));
      Variant tuned_wave;
      tuned_wave.tune_last_wave = true;
      OVERLAPSIM_TRY(check_against_partials(ctx, Case{1, 8192, 8192}, seed, 2, 0, transport, 0,
                                            Kernel::Tuned, tuned_wave));
    }
    return Status::success();
  });
  ASSERT_TRUE(status.ok) << status.message;
}

TEST(FusedGemvAllReduce, SmallForSanitizer) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  const std::uint64_t seed = fresh_seed();
  const Status status = run_ranks(blocking(), [&](RankContext& ctx) -> Status {
    // 4 CTAs for 16 units: the counter, split meetings and the exchange under the tools;
    // then 24 units of 3 splits claimed early.
    OVERLAPSIM_TRY(
        check_against_partials(ctx, Case{4, 256, 256}, seed, 3, 4, GemvTransport::PeerPointers, 2));
    OVERLAPSIM_TRY(check_against_partials(ctx, Case{4, 256, 4096}, seed, 3, 4,
                                          GemvTransport::PeerPointers, 3, {},
                                          Variant{true, false}));
    return check_against_partials(ctx, Case{4, 256, 256}, seed, 3, 4, GemvTransport::NcclWindow, 2);
  });
  ASSERT_TRUE(status.ok) << status.message;
}

// 200 calls enqueued back to back (inputs rotating over 3 sets, a new output each call), no
// host synchronisation between them: the epochs and the receive buffers' parity must keep
// every call's partials apart while ranks drift by up to a call; once on the default grid
// (one unit per CTA) and once with 2 K splits on 32 CTAs (the unit counter and the split
// meetings carried from call to call), with both transports; then 4 tokens claimed early
// with 3 splits on 32 CTAs (K 8192: 85 or 86 chunks a unit, 3 loop iterations of warp 0).
TEST(FusedGemvAllReduce, BackToBack200Calls) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  const std::uint64_t seed = fresh_seed();
  constexpr int kCalls = 200, kSets = 3;
  const Status status = run_ranks(blocking(), [&](RankContext& ctx) -> Status {
    for (const int config : {0, 1, 2, 3, 4, 5, 6, 7}) {
      const GemvTransport transport = config < 2 || config == 4 || config == 6
                                          ? GemvTransport::PeerPointers
                                          : GemvTransport::NcclWindow;
      const bool counted = config % 2 == 1;
      const bool early = config == 4 || config == 5;
      const bool wave = config >= 6;
      const Case c = early || wave ? Case{4, 4096, 8192} : Case{16, 4096, 1024};
      const std::size_t y_count = static_cast<std::size_t>(c.tokens) * c.n;
      OVERLAPSIM_TRY(quiesce(ctx, "b2b alloc"));
      DeviceBuffer x, w, expected, out;
      OVERLAPSIM_TRY(x.allocate(kSets * c.tokens * c.k * 2));
      OVERLAPSIM_TRY(w.allocate(c.n * c.k * 2));
      OVERLAPSIM_TRY(expected.allocate(kSets * y_count * 2));
      OVERLAPSIM_TRY(out.allocate(kCalls * y_count * 2));
      GemvAllReduce fused;
      GemvAllReduceOptions options;
      options.transport = transport;
      if (counted) {
        options.k_splits = 2;
        options.max_ctas = 32;
      }
      if (early) {
        options.early_claim = true;
        options.k_splits = 3;
        options.max_ctas = 32;
      }
      if (wave) {  // 96 whole slices, then 32 slices in 6 ranges of 32 or 64 chunks
        options.k_splits = 1;
        options.max_ctas = 32;
        options.last_wave = GemvLastWave{32, 6};
      }
      OVERLAPSIM_TRY(fused.initialize(&ctx.comm, c.tokens, c.n, c.k, DType::BF16, options));
      OVERLAPSIM_TRY(quiesce(ctx, "b2b ready"));
      cudaStream_t s = ctx.compute_stream;
      const int rank = ctx.comm.rank;
      OVERLAPSIM_TRY(fill_random(x.data(), kSets * c.tokens * c.k, DType::BF16,
                                 buffer_seed(seed, rank, 0), s));
      OVERLAPSIM_TRY(fill_random(w.data(), c.n * c.k, DType::BF16, buffer_seed(seed, rank, 1), s));
      OVERLAPSIM_TRY(poison(out.data(), kCalls * y_count, s));
      auto x_of = [&](int set) { return x.as<std::uint16_t>() + set * c.tokens * c.k; };
      for (int set = 0; set < kSets; ++set)
        OVERLAPSIM_TRY(
            fused.run(x_of(set), w.data(), expected.as<std::uint16_t>() + set * y_count, s));
      OVERLAPSIM_TRY(wait_stream(ctx.comm, s, "b2b expected"));
      for (int call = 0; call < kCalls; ++call)
        OVERLAPSIM_TRY(
            fused.run(x_of(call % kSets), w.data(), out.as<std::uint16_t>() + call * y_count, s));
      OVERLAPSIM_TRY(wait_stream(ctx.comm, s, "b2b calls"));
      OVERLAPSIM_TRY(fused.check_timeout(s));
      for (int call = 0; call < kCalls; ++call) {
        std::uint64_t differ = 0;
        OVERLAPSIM_TRY(count_mismatches(out.as<std::uint16_t>() + call * y_count,
                                        expected.as<std::uint16_t>() + (call % kSets) * y_count,
                                        y_count, DType::BF16, 0.0, 0.0, s, &differ));
        if (differ != 0)
          return Status::failure("rank " + std::to_string(rank) + " call " + std::to_string(call) +
                                 ": " + std::to_string(differ) + " elements differ (" +
                                 to_string(transport) + ", k_splits " +
                                 std::to_string(fused.k_splits()) + (early ? ", early claim" : "") +
                                 (wave ? ", last wave" : "") + ")");
      }
      OVERLAPSIM_TRY(quiesce(ctx, "b2b done"));
    }
    return Status::success();
  });
  ASSERT_TRUE(status.ok) << status.message;
}

// The first fused calls of a fresh process; `early`: 4 tokens claimed early, 3 splits on
// 32 CTAs (the early-claim kernel is the process's first); `wave`: 4 tokens with a finer
// last wave on 32 CTAs (its kernel first).
Status cold_start_calls(bool early, bool wave = false) {
  return run_ranks(blocking(), [&](RankContext& ctx) -> Status {
    const Case c = early || wave ? Case{4, 8192, 6144} : Case{16, 8192, 2048};
    DeviceBuffer x, w, y;
    OVERLAPSIM_TRY(x.allocate(c.tokens * c.k * 2));
    OVERLAPSIM_TRY(w.allocate(c.n * c.k * 2));
    OVERLAPSIM_TRY(y.allocate(c.tokens * c.n * 2));
    GemvAllReduce fused;
    GemvAllReduceOptions options;
    options.timeout_s = 20;
    if (early) {
      options.early_claim = true;
      options.k_splits = 3;
      options.max_ctas = 32;
    }
    if (wave) {
      options.max_ctas = 32;
      options.last_wave = GemvLastWave{64, 4};
    }
    OVERLAPSIM_TRY(fused.initialize(&ctx.comm, c.tokens, c.n, c.k, DType::BF16, options));
    OVERLAPSIM_TRY(quiesce(ctx, "cold start ready"));
    // The fused kernel first, then kernels of other modules behind it on every rank.
    OVERLAPSIM_TRY(fused.run(x.data(), w.data(), y.data(), ctx.compute_stream));
    OVERLAPSIM_TRY(fill_random(x.data(), c.tokens * c.k, DType::BF16, 7, ctx.compute_stream));
    OVERLAPSIM_TRY(fused.run(x.data(), w.data(), y.data(), ctx.compute_stream));
    OVERLAPSIM_TRY(wait_stream(ctx.comm, ctx.compute_stream, "cold start"));
    return fused.check_timeout(ctx.compute_stream);
  });
}

TEST(FusedGemvColdStart, Child) {
  if (std::getenv("OVERLAPSIM_FUSED_COLD_CHILD") == nullptr)
    GTEST_SKIP() << "runs only as the child of FreshProcessFirstCallCompletes";
  const Status status = cold_start_calls(false);
  ASSERT_TRUE(status.ok) << status.message;
}

TEST(FusedGemvColdStart, EarlyClaimChild) {
  if (std::getenv("OVERLAPSIM_FUSED_COLD_EARLY_CHILD") == nullptr)
    GTEST_SKIP() << "runs only as the child of FreshProcessEarlyClaimFirstCallCompletes";
  const Status status = cold_start_calls(true);
  ASSERT_TRUE(status.ok) << status.message;
}

TEST(FusedGemvColdStart, LastWaveChild) {
  if (std::getenv("OVERLAPSIM_FUSED_COLD_WAVE_CHILD") == nullptr)
    GTEST_SKIP() << "runs only as the child of FreshProcessLastWaveFirstCallCompletes";
  const Status status = cold_start_calls(false, true);
  ASSERT_TRUE(status.ok) << status.message;
}

void expect_child_completes(const std::string& filter, const std::string& marker) {
  const testing::ChildEnd end = testing::run_lazy_loading_child(filter, marker);
  testing::expect_cold_start_child_passed(end);
}

// A fresh process with the driver's default module loading (lazy): the first fused calls
// must complete (the kernels are loaded in initialize, before any rank waits on a peer).
TEST(FusedGemvColdStart, FreshProcessFirstCallCompletes) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  expect_child_completes("FusedGemvColdStart.Child", "OVERLAPSIM_FUSED_COLD_CHILD");
}

TEST(FusedGemvColdStart, FreshProcessEarlyClaimFirstCallCompletes) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  expect_child_completes("FusedGemvColdStart.EarlyClaimChild", "OVERLAPSIM_FUSED_COLD_EARLY_CHILD");
}

TEST(FusedGemvColdStart, FreshProcessLastWaveFirstCallCompletes) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  expect_child_completes("FusedGemvColdStart.LastWaveChild", "OVERLAPSIM_FUSED_COLD_WAVE_CHILD");
}

}  // namespace
}  // namespace overlapsim::kernels::fused
