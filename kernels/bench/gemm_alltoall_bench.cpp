// gemm-alltoall-bench: the MoE combine (every rank's expert down-projection C = A·Bᵀ,
// m tokens x n hidden x k FFN, then rank d receives rows d·m/W .. of every rank's C) as the
// fused GPU-initiated kernel (kernels/fused/gemm_alltoall.hpp) against the sequential
// designs and the tile-wise copy-engine design (kernels/tilewise/copy_engine_design.hpp),
// every variant in one interleaved loop per shape:
//   gemm+alltoall fused           the own GEMM whose epilogue stores each tile into its
//                                 destination rank over NVLink and counts it there; a
//                                 one-CTA wait kernel behind it (peer pointers)
//   gemm+alltoall sequential      cuBLASLt GEMM, then NCCL's all-to-all (one stream)
//   gemm+alltoall sequential_own  the own GEMM, then NCCL's all-to-all
//   gemm+alltoall tilewise_ce_g<G>  the copy-engine tile-wise design with G groups per part
//                                 (chunks = G), for every G of --groups
//   gemm+alltoall tilewise_ce     the fastest of those (median), i.e. its tuned
//                                 configuration, timed in the same loop
//   gemm own / gemm cublas / alltoall nccl: the parts alone
//   gemm+alltoall fused_b2b, tilewise_ce_b2b, sequential_own_b2b: --b2b-calls calls back
//                                 to back with no alignment, mean per call
// The copy-engine design's result stays in its tile layout (its natural-layout unpermute is
// not timed; the fused and NCCL results are already in the natural layout).
// Before each timed call an untimed 1-element all-reduce lines the ranks up; a time is the
// maximum over ranks of one call (CUDA events), median/min/max over --iterations.
// `wrong` (summed over ranks): elements differing from sequential_own's bits (fused and the
// copy-engine design, unpermuted: the same GEMM arithmetic, the exchange moves bytes); for
// cuBLAS elements beyond bf16 tolerance (rel 2^-6, abs 1e-2) of the own GEMM's, plus
// unwritten elements in sequential_own's row.
// CSV: overlap-bench's columns (bench_row.hpp): bytes = m x n x 2 (what a rank sends,
// itself included), flops = 2mnk. Rank 0 prints; --output also writes the file.
//   gemm-alltoall-bench [--world N] [--shapes MxNxK,...] [--groups 2,4,8,16]
//       [--iterations 20] [--warmup 3] [--b2b-calls 20] [--timeout 60] [--seed S]
//       [--output FILE]
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/bench/bench_row.hpp"
#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/fused/gemm_alltoall.hpp"
#include "kernels/gemm/cublaslt_gemm.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/fill.hpp"
#include "kernels/harness/flag_parse.hpp"
#include "kernels/harness/multi_gpu.hpp"
#include "kernels/harness/random_values.hpp"
#include "kernels/tilewise/copy_engine_design.hpp"

namespace {

using namespace overlapsim::kernels;
using overlapsim::kernels::bench::RowBuilder;
using overlapsim::kernels::fused::GemmAllToAll;
using overlapsim::kernels::fused::GemmAllToAllShape;

const std::string kProgram = "gemm-alltoall-bench";

struct Settings {
  // MoE combine after the expert down-projection (benchmarks/suites/tilewise_ce.yaml):
  // Mixtral-8x7B hidden 4096, FFN 14336; DeepSeek-V3 hidden 7168, expert FFN 2048.
  std::vector<std::array<std::int64_t, 3>> shapes = {
      {8192, 4096, 14336}, {16384, 4096, 14336}, {16384, 7168, 2048}, {32768, 7168, 2048}};
  std::vector<std::int64_t> groups = {2, 4, 8, 16};
  int world = 0;
  int iterations = 20;
  int warmup = 3;
  int b2b_calls = 20;
  double timeout_s = 60;
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
  while (cursor.next(&flag)) {
    if (flag == "--shapes") {
      s.shapes.clear();
      for (const std::string& item : split_list(cursor.value())) {
        const std::vector<std::string> dims = split_list(item, 'x');
        if (dims.size() != 3) bad_flag(kProgram, flag, item, "MxNxK");
        s.shapes.push_back({flag_int(kProgram, flag, dims[0], 128, 1 << 20),
                            flag_int(kProgram, flag, dims[1], 2, 1 << 20),
                            flag_int(kProgram, flag, dims[2], 8, 1 << 20)});
      }
    } else if (flag == "--groups") {
      s.groups.clear();
      for (const std::string& item : split_list(cursor.value()))
        s.groups.push_back(flag_int(kProgram, flag, item, 1, 256));
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
    } else if (flag == "--seed") {
      s.seed = static_cast<std::uint64_t>(flag_int(kProgram, flag, cursor.value(), 0));
    } else if (flag == "--output") {
      s.output = cursor.value();
    } else if (flag == "--help") {
      throw std::invalid_argument(kProgram +
                                  ": [--world N] [--shapes MxNxK,...] [--groups 2,4,8,16] "
                                  "[--iterations 20] [--warmup 3] [--b2b-calls 20] "
                                  "[--timeout 60] [--seed S] [--output FILE]");
    } else {
      bad_flag(kProgram, flag, "", "a known flag (--help lists them)");
    }
  }
  if (s.shapes.empty() || s.groups.empty())
    bad_flag(kProgram, "--shapes/--groups", "", "non-empty lists");
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

class Runner {
 public:
  Runner(const Settings& s, RankContext& ctx, std::vector<std::string>* lines)
      : settings_(s), ctx_(ctx), lines_(lines) {}

