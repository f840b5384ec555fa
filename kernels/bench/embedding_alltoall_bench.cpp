// embedding-alltoall-bench: DLRM-DCNv2's model-parallel embedding forward (every rank
// pools its tables' bags for the global batch, then each rank receives its local batch's
// rows of every table) and, with --passes backward, its backward (embedding_alltoall_
// backward_case.hpp: the gradient rows back to the table owners, then the per-lookup
// gradient), each fused kernel against the sequential designs, every variant in one
// interleaved loop per case. The forward's variants:
//   embedding+alltoall fused              one kernel: lookups store the pooled rows into
//                                         the destination ranks over NVLink, counters
//                                         (CUDA peer pointers)
//   embedding+alltoall fused_nccl_window  the same kernel, peers through NCCL's device API
//   embedding+alltoall sequential         our embedding-bag kernel per table, then NCCL's
//                                         grouped send/recv (one stream)
//   embedding+alltoall sequential_own     the fused kernel's lookups without the pushes (one
//                                         launch for all tables), then NCCL
//   embedding_bag own / fused_local       the lookups alone; alltoall nccl: the exchange alone
//   embedding+alltoall fused_b2b, fused_nccl_window_b2b, sequential_b2b: --b2b-calls calls
//                                         back to back with no alignment, mean per call
// Shape: the 26 DCNv2 tables (dim 128, MLPerf multi-hot sizes times --pooling-scales,
// rows capped at --max-rows), table-wise sharding (shard_tables), uniform indices, bf16.
// Before each timed variant an untimed 1-element all-reduce lines the ranks up; a time is
// the maximum over ranks of one call (CUDA events), median/min/max over --iterations.
// `wrong` (summed over ranks): elements of the design's received rows that differ from
// the sequential design's bits (exact: the same pooling arithmetic, the exchange moves
// bytes), plus the sequential design's unwritten elements in its row.
// CSV: overlap-bench's columns (bench_row.hpp): m = local batch, n = dim, k = lookups per
// sample over all tables, bytes = the rows a rank receives (tables x B x dim x 2), chunks
// = the fused kernel's grid. Rank 0 prints; --output also writes the file. Each case first
// lets the fused design pick its row loads in flight by timing its one-launch lookup
// (EmbeddingAllToAll::tune; both transports then run the choice; stderr names it and the
// two times); --row-loads 4|8 fixes it instead.
// --passes forward,backward runs every forward case, then every backward case (the backward
// needs no tables: --max-rows and --row-loads concern the forward alone).
//   embedding-alltoall-bench [--world N] [--passes forward] [--batches 256,1024,2112,8192,32768]
//       [--pooling-scales 1,4] [--max-rows 40000000] [--iterations 30] [--warmup 5]
//       [--b2b-calls 50] [--timeout 60] [--row-loads 0] [--backward-push auto|shift|spread]
//       [--backward-push-warps 0] [--backward-claim-tiles 0] [--seed S] [--output FILE]
// The --backward-* flags force the backward's push schedule and tile claims (0 and auto:
// the kernel's own choice), for A/B runs of one binary.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/bench/bench_row.hpp"
#include "kernels/bench/embedding_alltoall_backward_case.hpp"
#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/fused/embedding_alltoall.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/fill.hpp"
#include "kernels/harness/flag_parse.hpp"
#include "kernels/harness/multi_gpu.hpp"
#include "kernels/harness/random_values.hpp"

