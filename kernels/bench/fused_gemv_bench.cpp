// fused-gemv-bench: decode's row-parallel projection (GEMV over a K shard, then an
// all-reduce of tokens x N over the ranks) as the fused kernel (kernels/fused/) against
// the sequential baselines, every variant in one interleaved loop per case:
//   gemv+allreduce fused           one kernel: GEMV, pushes to the peers (epoch-tagged lines),
//   reduction
//                                  (peers through CUDA peer pointers)
//   gemv+allreduce fused_nccl_window  the same kernel, peers through NCCL's device API
//                                  (a symmetric window, LSA pointers)
//   gemv+allreduce sequential      cuBLASLt GEMV, then ncclAllReduce, one stream
//   gemv+allreduce sequential_own  the fused kernel's GEMV alone (run_local), then NCCL
//   gemv cublas / gemv own         the GEMVs alone; allreduce nccl: the collective alone
//   gemv+allreduce fused_b2b, fused_nccl_window_b2b, sequential_b2b: --b2b-calls calls back
//                                  to back with no alignment between them, mean per call
// A case is (tokens, N x K) with K the full reduction length; each rank holds K / world.
// Weights and activations rotate over enough sets to exceed L2 three times; before each
// timed variant an untimed 1-element all-reduce lines the ranks up; a time is the maximum
// over ranks of one call (CUDA events), median/min/max over --iterations.
// `wrong` (fused and sequential rows, summed over ranks): unwritten elements, plus
// elements off the other sequential design by more than 2^-6 |ref| + 2^-6 rms(ref) (exact
// for fused against sequential_own with 2 ranks, where the order of the sum is the same).
// CSV: overlap-bench's columns (bench_row.hpp), m = tokens, n = N, k = K / world, bytes =
// the all-reduce's bytes. Rank 0 prints; --output also writes the file; stderr names each
// case's K splits and grid. By default every case first tunes the fused design's K split
// and L2 prefetch hint (GemvAllReduce::tune: each timed on this case's buffers, the fastest
// kept, the same for both transports; stderr lists the candidates' times) and `chunks`
// holds the split in the rows of designs that run the fused kernel. --k-splits N (N > 0)
// fixes the split (no hint) instead, --tune 0 keeps auto_k_splits' rule.
// --variants LIST: the fused kernel's variants beside it in the same loop, each its own
// design with its own tuned split (peers through CUDA peer pointers):
//   fused_early        GemvAllReduceOptions::early_claim (claim the next unit before the
//                      last loop iteration, L2 prefetch of its head)
//   fused_fine         fine_k_splits (the tuner also tries 3, 6, 12, 16 splits)
//   fused_early_fine   both
//   fused_lastwave     tune_last_wave (the tuner also tries finer last waves: the last
//                      slices cut into 2, 4 or 8 K ranges, handed out last)
//   fused_lastwave_fixed  last_wave {half the CTAs' worth of slices, 4 ranges}, the K split
//                      and hint tuned under it
// each with a _b2b row; `wrong`: unwritten, off cuBLAS + NCCL as fused, and off the
// variant's own GEMV (run_local) through NCCL exactly where fused is exact.
// --trace-calls N --trace FILE: after the timings, N more fused calls (each behind the
// aligning all-reduce) record per-CTA timestamps (GemvKernelArgs::trace); every rank appends
// them to FILE.rank<r>.csv (design, tokens, n, k, call, cta, start/pushed/arrived/end ns,
// the call's event-timed ns), then as many calls of the GEMV alone (run_local: start and
// end of its units only), then as many of each --variants design.
//   fused-gemv-bench [--tokens 1,4,16,64] [--shapes 8192x8192,...] [--world N]
//                    [--iterations 50] [--warmup 10] [--b2b-calls 100] [--timeout 60]
//                    [--k-splits 0] [--tune 1] [--trace-calls 0 --trace FILE] [--seed S]
//                    [--variants early,fine,early_fine,lastwave,lastwave_fixed]
//                    [--output FILE]
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/bench/bench_row.hpp"
#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/fused/gemv_allreduce.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/fill.hpp"
#include "kernels/harness/flag_parse.hpp"
#include "kernels/harness/multi_gpu.hpp"
#include "kernels/harness/random_values.hpp"
#include "kernels/ops/gemm_cublaslt.hpp"