  Status run() {
    tags_ = bench::read_device_tags(ctx_.comm.world);
    for (const auto& shape : settings_.shapes) {
      GemmAllToAllShape g{shape[0], shape[1], shape[2], ctx_.comm.world};
      const Status ok = GemmAllToAll::can_implement(g, DType::BF16);
      if (!ok.ok) {
        if (ctx_.comm.rank == 0)
          std::fprintf(stderr, "%s: skipping %ldx%ldx%ld: %s\n", kProgram.c_str(),
                       static_cast<long>(g.m), static_cast<long>(g.n), static_cast<long>(g.k),
                       ok.message.c_str());
        continue;
      }
      OVERLAPSIM_TRY(run_case(g));
    }
    return Status::success();
  }

 private:
  Status run_case(const GemmAllToAllShape& shape) {
    const int rank = ctx_.comm.rank, world = ctx_.comm.world;
    cudaStream_t s = ctx_.compute_stream;
    const std::size_t a_count = static_cast<std::size_t>(shape.m * shape.k);
    const std::size_t b_count = static_cast<std::size_t>(shape.n * shape.k);
    const std::size_t c_count = static_cast<std::size_t>(shape.m * shape.n);
    OVERLAPSIM_TRY(quiesce(ctx_, "gemm-a2a alloc"));
    DeviceBuffer a, b, c_own, c_cublas, out_own, out_cublas, out_nccl, p_ce, natural_ce, align;
    OVERLAPSIM_TRY(a.allocate(a_count * 2));
    OVERLAPSIM_TRY(b.allocate(b_count * 2));
    for (DeviceBuffer* x :
         {&c_own, &c_cublas, &out_own, &out_cublas, &out_nccl, &p_ce, &natural_ce})
      OVERLAPSIM_TRY(x->allocate(c_count * 2));
    OVERLAPSIM_TRY(align.allocate(256));
    OVERLAPSIM_TRY(
        fill_random(a.data(), a_count, DType::BF16, buffer_seed(settings_.seed, rank, 0), s));
    OVERLAPSIM_TRY(
        fill_random(b.data(), b_count, DType::BF16, buffer_seed(settings_.seed, rank, 1), s));
    OVERLAPSIM_TRY(fill_random(align.data(), 1, DType::BF16, 1, s));

    fused::GemmAllToAllOptions options;
    options.timeout_s = settings_.timeout_s;
    GemmAllToAll fused;
    OVERLAPSIM_TRY(fused.initialize(&ctx_.comm, shape, DType::BF16, options));
    gemm::CublasLtGemm cublas;
    gemm::GemmArgs args;
    args.m = shape.m;
    args.n = shape.n;
    args.k = shape.k;
    args.a = a.data();
    args.b = b.data();
    args.c = c_cublas.data();
    OVERLAPSIM_TRY(cublas.initialize(args));
    // The copy-engine tile-wise design, one per groups-per-part candidate the shape allows.
    std::vector<std::unique_ptr<tilewise::CopyEngineDesign>> ce;
    std::vector<int> ce_groups;
    for (std::int64_t g : settings_.groups) {
      tilewise::CopyEngineOptions o;
      o.groups_per_part = static_cast<int>(g);
      o.wait_timeout_s = settings_.timeout_s;
      if (!tilewise::CopyEngineDesign::can_implement(CollectiveOp::AllToAll, shape.m, shape.n,
                                                     shape.k, world, o)
               .ok)
        continue;
      auto d = std::make_unique<tilewise::CopyEngineDesign>();
      OVERLAPSIM_TRY(d->initialize(&ctx_.comm, CollectiveOp::AllToAll, shape.m, shape.n, shape.k,
                                   DType::BF16, o));
      OVERLAPSIM_TRY(d->prepare(a.data(), b.data(), p_ce.data()));
      ce.push_back(std::move(d));
      ce_groups.push_back(static_cast<int>(g));
    }
    OVERLAPSIM_TRY(quiesce(ctx_, "gemm-a2a ready"));

    using Call = std::function<Status()>;
    const Call fused_call = [&] { return fused.run(a.data(), b.data(), s); };
    const Call seq_call = [&] {
      OVERLAPSIM_TRY(cublas.run(s));
      return fused.exchange(c_cublas.data(), out_cublas.data(), s);
    };
    const Call own_call = [&] {
      OVERLAPSIM_TRY(fused.run_gemm(a.data(), b.data(), c_own.data(), s));
      return fused.exchange(c_own.data(), out_own.data(), s);
    };
    const Call gemm_own_call = [&] { return fused.run_gemm(a.data(), b.data(), c_own.data(), s); };
    const Call gemm_cublas_call = [&] { return cublas.run(s); };
    const Call nccl_call = [&] { return fused.exchange(c_own.data(), out_nccl.data(), s); };
    std::vector<Call> ce_calls;
    for (auto& d : ce) {
      tilewise::CopyEngineDesign* dp = d.get();
      ce_calls.push_back(
          [&, dp] { return dp->run(a.data(), b.data(), p_ce.data(), s, ctx_.comm_stream); });
    }

    // Correctness: every design once, results against sequential_own's bits.
    OVERLAPSIM_TRY(poison(out_own.data(), c_count, s));
    OVERLAPSIM_TRY(poison(out_cublas.data(), c_count, s));
    OVERLAPSIM_TRY(own_call());
    OVERLAPSIM_TRY(seq_call());
    OVERLAPSIM_TRY(fused_call());
    OVERLAPSIM_TRY(wait_stream(ctx_.comm, s, "gemm-a2a check"));
    OVERLAPSIM_TRY(fused.check_timeout(s));
    std::uint64_t unwritten = 0, fused_off = 0, cublas_off = 0;
    OVERLAPSIM_TRY(count_nonfinite(out_own.data(), c_count, DType::BF16, s, &unwritten));
    OVERLAPSIM_TRY(count_mismatches(fused.received(), out_own.data(), c_count, DType::BF16, 0.0,
                                    0.0, s, &fused_off));
    OVERLAPSIM_TRY(count_mismatches(out_cublas.data(), out_own.data(), c_count, DType::BF16,
                                    1.0 / 64, 1e-2, s, &cublas_off));
    std::vector<double> wrong = {double(fused_off), double(cublas_off), double(unwritten)};
    for (std::size_t i = 0; i < ce.size(); ++i) {
      OVERLAPSIM_TRY(poison(natural_ce.data(), c_count, s));
      OVERLAPSIM_TRY(ce_calls[i]());
      OVERLAPSIM_TRY(ce[i]->unpermute(p_ce.data(), natural_ce.data(), s));
      OVERLAPSIM_TRY(wait_stream(ctx_.comm, s, "gemm-a2a ce check"));
      OVERLAPSIM_TRY(ce[i]->check_waits());
      std::uint64_t off = 0;
      OVERLAPSIM_TRY(count_mismatches(natural_ce.data(), out_own.data(), c_count, DType::BF16, 0.0,
                                      0.0, s, &off));
      wrong.push_back(double(off));
    }
    OVERLAPSIM_TRY(allreduce_host(ctx_.comm, s, wrong, ncclSum));

    struct Variant {
      std::string op, design;
      const Call* call;
      double wrong;
      int chunks;
    };
    std::vector<Variant> variants = {
        {"gemm+alltoall", "fused", &fused_call, wrong[0], fused.num_ctas()},
        {"gemm+alltoall", "sequential", &seq_call, wrong[1], 0},
        {"gemm+alltoall", "sequential_own", &own_call, wrong[2], 0},
        {"gemm", "own", &gemm_own_call, 0, 0},
        {"gemm", "cublas", &gemm_cublas_call, 0, 0},
        {"alltoall", "nccl", &nccl_call, 0, 0}};
    const int first_ce = static_cast<int>(variants.size());
    for (std::size_t i = 0; i < ce.size(); ++i)
      variants.push_back({"gemm+alltoall", "tilewise_ce_g" + std::to_string(ce_groups[i]),
                          &ce_calls[i], wrong[3 + i], ce_groups[i]});
    const int nv = static_cast<int>(variants.size());
    for (int i = 0; i < settings_.warmup; ++i)
      for (const Variant& v : variants) OVERLAPSIM_TRY((*v.call)());
    const int iters = settings_.iterations;
    std::vector<cudaEvent_t> events(static_cast<std::size_t>(2 * nv * iters));
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
    OVERLAPSIM_TRY(wait_stream(ctx_.comm, s, "gemm-a2a timing"));
    OVERLAPSIM_TRY(fused.check_timeout(s));
    std::vector<double> times(static_cast<std::size_t>(nv * iters), 0.0);
    for (int v = 0; v < nv; ++v)
      for (int i = 0; i < iters; ++i) {
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, ev(v, i, 0), ev(v, i, 1)));
        times[static_cast<std::size_t>(v * iters + i)] = 1e-3 * ms;
      }
    for (auto& e : events) cudaEventDestroy(e);
    OVERLAPSIM_TRY(allreduce_host(ctx_.comm, s, times, ncclMax));
    // Every rank computes the same medians from the same (reduced) times: one choice.
    std::vector<double> medians(static_cast<std::size_t>(nv));
    for (int v = 0; v < nv; ++v)
      medians[static_cast<std::size_t>(v)] =
          median(std::vector<double>(times.begin() + v * iters, times.begin() + (v + 1) * iters));
    int best_ce = -1;
    for (int v = first_ce; v < nv; ++v)
      if (best_ce < 0 ||
          medians[static_cast<std::size_t>(v)] < medians[static_cast<std::size_t>(best_ce)])
        best_ce = v;