namespace {

using namespace overlapsim::kernels;
using overlapsim::kernels::bench::RowBuilder;
using overlapsim::kernels::fused::EmbeddingAllToAll;
using overlapsim::kernels::fused::EmbeddingAllToAllShape;
using overlapsim::kernels::fused::EmbeddingTable;
using overlapsim::kernels::fused::GemvTransport;

const std::string kProgram = "embedding-alltoall-bench";

// MLPerf Training DLRM-DCNv2 (mlcommons/training recommendation_v2/torchrec_dlrm:
// --num_embeddings_per_feature, --multi_hot_sizes): rows (Criteo 1TB, capped at 40M) and
// pooling of the 26 tables, dim 128.
constexpr std::int64_t kDcnRows[26] = {
    40000000, 39060,    17295,    7424,     20265,  3,     7122, 1543, 63,
    40000000, 3067956,  405282,   10,       2209,   11938, 155,  4,    976,
    14,       40000000, 40000000, 40000000, 590152, 12973, 108,  36};
constexpr std::int64_t kDcnPooling[26] = {3, 2, 1, 2, 6, 1, 1,  1,   1,  7,  3, 8, 1,
                                          6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1};
constexpr std::int64_t kDim = 128;

struct Settings {
  std::vector<std::int64_t> batches = {256, 1024, 2112, 8192, 32768};
  std::vector<std::int64_t> pooling_scales = {1, 4};
  std::int64_t max_rows = 40000000;
  int world = 0;
  int iterations = 30;
  int warmup = 5;
  int b2b_calls = 50;
  double timeout_s = 60;
  int row_loads = 0;                      // 0: tuned per case
  bool forward = true, backward = false;  // --passes
  // --backward-push auto|shift|spread, --backward-push-warps N, --backward-claim-tiles N
  fused::BackwardPush backward_push = fused::BackwardPush::kAuto;
  int backward_push_warps = 0, backward_claim_tiles = 0;
  std::uint64_t seed = 1;
  std::string output;
};

Settings parse(const std::vector<std::string>& args) {
  Settings s;
  FlagCursor cursor(kProgram, args);
  std::string flag;
  auto to_int = [&](const std::string& text, std::int64_t min, std::int64_t max) {
    return static_cast<int>(flag_int(kProgram, flag, text, min, max));
  };
  auto to_list = [&](const std::string& text, std::int64_t min, std::int64_t max) {
    std::vector<std::int64_t> out;
    for (const std::string& item : split_list(text))
      out.push_back(flag_int(kProgram, flag, item, min, max));
    return out;
  };
  while (cursor.next(&flag)) {
    if (flag == "--batches") {
      s.batches = to_list(cursor.value(), 1, 1 << 20);
    } else if (flag == "--pooling-scales") {
      s.pooling_scales = to_list(cursor.value(), 1, 64);
    } else if (flag == "--max-rows") {
      s.max_rows = flag_int(kProgram, flag, cursor.value(), 16, 40000000);
    } else if (flag == "--world") {
      s.world = to_int(cursor.value(), 1, 8);
    } else if (flag == "--iterations") {
      s.iterations = to_int(cursor.value(), 1, 100000);
    } else if (flag == "--warmup") {
      s.warmup = to_int(cursor.value(), 0, 100000);
    } else if (flag == "--b2b-calls") {
      s.b2b_calls = to_int(cursor.value(), 0, 100000);
    } else if (flag == "--timeout") {
      s.timeout_s = flag_double(kProgram, flag, cursor.value(), 1, 3600, "seconds in 1..3600");
    } else if (flag == "--row-loads") {
      s.row_loads = to_int(cursor.value(), 0, 8);
      if (s.row_loads != 0 && s.row_loads != 4 && s.row_loads != 8)
        bad_flag(kProgram, flag, cursor.value(), "0 (tuned), 4 or 8");
    } else if (flag == "--passes") {
      s.forward = s.backward = false;
      for (const std::string& pass : split_list(cursor.value())) {
        if (pass == "forward")
          s.forward = true;
        else if (pass == "backward")
          s.backward = true;
        else
          bad_flag(kProgram, flag, pass, "forward and/or backward");
      }
      if (!s.forward && !s.backward) bad_flag(kProgram, flag, "", "forward and/or backward");
    } else if (flag == "--backward-push") {
      const std::string v = cursor.value();
      if (v == "auto")
        s.backward_push = fused::BackwardPush::kAuto;
      else if (v == "shift")
        s.backward_push = fused::BackwardPush::kShift;
      else if (v == "spread")
        s.backward_push = fused::BackwardPush::kSpread;
      else
        bad_flag(kProgram, flag, v, "auto, shift or spread");
    } else if (flag == "--backward-push-warps") {
      s.backward_push_warps = to_int(cursor.value(), 0, 7);
    } else if (flag == "--backward-claim-tiles") {
      s.backward_claim_tiles = to_int(cursor.value(), 0, 64);
    } else if (flag == "--seed") {
      s.seed = static_cast<std::uint64_t>(flag_int(kProgram, flag, cursor.value(), 0));
    } else if (flag == "--output") {
      s.output = cursor.value();
    } else if (flag == "--help") {
      throw std::invalid_argument(kProgram +
                                  ": [--world N] [--passes forward,backward] [--batches B,...] "
                                  "[--pooling-scales S,...] "
                                  "[--max-rows R] [--iterations 30] [--warmup 5] "
                                  "[--b2b-calls 50] [--timeout 60] [--row-loads 0] "
                                  "[--backward-push auto|shift|spread] "
                                  "[--backward-push-warps 0] [--backward-claim-tiles 0] "
                                  "[--seed S] [--output FILE]");
    } else {
      bad_flag(kProgram, flag, "", "a known flag (--help lists them)");
    }
  }
  if (s.batches.empty() || s.pooling_scales.empty())
    bad_flag(kProgram, "--batches/--pooling-scales", "", "non-empty lists");
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

EmbeddingAllToAllShape dcn_shape(const Settings& s, std::int64_t batch, std::int64_t scale,
                                 int world) {
  EmbeddingAllToAllShape shape;
  for (int t = 0; t < 26; ++t)
    shape.tables.push_back({std::min(kDcnRows[t], s.max_rows), kDcnPooling[t] * scale});
  shape.owner = fused::shard_tables(shape.tables, world);
  shape.dim = kDim;
  shape.local_batch = batch;
  shape.world = world;
  return shape;
}

class Runner {
 public:
  Runner(const Settings& s, RankContext& ctx, std::vector<std::string>* lines)
      : settings_(s), ctx_(ctx), lines_(lines) {}

  Status run() {
    tags_ = bench::read_device_tags(ctx_.comm.world);
    if (settings_.forward) OVERLAPSIM_TRY(run_forward());
    if (!settings_.backward) return Status::success();
    bench::EmbeddingBackwardCaseSettings b;
    b.iterations = settings_.iterations;
    b.warmup = settings_.warmup;
    b.b2b_calls = settings_.b2b_calls;
    b.timeout_s = settings_.timeout_s;
    b.seed = settings_.seed;
    b.push = settings_.backward_push;
    b.push_warps = settings_.backward_push_warps;
    b.claim_tiles = settings_.backward_claim_tiles;
    for (std::int64_t scale : settings_.pooling_scales)
      for (std::int64_t batch : settings_.batches)
        OVERLAPSIM_TRY(bench::run_embedding_backward_case(
            b, dcn_shape(settings_, batch, scale, ctx_.comm.world), ctx_, tags_, lines_));
    return Status::success();
  }

 private:
  Status run_forward() {
    // Tables once (they do not depend on the batch): this rank's, filled at random.
    const EmbeddingAllToAllShape base = dcn_shape(settings_, 1, 1, ctx_.comm.world);
    slots_ = base.owned(ctx_.comm.rank);
    OVERLAPSIM_TRY(quiesce(ctx_, "embedding-a2a tables"));
    tables_.resize(slots_.size());
    for (std::size_t s = 0; s < slots_.size(); ++s) {
      const EmbeddingTable& t = base.tables[static_cast<std::size_t>(slots_[s])];
      OVERLAPSIM_TRY(tables_[s].allocate(static_cast<std::size_t>(t.rows * kDim) * 2));
      OVERLAPSIM_TRY(fill_random(
          tables_[s].data(), static_cast<std::size_t>(t.rows * kDim), DType::BF16,
          buffer_seed(settings_.seed, ctx_.comm.rank, static_cast<int>(s)), ctx_.compute_stream));
      table_ptrs_.push_back(tables_[s].data());
    }
    OVERLAPSIM_TRY(quiesce(ctx_, "embedding-a2a tables ready"));
    for (std::int64_t scale : settings_.pooling_scales)
      for (std::int64_t batch : settings_.batches)
        OVERLAPSIM_TRY(run_case(dcn_shape(settings_, batch, scale, ctx_.comm.world)));
    // The tables' memory back before any backward case.
    OVERLAPSIM_TRY(quiesce(ctx_, "embedding-a2a forward done"));
    tables_.clear();
    table_ptrs_.clear();
    return quiesce(ctx_, "embedding-a2a tables freed");
  }

  Status run_case(const EmbeddingAllToAllShape& shape) {
    const int world = ctx_.comm.world, rank = ctx_.comm.rank;
    cudaStream_t s = ctx_.compute_stream;
    OVERLAPSIM_TRY(quiesce(ctx_, "embedding-a2a alloc"));
    std::vector<DeviceBuffer> indices(slots_.size());
    std::vector<const std::int32_t*> index_ptrs;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const EmbeddingTable& t = shape.tables[static_cast<std::size_t>(slots_[i])];
      const std::size_t count = static_cast<std::size_t>(shape.global_batch() * t.pooling);
      OVERLAPSIM_TRY(indices[i].allocate(count * 4));
      OVERLAPSIM_TRY(
          fill_indices(indices[i].as<std::int32_t>(), count, static_cast<std::int32_t>(t.rows),
                       buffer_seed(settings_.seed, rank, 1000 + static_cast<int>(i)), s));
      index_ptrs.push_back(indices[i].as<std::int32_t>());
    }
    const std::size_t recv_count = fused::received_count(shape);
    DeviceBuffer out_seq, out_own, out_nccl, align;
    for (DeviceBuffer* b : {&out_seq, &out_own, &out_nccl})
      OVERLAPSIM_TRY(b->allocate(recv_count * 2));
    OVERLAPSIM_TRY(align.allocate(256));
    fused::EmbeddingAllToAllOptions options;
    options.timeout_s = settings_.timeout_s;
    if (settings_.row_loads != 0) options.row_loads = settings_.row_loads;
    EmbeddingAllToAll peer, window;
    OVERLAPSIM_TRY(peer.initialize(&ctx_.comm, shape, DType::BF16, options));
    const void* const* T = table_ptrs_.data();
    const std::int32_t* const* I = index_ptrs.data();
    std::string tuned = "not tuned";
    if (settings_.row_loads == 0) {
      OVERLAPSIM_TRY(quiesce(ctx_, "embedding-a2a tune"));
      OVERLAPSIM_TRY(peer.tune(T, I, s, &tuned));
    }
    if (rank == 0) {
      long long lookups = 0;
      for (const EmbeddingTable& t : shape.tables) lookups += t.pooling;
      std::fprintf(stderr, "%s: world %d batch %lld k %lld: row_loads %d grid %d (%s)\n",
                   kProgram.c_str(), world, static_cast<long long>(shape.local_batch), lookups,
                   peer.row_loads(), peer.grid(), tuned.c_str());
    }
    options.row_loads = peer.row_loads();
    options.transport = GemvTransport::NcclWindow;
    const Status window_status = window.initialize(&ctx_.comm, shape, DType::BF16, options);
    const bool window_ok = window_status.ok;
    if (!window_ok && rank == 0)
      std::fprintf(stderr, "%s: no nccl_window transport: %s\n", kProgram.c_str(),
                   window_status.message.c_str());
    OVERLAPSIM_TRY(fill_random(align.data(), 1, DType::BF16, 1, s));
    OVERLAPSIM_TRY(quiesce(ctx_, "embedding-a2a ready"));

    using Call = std::function<Status()>;
    const Call fused_call = [&] { return peer.run(T, I, s); };
    const Call window_call = [&] { return window.run(T, I, s); };
    const Call seq_call = [&] { return peer.run_sequential(T, I, out_seq.data(), s); };
    const Call own_call = [&] { return peer.run_sequential_own(T, I, out_own.data(), s); };
    const Call lookup_call = [&] { return peer.lookup(T, I, s); };
    const Call lookup_own_call = [&] { return peer.lookup_own(T, I, s); };
    const Call nccl_call = [&] { return peer.exchange(out_nccl.data(), s); };

    // Correctness.
    OVERLAPSIM_TRY(poison(out_seq.data(), recv_count, s));
    OVERLAPSIM_TRY(poison(out_own.data(), recv_count, s));
    OVERLAPSIM_TRY(seq_call());
    OVERLAPSIM_TRY(own_call());
    OVERLAPSIM_TRY(fused_call());
    if (window_ok) OVERLAPSIM_TRY(window_call());
    OVERLAPSIM_TRY(wait_stream(ctx_.comm, s, "embedding-a2a check"));
    OVERLAPSIM_TRY(peer.check_timeout(s));
    if (window_ok) OVERLAPSIM_TRY(window.check_timeout(s));
    std::uint64_t unwritten = 0, fused_off = 0, window_off = 0, own_off = 0;
    OVERLAPSIM_TRY(count_nonfinite(out_seq.data(), recv_count, DType::BF16, s, &unwritten));
    OVERLAPSIM_TRY(count_mismatches(peer.received(), out_seq.data(), recv_count, DType::BF16, 0.0,
                                    0.0, s, &fused_off));
    if (window_ok)
      OVERLAPSIM_TRY(count_mismatches(window.received(), out_seq.data(), recv_count, DType::BF16,
                                      0.0, 0.0, s, &window_off));
    OVERLAPSIM_TRY(count_mismatches(out_own.data(), out_seq.data(), recv_count, DType::BF16, 0.0,
                                    0.0, s, &own_off));
    std::vector<double> wrong = {double(fused_off), double(window_off), double(unwritten),
                                 double(own_off)};
    OVERLAPSIM_TRY(allreduce_host(ctx_.comm, s, wrong, ncclSum));

    struct Variant {
      std::string op, design;
      const Call* call;
      double wrong;
    };
    std::vector<Variant> variants = {
        {"embedding+alltoall", "fused", &fused_call, wrong[0]},
        {"embedding+alltoall", "fused_nccl_window", &window_call, wrong[1]},
        {"embedding+alltoall", "sequential", &seq_call, wrong[2]},
        {"embedding+alltoall", "sequential_own", &own_call, wrong[3]},
        {"embedding_bag", "own", &lookup_call, 0},
        {"embedding_bag", "fused_local", &lookup_own_call, 0},
        {"alltoall", "nccl", &nccl_call, 0}};
    if (!window_ok) variants.erase(variants.begin() + 1);
    const int nv = static_cast<int>(variants.size());
    for (int i = 0; i < settings_.warmup; ++i)
      for (const Variant& v : variants) OVERLAPSIM_TRY((*v.call)());
    const int iters = settings_.iterations;
    std::vector<cudaEvent_t> events(static_cast<std::size_t>(2 * nv * iters + 6));
    for (auto& e : events) CUDA_CHECK(cudaEventCreate(&e));
    auto ev = [&](int v, int i, int which) {
      return events[static_cast<std::size_t>((i * nv + v) * 2 + which)];
    };
    for (int i = 0; i < iters; ++i)
      for (int j = 0; j < nv; ++j) {
        const int v = (i + j) % nv;
        OVERLAPSIM_TRY(all_reduce(ctx_.comm, align.data(), align.data(), 1, DType::BF16, s));
        CUDA_CHECK(cudaEventRecord(ev(v, i, 0), s));
        OVERLAPSIM_TRY((*variants[static_cast<std::size_t>(v)].call)());
        CUDA_CHECK(cudaEventRecord(ev(v, i, 1), s));
      }
    constexpr int kB2b = 3;
    cudaEvent_t* b2b = events.data() + 2 * nv * iters;
    const Call* b2b_calls[kB2b] = {&fused_call, &window_call, &seq_call};
    const char* b2b_names[kB2b] = {"fused_b2b", "fused_nccl_window_b2b", "sequential_b2b"};
    const double b2b_wrong[kB2b] = {wrong[0], wrong[1], wrong[2]};
    for (int j = 0; j < kB2b && settings_.b2b_calls > 0; ++j) {
      if (j == 1 && !window_ok) continue;
      OVERLAPSIM_TRY(all_reduce(ctx_.comm, align.data(), align.data(), 1, DType::BF16, s));
      CUDA_CHECK(cudaEventRecord(b2b[2 * j], s));
      for (int i = 0; i < settings_.b2b_calls; ++i) OVERLAPSIM_TRY((*b2b_calls[j])());
      CUDA_CHECK(cudaEventRecord(b2b[2 * j + 1], s));
    }
    OVERLAPSIM_TRY(wait_stream(ctx_.comm, s, "embedding-a2a timing"));
    OVERLAPSIM_TRY(peer.check_timeout(s));
    if (window_ok) OVERLAPSIM_TRY(window.check_timeout(s));
    std::vector<double> times(static_cast<std::size_t>(nv * iters + kB2b), 0.0);
    for (int v = 0; v < nv; ++v)
      for (int i = 0; i < iters; ++i) {
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, ev(v, i, 0), ev(v, i, 1)));
        times[static_cast<std::size_t>(v * iters + i)] = 1e-3 * ms;
      }
    for (int j = 0; j < kB2b && settings_.b2b_calls > 0; ++j) {
      if (j == 1 && !window_ok) continue;
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, b2b[2 * j], b2b[2 * j + 1]));
      times[static_cast<std::size_t>(nv * iters + j)] = 1e-3 * ms / settings_.b2b_calls;
    }
    for (auto& e : events) cudaEventDestroy(e);
    OVERLAPSIM_TRY(allreduce_host(ctx_.comm, s, times, ncclMax));

    std::int64_t lookups = 0;
    for (const EmbeddingTable& t : shape.tables) lookups += t.pooling;
    const std::uint64_t bytes = recv_count * 2;
    const double factor = busbw_factor(CollectiveOp::AllToAll, world);
    auto emit = [&](const std::string& op, const std::string& design, double med, double mn,
                    double mx, double w) {
      RowBuilder r(op, design, "bf16");
      r.shape(shape.local_batch, shape.dim, lookups)
          .bytes(op == "embedding_bag" ? 0 : bytes)
          .chunks(peer.grid())
          .times(med, mn, mx)
          .wrong(static_cast<std::uint64_t>(w));
      if (op != "embedding_bag") r.busbw_factor(factor);
      if (rank == 0) {
        lines_->push_back(bench::csv_line(tags_, r.row()));
        std::printf("%s\n", lines_->back().c_str());
        std::fflush(stdout);
      }
    };
    for (int v = 0; v < nv; ++v) {
      std::vector<double> t(times.begin() + v * iters, times.begin() + (v + 1) * iters);
      const auto [mn, mx] = std::minmax_element(t.begin(), t.end());
      const Variant& var = variants[static_cast<std::size_t>(v)];
      emit(var.op, var.design, median(t), *mn, *mx, var.wrong);
    }
    for (int j = 0; j < kB2b && settings_.b2b_calls > 0; ++j) {
      if (j == 1 && !window_ok) continue;
      const double t = times[static_cast<std::size_t>(nv * iters + j)];
      emit("embedding+alltoall", b2b_names[j], t, t, t, b2b_wrong[j]);
    }
    return quiesce(ctx_, "embedding-a2a case done");
  }

  const Settings& settings_;
  RankContext& ctx_;
  std::vector<std::string>* lines_;
  bench::DeviceTags tags_;
  std::vector<int> slots_;
  std::vector<DeviceBuffer> tables_;
  std::vector<const void*> table_ptrs_;
};

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  try {
    settings = parse(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  HarnessOptions h;
  h.world = settings.world;
  h.timeout_s = settings.timeout_s;
  h.blocking_comms = true;  // timings: non-blocking communicators add host time per call
  if (visible_gpu_count() < std::max(settings.world, 1)) {
    std::fprintf(stderr, "%s: needs %d GPU(s), %d visible\n", kProgram.c_str(),
                 std::max(settings.world, 1), visible_gpu_count());
    return 2;
  }
  std::vector<std::string> lines;
  std::printf("%s\n", bench::csv_header().c_str());
  std::fflush(stdout);
  const Status status = run_ranks(h, [&](RankContext& ctx) -> Status {
    Runner runner(settings, ctx, &lines);
    return runner.run();
  });
  if (!settings.output.empty()) {
    const std::string tmp = settings.output + ".tmp";
    {
      std::ofstream out(tmp);
      out << bench::csv_header() << "\n";
      for (const auto& l : lines) out << l << "\n";
    }
    std::rename(tmp.c_str(), settings.output.c_str());
  }
  if (!status.ok) {
    std::fprintf(stderr, "%s: %s\n", kProgram.c_str(), status.message.c_str());
    return 1;
  }
  return 0;
}