namespace {

using namespace overlapsim::kernels;
using overlapsim::kernels::bench::BenchRow;
using overlapsim::kernels::bench::RowBuilder;

const std::string kProgram = "fused-gemv-bench";

struct Projection {
  std::int64_t n = 0;
  std::int64_t k = 0;  // the full K, split over the ranks
};

struct Settings {
  std::vector<int> tokens = {1, 4, 16, 64};
  // Llama-3 70B o_proj and down_proj, 405B o_proj and down_proj (N x full K).
  std::vector<Projection> shapes = {{8192, 8192}, {8192, 28672}, {16384, 16384}, {16384, 53248}};
  int world = 0;
  int iterations = 50;
  int warmup = 10;
  int b2b_calls = 100;
  double timeout_s = 60;
  int k_splits = 0;
  bool tune = true;
  int trace_calls = 0;
  std::string trace;
  std::uint64_t seed = 1;
  std::vector<std::string> variants;  // early, fine, early_fine, lastwave, lastwave_fixed
  std::string output;
};

Settings parse(const std::vector<std::string>& args) {
  Settings s;
  FlagCursor cursor(kProgram, args);
  std::string flag;
  auto to_int = [&](const std::string& text, std::int64_t min, std::int64_t max) {
    return static_cast<int>(flag_int(kProgram, flag, text, min, max));
  };
  while (cursor.next(&flag)) {
    if (flag == "--tokens") {
      s.tokens.clear();
      for (const std::string& t : split_list(cursor.value())) s.tokens.push_back(to_int(t, 1, 64));
    } else if (flag == "--shapes") {
      s.shapes.clear();
      for (const std::string& item : split_list(cursor.value())) {
        const auto dims = split_list(item, 'x');
        if (dims.size() != 2) bad_flag(kProgram, flag, item, "of the form NxK (K: the full K)");
        s.shapes.push_back(
            {flag_int(kProgram, flag, dims[0], 32), flag_int(kProgram, flag, dims[1], 32)});
      }
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
    } else if (flag == "--k-splits") {
      s.k_splits = to_int(cursor.value(), 0, 8);
    } else if (flag == "--tune") {
      s.tune = to_int(cursor.value(), 0, 1) == 1;
    } else if (flag == "--trace-calls") {
      s.trace_calls = to_int(cursor.value(), 0, 1000);
    } else if (flag == "--trace") {
      s.trace = cursor.value();
    } else if (flag == "--seed") {
      s.seed = static_cast<std::uint64_t>(flag_int(kProgram, flag, cursor.value(), 0));
    } else if (flag == "--variants") {
      s.variants.clear();
      for (const std::string& v : split_list(cursor.value())) {
        if (v != "early" && v != "fine" && v != "early_fine" && v != "lastwave" &&
            v != "lastwave_fixed")
          bad_flag(kProgram, flag, v,
                   "a list of early, fine, early_fine, lastwave, lastwave_fixed");
        s.variants.push_back(v);
      }
    } else if (flag == "--output") {
      s.output = cursor.value();
    } else if (flag == "--help") {
      throw std::invalid_argument(
          kProgram +
          ": [--tokens 1,4,16,64] [--shapes NxK,...] [--world N] [--iterations 50] "
          "[--warmup 10] [--b2b-calls 100] [--timeout 60] [--k-splits 0] "
          "[--tune 1] [--trace-calls 0 --trace FILE] [--seed S] "
          "[--variants early,fine,early_fine,lastwave,lastwave_fixed] [--output FILE]");
    } else {
      bad_flag(kProgram, flag, "", "a known flag (--help lists them)");
    }
  }
  if (s.tokens.empty() || s.shapes.empty())
    bad_flag(kProgram, "--tokens/--shapes", "", "non-empty lists");
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// One --variants design: the fused kernel with other options, its output and the same
// GEMV's partial through NCCL (its exact reference with 2 ranks).
struct VariantDesign {
  std::string name;  // fused_early, fused_fine, fused_early_fine, fused_lastwave(_fixed)
  fused::GemvAllReduce design;
  DeviceBuffer y, part, y_own;
  std::string tuned = "not tuned";
};

// One rank's buffers and designs for one case.
struct CaseState {
  int tokens = 0;
  std::int64_t n = 0, k = 0;
  std::size_t y_count = 0;
  int sets = 1;
  std::vector<DeviceBuffer> x, w;
  DeviceBuffer y_fused, y_seq, y_own, part_cublas, part_own, y_nccl, align;
  DeviceBuffer y_window;
  fused::GemvAllReduce fused, fused_window;
  std::vector<std::unique_ptr<VariantDesign>> variants;
  CublasLtGemm gemv;
};

class Runner {
 public:
  Runner(const Settings& s, RankContext& ctx, std::vector<std::string>* lines)
      : settings_(s), ctx_(ctx), lines_(lines) {}

  Status run() {
    CUBLAS_CHECK(cublasLtCreate(&lt_));
    OVERLAPSIM_TRY(workspace_.allocate(kWorkspaceBytes));
    int device = 0, l2 = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    l2_bytes_ = static_cast<std::size_t>(l2);
    tags_ = bench::read_device_tags(ctx_.comm.world);
    Status status = Status::success();
    for (const Projection& p : settings_.shapes) {
      for (int t : settings_.tokens) {
        status = run_case(p, t);
        if (!status.ok) break;
      }
      if (!status.ok) break;
    }
    cublasLtDestroy(lt_);
    return status;
  }

 private:
  static constexpr std::size_t kWorkspaceBytes = 32u << 20;

  Status run_case(const Projection& p, int tokens) {
    const int world = ctx_.comm.world, rank = ctx_.comm.rank;
    if (p.k % world != 0)
      return Status::failure("K " + std::to_string(p.k) + " not divisible by " +
                             std::to_string(world));
    OVERLAPSIM_TRY(
        fused::GemvAllReduce::can_implement(tokens, p.n, p.k / world, DType::BF16, world));
    OVERLAPSIM_TRY(quiesce(ctx_, "fused-gemv alloc"));
    CaseState c;
    c.tokens = tokens;
    c.n = p.n;
    c.k = p.k / world;
    c.y_count = static_cast<std::size_t>(tokens) * c.n;
    const std::size_t w_bytes = static_cast<std::size_t>(c.n) * c.k * 2;
    c.sets =
        static_cast<int>(std::clamp<std::size_t>((3 * l2_bytes_ + w_bytes - 1) / w_bytes, 1, 8));
    cudaStream_t s = ctx_.compute_stream;
    c.x.resize(static_cast<std::size_t>(c.sets));
    c.w.resize(static_cast<std::size_t>(c.sets));
    for (int i = 0; i < c.sets; ++i) {
      OVERLAPSIM_TRY(c.x[i].allocate(static_cast<std::size_t>(tokens) * c.k * 2));
      OVERLAPSIM_TRY(c.w[i].allocate(w_bytes));
    }
    for (DeviceBuffer* b :
         {&c.y_fused, &c.y_seq, &c.y_own, &c.part_cublas, &c.part_own, &c.y_nccl, &c.y_window})
      OVERLAPSIM_TRY(b->allocate(c.y_count * 2));
    OVERLAPSIM_TRY(c.align.allocate(256));
    fused::GemvAllReduceOptions options;
    options.timeout_s = settings_.timeout_s;
    options.k_splits = settings_.k_splits;
    OVERLAPSIM_TRY(c.fused.initialize(&ctx_.comm, tokens, c.n, c.k, DType::BF16, options));
    options.transport = fused::GemvTransport::NcclWindow;
    // Every rank fails alike where this NCCL has no symmetric windows: report, go on without.
    const Status window =
        c.fused_window.initialize(&ctx_.comm, tokens, c.n, c.k, DType::BF16, options);
    const bool window_ok = window.ok;
    if (!window_ok && rank == 0)
      std::fprintf(stderr, "%s: no nccl_window transport: %s\n", kProgram.c_str(),
                   window.message.c_str());
    for (const std::string& name : settings_.variants) {
      auto v = std::make_unique<VariantDesign>();
      v->name = "fused_" + name;
      fused::GemvAllReduceOptions vo;
      vo.timeout_s = settings_.timeout_s;
      vo.k_splits = settings_.k_splits;
      const bool last_wave = name.rfind("lastwave", 0) == 0;
      vo.early_claim = !last_wave && name != "fine";
      vo.fine_k_splits = !last_wave && name != "early";
      vo.tune_last_wave = name == "lastwave";
      if (name == "lastwave_fixed") vo.last_wave = fused::GemvLastWave{0, 4};
      for (DeviceBuffer* b : {&v->y, &v->part, &v->y_own})
        OVERLAPSIM_TRY(b->allocate(c.y_count * 2));
      OVERLAPSIM_TRY(v->design.initialize(&ctx_.comm, tokens, c.n, c.k, DType::BF16, vo));
      c.variants.push_back(std::move(v));
    }
    OVERLAPSIM_TRY(c.gemv.initialize(lt_, GemmShape{tokens, c.n, c.k}, DType::BF16, GemmBatching{},
                                     256, workspace_.data(), kWorkspaceBytes));
    for (int i = 0; i < c.sets; ++i) {
      OVERLAPSIM_TRY(fill_random(c.x[i].data(), static_cast<std::size_t>(tokens) * c.k, DType::BF16,
                                 buffer_seed(settings_.seed, rank, 2 * i), s));
      OVERLAPSIM_TRY(fill_random(c.w[i].data(), w_bytes / 2, DType::BF16,
                                 buffer_seed(settings_.seed, rank, 2 * i + 1), s));
    }
    OVERLAPSIM_TRY(fill_random(c.align.data(), 1, DType::BF16, 1, s));
    OVERLAPSIM_TRY(quiesce(ctx_, "fused-gemv ready"));
    std::string tuned = "not tuned";
    if (settings_.tune && settings_.k_splits == 0) {
      std::vector<const void*> xs, ws;
      for (int i = 0; i < c.sets; ++i) {
        xs.push_back(c.x[static_cast<std::size_t>(i)].data());
        ws.push_back(c.w[static_cast<std::size_t>(i)].data());
      }
      OVERLAPSIM_TRY(c.fused.tune(c.sets, xs.data(), ws.data(), c.part_own.data(), s, &tuned));
      // The window transport runs the same split: its bits must equal fused's.
      if (window_ok)
        OVERLAPSIM_TRY(c.fused_window.configure(c.fused.k_splits(), c.fused.l2_prefetch(), s));
      for (auto& v : c.variants)
        OVERLAPSIM_TRY(v->design.tune(c.sets, xs.data(), ws.data(), v->part.data(), s, &v->tuned));
      OVERLAPSIM_TRY(quiesce(ctx_, "fused-gemv tuned"));
    }
    if (rank == 0) {
      std::fprintf(stderr, "%s: tokens %d n %lld k %lld: k_splits %d l2_prefetch %d grid %d (%s)\n",
                   kProgram.c_str(), tokens, static_cast<long long>(c.n),
                   static_cast<long long>(c.k), c.fused.k_splits(), int(c.fused.l2_prefetch()),
                   c.fused.grid(), tuned.c_str());
      for (const auto& v : c.variants)
        std::fprintf(stderr, "%s:   %s: k_splits %d l2_prefetch %d last_wave %dx%d grid %d (%s)\n",
                     kProgram.c_str(), v->name.c_str(), v->design.k_splits(),
                     int(v->design.l2_prefetch()), v->design.last_wave().slices,
                     v->design.last_wave().splits, v->design.grid(), v->tuned.c_str());
    }

    using Call = std::function<Status(int)>;
    auto X = [&](int i) { return c.x[static_cast<std::size_t>(i % c.sets)].data(); };
    auto W = [&](int i) { return c.w[static_cast<std::size_t>(i % c.sets)].data(); };
    const Call fused_call = [&](int i) { return c.fused.run(X(i), W(i), c.y_fused.data(), s); };
    const Call window_call = [&](int i) {
      return c.fused_window.run(X(i), W(i), c.y_window.data(), s);
    };
    const Call seq_call = [&](int i) {
      OVERLAPSIM_TRY(c.gemv.run(X(i), W(i), c.part_cublas.data(), s));
      return all_reduce(ctx_.comm, c.part_cublas.data(), c.y_seq.data(), c.y_count, DType::BF16, s);
    };
    const Call own_call = [&](int i) {
      OVERLAPSIM_TRY(c.fused.run_local(X(i), W(i), c.part_own.data(), s));
      return all_reduce(ctx_.comm, c.part_own.data(), c.y_own.data(), c.y_count, DType::BF16, s);
    };
    const Call gemv_cublas = [&](int i) { return c.gemv.run(X(i), W(i), c.part_cublas.data(), s); };
    const Call gemv_own = [&](int i) {
      return c.fused.run_local(X(i), W(i), c.part_own.data(), s);
    };
    const Call nccl = [&](int) {
      return all_reduce(ctx_.comm, c.part_cublas.data(), c.y_nccl.data(), c.y_count, DType::BF16,
                        s);
    };
    std::vector<Call> variant_calls;
    for (auto& v : c.variants) {
      VariantDesign* d = v.get();
      variant_calls.push_back([&, d](int i) { return d->design.run(X(i), W(i), d->y.data(), s); });
    }

    // Correctness on set 0.
    for (DeviceBuffer* b : {&c.y_fused, &c.y_seq, &c.y_own, &c.y_window})
      OVERLAPSIM_TRY(poison(b->data(), c.y_count, s));
    OVERLAPSIM_TRY(fused_call(0));
    if (window_ok) OVERLAPSIM_TRY(window_call(0));
    OVERLAPSIM_TRY(seq_call(0));
    OVERLAPSIM_TRY(own_call(0));
    OVERLAPSIM_TRY(wait_stream(ctx_.comm, s, "fused-gemv check"));
    OVERLAPSIM_TRY(c.fused.check_timeout(s));
    if (window_ok) OVERLAPSIM_TRY(c.fused_window.check_timeout(s));
    const double rms = std::sqrt(static_cast<double>(p.k)) / 3;  // x, w uniform in [-1, 1)
    std::uint64_t unwritten_f = 0, unwritten_s = 0, off_own = 0, off_seq = 0, seq_off = 0;
    OVERLAPSIM_TRY(count_nonfinite(c.y_fused.data(), c.y_count, DType::BF16, s, &unwritten_f));
    OVERLAPSIM_TRY(count_nonfinite(c.y_seq.data(), c.y_count, DType::BF16, s, &unwritten_s));
    const double exact = world == 2 ? 0.0 : 1.0 / 64;
    OVERLAPSIM_TRY(count_mismatches(c.y_fused.data(), c.y_own.data(), c.y_count, DType::BF16, exact,
                                    exact * rms, s, &off_own));
    OVERLAPSIM_TRY(count_mismatches(c.y_fused.data(), c.y_seq.data(), c.y_count, DType::BF16,
                                    1.0 / 64, rms / 64, s, &off_seq));
    OVERLAPSIM_TRY(count_mismatches(c.y_seq.data(), c.y_own.data(), c.y_count, DType::BF16,
                                    1.0 / 64, rms / 64, s, &seq_off));
    // The window transport runs the same kernel: its result must equal the other's bits.
    std::uint64_t unwritten_w = 0, window_off = 0;
    OVERLAPSIM_TRY(count_nonfinite(c.y_window.data(), c.y_count, DType::BF16, s, &unwritten_w));
    OVERLAPSIM_TRY(count_mismatches(c.y_window.data(), c.y_fused.data(), c.y_count, DType::BF16,
                                    0.0, 0.0, s, &window_off));
    std::vector<double> wrong = {double(unwritten_f + off_own + off_seq),
                                 double(unwritten_s + seq_off), double(unwritten_w + window_off)};
    // Each variant: unwritten, off cuBLAS + NCCL, off its own GEMV through NCCL (wrong[3 + j]).
    for (std::size_t j = 0; j < c.variants.size(); ++j) {
      VariantDesign& v = *c.variants[j];
      OVERLAPSIM_TRY(poison(v.y.data(), c.y_count, s));
      OVERLAPSIM_TRY(variant_calls[j](0));
      OVERLAPSIM_TRY(v.design.run_local(X(0), W(0), v.part.data(), s));
      OVERLAPSIM_TRY(
          all_reduce(ctx_.comm, v.part.data(), v.y_own.data(), c.y_count, DType::BF16, s));
      OVERLAPSIM_TRY(wait_stream(ctx_.comm, s, "fused-gemv variant check"));
      OVERLAPSIM_TRY(v.design.check_timeout(s));
      std::uint64_t unwritten = 0, off_v_own = 0, off_v_seq = 0;
      OVERLAPSIM_TRY(count_nonfinite(v.y.data(), c.y_count, DType::BF16, s, &unwritten));
      OVERLAPSIM_TRY(count_mismatches(v.y.data(), v.y_own.data(), c.y_count, DType::BF16, exact,
                                      exact * rms, s, &off_v_own));
      OVERLAPSIM_TRY(count_mismatches(v.y.data(), c.y_seq.data(), c.y_count, DType::BF16, 1.0 / 64,
                                      rms / 64, s, &off_v_seq));
      wrong.push_back(double(unwritten + off_v_own + off_v_seq));
    }
    OVERLAPSIM_TRY(allreduce_host(ctx_.comm, s, wrong, ncclSum));

    // Interleaved loop.
    struct Variant {
      std::string op, design;
      const Call* call;
    };
    std::vector<Variant> variants = {{"gemv+allreduce", "fused", &fused_call},
                                     {"gemv+allreduce", "fused_nccl_window", &window_call},
                                     {"gemv+allreduce", "sequential", &seq_call},
                                     {"gemv+allreduce", "sequential_own", &own_call},
                                     {"gemv", "cublas", &gemv_cublas},
                                     {"gemv", "own", &gemv_own},
                                     {"allreduce", "nccl", &nccl}};
    if (!window_ok) variants.erase(variants.begin() + 1);
    for (std::size_t j = 0; j < c.variants.size(); ++j)
      variants.push_back({"gemv+allreduce", c.variants[j]->name, &variant_calls[j]});
    const int nv = static_cast<int>(variants.size());
    for (int i = 0; i < settings_.warmup; ++i)
      for (const Variant& v : variants) OVERLAPSIM_TRY((*v.call)(i));
    const int iters = settings_.iterations;
    // Back to back: both fused transports, the sequential design and the variants,
    // --b2b-calls calls each.
    const int kB2b = 3 + static_cast<int>(c.variants.size());
    std::vector<cudaEvent_t> events(static_cast<std::size_t>(2 * nv * iters + 2 * kB2b));
    for (auto& e : events) CUDA_CHECK(cudaEventCreate(&e));
    auto ev = [&](int v, int i, int which) {
      return events[static_cast<std::size_t>((i * nv + v) * 2 + which)];
    };
    for (int i = 0; i < iters; ++i)
      for (int j = 0; j < nv; ++j) {
        const int v = (i + j) % nv;
        OVERLAPSIM_TRY(all_reduce(ctx_.comm, c.align.data(), c.align.data(), 1, DType::BF16, s));
        CUDA_CHECK(cudaEventRecord(ev(v, i, 0), s));
        OVERLAPSIM_TRY((*variants[static_cast<std::size_t>(v)].call)(settings_.warmup + i));
        CUDA_CHECK(cudaEventRecord(ev(v, i, 1), s));
      }
    cudaEvent_t* b2b = events.data() + 2 * nv * iters;
    std::vector<const Call*> b2b_calls = {&fused_call, &window_call, &seq_call};
    std::vector<std::string> b2b_names = {"fused_b2b", "fused_nccl_window_b2b", "sequential_b2b"};
    std::vector<int> b2b_wrong = {0, 2, 1};
    for (std::size_t j = 0; j < c.variants.size(); ++j) {
      b2b_calls.push_back(&variant_calls[j]);
      b2b_names.push_back(c.variants[j]->name + "_b2b");
      b2b_wrong.push_back(3 + static_cast<int>(j));
    }
    for (int j = 0; j < kB2b && settings_.b2b_calls > 0; ++j) {
      if (j == 1 && !window_ok) continue;
      OVERLAPSIM_TRY(all_reduce(ctx_.comm, c.align.data(), c.align.data(), 1, DType::BF16, s));
      CUDA_CHECK(cudaEventRecord(b2b[2 * j], s));
      for (int i = 0; i < settings_.b2b_calls; ++i) OVERLAPSIM_TRY((*b2b_calls[j])(i));
      CUDA_CHECK(cudaEventRecord(b2b[2 * j + 1], s));
    }
    OVERLAPSIM_TRY(wait_stream(ctx_.comm, s, "fused-gemv timing"));
    OVERLAPSIM_TRY(c.fused.check_timeout(s));
    if (window_ok) OVERLAPSIM_TRY(c.fused_window.check_timeout(s));
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
    for (auto& v : c.variants) OVERLAPSIM_TRY(v->design.check_timeout(s));
    OVERLAPSIM_TRY(allreduce_host(ctx_.comm, s, times, ncclMax));
    if (settings_.trace_calls > 0 && !settings_.trace.empty()) {
      OVERLAPSIM_TRY(trace_fused(c, c.fused, fused_call, s, "fused"));
      OVERLAPSIM_TRY(trace_fused(c, c.fused, gemv_own, s, "own"));
      for (std::size_t j = 0; j < c.variants.size(); ++j)
        OVERLAPSIM_TRY(trace_fused(c, c.variants[j]->design, variant_calls[j], s,
                                   c.variants[j]->name.c_str()));
    }

    const std::uint64_t bytes = c.y_count * 2;
    const double flops = 2.0 * tokens * static_cast<double>(c.n) * static_cast<double>(c.k);
    const double factor = busbw_factor(CollectiveOp::AllReduce, world);
    // The K split of the fused kernel a design runs (0: none).
    auto splits_of = [&](const std::string& design) {
      for (const auto& v : c.variants)
        if (design.rfind(v->name, 0) == 0 &&
            (design.size() == v->name.size() || design.substr(v->name.size()) == "_b2b"))
          return v->design.k_splits();
      if (design.rfind("fused", 0) == 0 || design == "sequential_own" || design == "own")
        return c.fused.k_splits();
      return 0;
    };
    auto emit = [&](const std::string& op, const std::string& design, double med, double mn,
                    double mx, std::uint64_t w) {
      RowBuilder r(op, design, "bf16");
      r.shape(tokens, c.n, c.k).bytes(op == "gemv" ? 0 : bytes).times(med, mn, mx).wrong(w);
      if (const int splits = splits_of(design); splits > 0) r.chunks(splits);
      if (op != "allreduce") r.flops(flops);
      if (op != "gemv") r.busbw_factor(factor);
      if (rank == 0) {
        lines_->push_back(bench::csv_line(tags_, r.row()));
        std::printf("%s\n", lines_->back().c_str());
        std::fflush(stdout);
      }
    };
    for (int v = 0; v < nv; ++v) {
      std::vector<double> t(times.begin() + v * iters, times.begin() + (v + 1) * iters);
      const auto [mn, mx] = std::minmax_element(t.begin(), t.end());
      const std::string& design = variants[static_cast<std::size_t>(v)].design;
      double wd = design == "fused"               ? wrong[0]
                  : design == "fused_nccl_window" ? wrong[2]
                  : design == "sequential"        ? wrong[1]
                                                  : 0.0;
      for (std::size_t j = 0; j < c.variants.size(); ++j)
        if (design == c.variants[j]->name) wd = wrong[3 + j];
      const std::uint64_t w = static_cast<std::uint64_t>(wd);
      emit(variants[static_cast<std::size_t>(v)].op, variants[static_cast<std::size_t>(v)].design,
           median(t), *mn, *mx, w);
    }
    for (int j = 0; j < kB2b && settings_.b2b_calls > 0; ++j) {
      if (j == 1 && !window_ok) continue;
      const double t = times[static_cast<std::size_t>(nv * iters + j)];
      emit("gemv+allreduce", b2b_names[j], t, t, t,
           static_cast<std::uint64_t>(wrong[b2b_wrong[j]]));
    }
    return quiesce(ctx_, "fused-gemv case done");
  }

  // --trace-calls: per-CTA timestamps of that many aligned fused calls, appended to
  // <--trace>.rank<r>.csv.
  Status trace_fused(CaseState& c, fused::GemvAllReduce& design,
                     const std::function<Status(int)>& call, cudaStream_t s, const char* name) {
    const int calls = settings_.trace_calls, grid = design.grid();
    const std::size_t per_call = 4 * static_cast<std::size_t>(grid);
    DeviceBuffer trace;
    OVERLAPSIM_TRY(trace.allocate(per_call * calls * sizeof(std::uint64_t)));
    CUDA_CHECK(cudaMemsetAsync(trace.data(), 0, per_call * calls * sizeof(std::uint64_t), s));
    // Events around each call too: their span against the CTAs' span.
    std::vector<cudaEvent_t> events(2 * static_cast<std::size_t>(calls));
    for (auto& e : events) CUDA_CHECK(cudaEventCreate(&e));
    for (int i = 0; i < calls; ++i) {
      OVERLAPSIM_TRY(all_reduce(ctx_.comm, c.align.data(), c.align.data(), 1, DType::BF16, s));
      design.set_trace(trace.as<std::uint64_t>() + per_call * i);
      CUDA_CHECK(cudaEventRecord(events[2 * i], s));
      const Status st = call(i);
      CUDA_CHECK(cudaEventRecord(events[2 * i + 1], s));
      design.set_trace(nullptr);
      OVERLAPSIM_TRY(st);
    }
    OVERLAPSIM_TRY(wait_stream(ctx_.comm, s, "fused-gemv trace"));
    OVERLAPSIM_TRY(design.check_timeout(s));
    std::vector<float> event_ms(static_cast<std::size_t>(calls));
    for (int i = 0; i < calls; ++i)
      CUDA_CHECK(cudaEventElapsedTime(&event_ms[i], events[2 * i], events[2 * i + 1]));
    for (auto& e : events) cudaEventDestroy(e);
    std::vector<std::uint64_t> host(per_call * calls);
    CUDA_CHECK(cudaMemcpy(host.data(), trace.data(), host.size() * sizeof(std::uint64_t),
                          cudaMemcpyDeviceToHost));
    std::ofstream out(settings_.trace + ".rank" + std::to_string(ctx_.comm.rank) + ".csv",
                      std::ios::app);
    for (int i = 0; i < calls; ++i)
      for (int b = 0; b < grid; ++b) {
        const std::uint64_t* t = host.data() + per_call * i + 4 * b;
        out << name << ',' << c.tokens << ',' << c.n << ',' << c.k << ',' << i << ',' << b << ','
            << t[0] << ',' << t[1] << ',' << t[2] << ',' << t[3] << ','
            << static_cast<std::uint64_t>(event_ms[i] * 1e6) << '\n';
      }
    return Status::success();
  }

  const Settings& settings_;
  RankContext& ctx_;
  std::vector<std::string>* lines_;
  cublasLtHandle_t lt_ = nullptr;
  DeviceBuffer workspace_;
  std::size_t l2_bytes_ = 0;
  bench::DeviceTags tags_;
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
    std::ofstream out(settings.output);
    out << bench::csv_header() << "\n";
    for (const auto& l : lines) out << l << "\n";
  }
  if (!status.ok) {
    std::fprintf(stderr, "%s: %s\n", kProgram.c_str(), status.message.c_str());
    return 1;
  }
  return 0;
}