    // Back to back, no alignment between calls.
    std::vector<std::pair<std::string, const Variant*>> b2b = {
        {"fused_b2b", &variants[0]}, {"sequential_own_b2b", &variants[2]}};
    if (best_ce >= 0)
      b2b.push_back({"tilewise_ce_b2b", &variants[static_cast<std::size_t>(best_ce)]});
    std::vector<double> b2b_times(b2b.size(), 0.0);
    if (settings_.b2b_calls > 0) {
      std::vector<cudaEvent_t> be(2 * b2b.size());
      for (auto& e : be) CUDA_CHECK(cudaEventCreate(&e));
      for (std::size_t j = 0; j < b2b.size(); ++j) {
        OVERLAPSIM_TRY(all_reduce(ctx_.comm, align.data(), align.data(), 1, DType::BF16, s));
        CUDA_CHECK(cudaEventRecord(be[2 * j], s));
        for (int i = 0; i < settings_.b2b_calls; ++i) OVERLAPSIM_TRY((*b2b[j].second->call)());
        CUDA_CHECK(cudaEventRecord(be[2 * j + 1], s));
      }
      OVERLAPSIM_TRY(wait_stream(ctx_.comm, s, "gemm-a2a b2b"));
      OVERLAPSIM_TRY(fused.check_timeout(s));
      for (std::size_t j = 0; j < b2b.size(); ++j) {
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, be[2 * j], be[2 * j + 1]));
        b2b_times[j] = 1e-3 * ms / settings_.b2b_calls;
      }
      for (auto& e : be) cudaEventDestroy(e);
      OVERLAPSIM_TRY(allreduce_host(ctx_.comm, s, b2b_times, ncclMax));
    }

    const std::uint64_t bytes = c_count * 2;
    const double flops = 2.0 * static_cast<double>(shape.m) * static_cast<double>(shape.n) *
                         static_cast<double>(shape.k);
    const double factor = busbw_factor(CollectiveOp::AllToAll, world);
    auto emit = [&](const std::string& op, const std::string& design, double med, double mn,
                    double mx, double w, int chunks) {
      RowBuilder r(op, design, "bf16");
      r.shape(shape.m, shape.n, shape.k)
          .bytes(op == "gemm" ? 0 : bytes)
          .chunks(chunks)
          .times(med, mn, mx)
          .wrong(static_cast<std::uint64_t>(w));
      if (op != "alltoall") r.flops(flops);
      if (op != "gemm") r.busbw_factor(factor);
      if (rank == 0) {
        lines_->push_back(bench::csv_line(tags_, r.row()));
        std::printf("%s\n", lines_->back().c_str());
        std::fflush(stdout);
      }
    };
    auto emit_variant = [&](int v, const std::string& design) {
      std::vector<double> t(times.begin() + v * iters, times.begin() + (v + 1) * iters);
      const auto [mn, mx] = std::minmax_element(t.begin(), t.end());
      const Variant& var = variants[static_cast<std::size_t>(v)];
      emit(var.op, design, medians[static_cast<std::size_t>(v)], *mn, *mx, var.wrong, var.chunks);
    };
    for (int v = 0; v < nv; ++v) emit_variant(v, variants[static_cast<std::size_t>(v)].design);
    if (best_ce >= 0) emit_variant(best_ce, "tilewise_ce");
    for (std::size_t j = 0; j < b2b.size() && settings_.b2b_calls > 0; ++j)
      emit("gemm+alltoall", b2b[j].first, b2b_times[j], b2b_times[j], b2b_times[j],
           b2b[j].second->wrong, b2b[j].second->chunks);
    ce.clear();
    return quiesce(ctx_, "gemm-a2a case done");
  }

  const Settings& settings_;
  RankContext& ctx_;
  std::vector<std::string>* lines_;
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
