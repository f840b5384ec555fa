#include "kernels/bench/shaped_runner.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/bench/timing.hpp"
#include "kernels/bench/verify.hpp"
#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/designs/decomposed.hpp"
#include "kernels/designs/shaped.hpp"
#include "kernels/harness/fill.hpp"

namespace overlapsim::kernels::bench {
namespace {

// SMs the GEMM leaves free. 32 of 132 is a quarter of an H100: beyond it the GEMM's loss
// outgrows anything NCCL (at most 32 CTAs here) could win back.
constexpr int kFreeSms[] = {0, 8, 16, 24, 32};
// A grid point must beat the simpler points by more than this to be chosen.
constexpr double kSimplerWithin = 0.01;
// Grid points the search hands to the confirming loop.
constexpr int kFinalists = 3;

class ShapedRunner {
 public:
  ShapedRunner(BenchEnv& env, const BenchCase& c, PairOp op, const PairShape& shape,
               const TilewiseCaseIo& io)
      : env_(env), case_(c), op_(op), shape_(shape), io_(io) {}

  Status run() {
    if (!env_.shaped_state) env_.shaped_state = std::make_shared<ShapedRankState>();
    ShapedRankState& state = *env_.shaped_state;
    if (state.device_sms == 0)
      CUDA_CHECK(cudaDeviceGetAttribute(&state.device_sms, cudaDevAttrMultiProcessorCount,
                                        env_.ctx->device));
    OVERLAPSIM_TRY(make_grid(state.device_sms));
    OVERLAPSIM_TRY(make_comms(state));
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "shaped: before allocating"));
    const PairSizes sizes = pair_sizes(op_, shape_, env_.world());
    result_count_ = sizes.out ? sizes.out : sizes.c;
    OVERLAPSIM_TRY(sequential_bits_.allocate(result_count_ * dtype_bytes(case_.dtype)));
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "shaped: after allocating"));
    OVERLAPSIM_TRY(build_designs(state));
    if (env_.rank() == 0 && !env_.shaped_algos_path.empty())
      OVERLAPSIM_TRY(write_algos(state.device_sms));
    OVERLAPSIM_TRY(search());
    OVERLAPSIM_TRY(confirm());
    OVERLAPSIM_TRY(final_loop());
    return quiesce(*env_.ctx, "shaped: done");
  }

 private:
  cudaStream_t compute() const { return env_.ctx->compute_stream; }
  cudaStream_t comm_stream() const { return env_.ctx->comm_stream; }
  CollectiveOp coll() const { return pair_collective(op_); }

  RowBuilder row(const std::string& op, const std::string& design, int chunks,
                 const Timing& t) const {
    return RowBuilder(op, design, to_string(case_.dtype)).shape(shape_).chunks(chunks).time(t);
  }
  RowBuilder pair_row(const std::string& design, int chunks, const Timing& t) const {
    return row(to_string(op_), design, chunks, t)
        .bytes(collective_bytes(op_, shape_, env_.world(), case_.dtype))
        .flops(compute_flops(op_, shape_))
        .busbw_factor(busbw_factor(coll(), env_.world()));
  }

  Status make_grid(int sms) {
    ctas_ = {0};
    for (int c : case_.ctas)
      if (c > 0 && std::find(ctas_.begin(), ctas_.end(), c) == ctas_.end()) ctas_.push_back(c);
    for (int k : case_.chunks)
      if (k >= 2 && !chunk_error(op_, shape_, env_.world(), k) &&
          std::find(chunks_.begin(), chunks_.end(), k) == chunks_.end())
        chunks_.push_back(k);
    for (int s : kFreeSms)
      if (s < sms / 2) free_sms_.push_back(s);
    grid_.push_back({0, 0, 1});
    for (int k : chunks_)
      for (int s : free_sms_)
        for (int c : ctas_) grid_.push_back({s, c, k});
    return Status::success();
  }

  // Every rank creates the same communicators in the same order, streams drained.
  Status make_comms(ShapedRankState& state) {
    for (int c : ctas_) {
      if (c == 0 || state.comms.count(c)) continue;
      OVERLAPSIM_TRY(quiesce(*env_.ctx, "shaped: before splitting"));
      CommHandle handle;
      OVERLAPSIM_TRY(make_shaped_comm(env_.ctx->comm, c, &handle));
      state.comms.emplace(c, handle);
      OVERLAPSIM_TRY(quiesce(*env_.ctx, "shaped: after splitting"));
    }
    return Status::success();
  }

  CommHandle* comm_for(ShapedRankState& state, int ctas) {
    return ctas == 0 ? &env_.ctx->comm : &state.comms.at(ctas);
  }

  Status build_designs(ShapedRankState& state) {
    void* ws = env_.workspace.data();
    const std::size_t ws_bytes = env_.workspace.bytes();
    const int sms = state.device_sms;
    OVERLAPSIM_TRY(
        base_.initialize(&env_.ctx->comm, env_.lt, op_, shape_, case_.dtype, ws, ws_bytes));
    int max_chunks = 1;
    for (int k : chunks_) {
      OVERLAPSIM_TRY(base_.prepare(k));
      max_chunks = std::max(max_chunks, k);
    }
    OVERLAPSIM_TRY(decomposed_.initialize(max_chunks));
    for (const ShapedConfig& g : grid_) {
      auto d = std::make_unique<ShapedDesign>();
      OVERLAPSIM_TRY(d->initialize(comm_for(state, g.comm_ctas), env_.lt, op_, shape_, case_.dtype,
                                   ws, ws_bytes, sms, g));
      designs_.push_back(std::move(d));
    }
    for (int s : free_sms_) {
      if (s == 0) continue;
      auto d = std::make_unique<ShapedDesign>();
      OVERLAPSIM_TRY(d->initialize(&env_.ctx->comm, env_.lt, op_, shape_, case_.dtype, ws, ws_bytes,
                                   sms, {s, 0, 1}));
      gemm_alone_.push_back(std::move(d));
    }
    for (int c : ctas_) {
      if (c == 0) continue;
      auto p = std::make_unique<PairKernels>();
      OVERLAPSIM_TRY(
          p->initialize(comm_for(state, c), env_.lt, op_, shape_, case_.dtype, ws, ws_bytes));
      coll_alone_.push_back(std::move(p));
    }
    // Every kernel once, alone, before anything overlaps (CUDA_MODULE_LOADING=LAZY): the
    // GEMMs per design with a rendezvous after each, then every communicator's collective
    // one after the other on the compute stream.
    const PairBuffers b = io_.set(0);
    for (auto& d : designs_) OVERLAPSIM_TRY(d->prepare(b, compute(), env_.ctx->comm));
    for (auto& d : gemm_alone_) OVERLAPSIM_TRY(d->prepare(b, compute(), env_.ctx->comm));
    for (int k : chunks_)
      for (int chunk = 0; chunk < k; ++chunk)
        OVERLAPSIM_TRY(base_.enqueue_op(b, k, chunk, compute()));
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "shaped: decomposed GEMMs loaded"));
    for (auto& p : coll_alone_) OVERLAPSIM_TRY(p->enqueue_collective(b, 1, 0, compute()));
    OVERLAPSIM_TRY(io_.sequential(0));
    return wait_stream(env_.ctx->comm, compute(), "shaped: warm-up");
  }

  // --shaped-algos: one CSV line per chunk GEMM plan (every grid point, and the unchunked
  // GEMM alone per S > 0) with the algorithm cuBLASLt chose for it; the header only when
  // the file is new or empty, so every shape of a run appends to one file.
  Status write_algos(int sms) const {
    std::ifstream probe(env_.shaped_algos_path, std::ios::binary | std::ios::ate);
    const bool fresh = !probe || probe.tellg() <= 0;
    probe.close();
    std::ofstream out(env_.shaped_algos_path, std::ios::app);
    if (!out) return Status::failure("shaped: cannot open " + env_.shaped_algos_path);
    if (fresh)
      out << "gpu,world,op,dtype,m,n,k,role,free_sms,sm_count_target,comm_ctas,chunks,gemm_m,"
             "gemm_n,gemm_k,gemm_batches,algo_id,tile_id,tile_m,tile_n,cluster_m,cluster_n,"
             "splitk_num,reduction_scheme,stages_id,swizzle,waves\n";
    const std::string gpu = read_device_tags(env_.world()).gpu;
    const auto line = [&](const char* role, const ShapedDesign& d) -> Status {
      CublasLtAlgoInfo a;
      OVERLAPSIM_TRY(d.gemm().algo_info(&a));
      const ShapedConfig& g = d.config();
      const GemmShape& gs = d.gemm().shape();
      out << gpu << ',' << env_.world() << ',' << to_string(op_) << ','
          << to_string(case_.dtype) << ',' << shape_.m << ',' << shape_.n << ',' << shape_.k
          << ',' << role << ',' << g.free_sms << ',' << (g.free_sms > 0 ? sms - g.free_sms : 0)
          << ',' << g.comm_ctas << ',' << g.chunks << ',' << gs.m << ',' << gs.n << ',' << gs.k
          << ',' << d.gemm_batches() << ',' << a.algo_id << ',' << a.tile_id << ','
          << a.tile_m() << ',' << a.tile_n() << ',' << a.cluster_m() << ',' << a.cluster_n()
          << ',' << a.splitk_num << ',' << a.reduction_scheme << ',' << a.stages_id << ','
          << a.swizzle << ',' << a.waves << '\n';
      return Status::success();
    };
    // c only changes the communicator, not the GEMM plan: one line per (S, k).
    std::vector<std::pair<int, int>> seen;
    for (const auto& d : designs_) {
      const std::pair<int, int> key{d->config().free_sms, d->config().chunks};
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
      seen.push_back(key);
      OVERLAPSIM_TRY(line("grid", *d));
    }
    for (const auto& d : gemm_alone_) OVERLAPSIM_TRY(line("gemm_alone", *d));
    out.flush();
    if (!out) return Status::failure("shaped: writing " + env_.shaped_algos_path + " failed");
    return Status::success();
  }

  // Elements of set 0's result whose value differs from the sequential result at all
  // (unwritten ones included), after `once`; summed over ranks.
  Status exact_mismatches(const std::function<Status()>& once, std::uint64_t* count) {
    const void* result = io_.set(0).result(op_);
    OVERLAPSIM_TRY(poison(const_cast<void*>(result), result_count_, compute()));
    OVERLAPSIM_TRY(once());
    OVERLAPSIM_TRY(wait_stream(env_.ctx->comm, compute(), "shaped: exact check"));
    *count = 0;
    OVERLAPSIM_TRY(count_mismatches(result, sequential_bits_.data(), result_count_, case_.dtype,
                                    0.0, 0.0, compute(), count));
    return sum_over_ranks(env_, count);
  }

  Status search() {
    // The sequential result every grid point must reproduce.
    OVERLAPSIM_TRY(io_.sequential(0));
    OVERLAPSIM_TRY(wait_stream(env_.ctx->comm, compute(), "shaped: sequential result"));
    CUDA_CHECK(cudaMemcpyAsync(sequential_bits_.data(), io_.set(0).result(op_),
                               result_count_ * dtype_bytes(case_.dtype), cudaMemcpyDeviceToDevice,
                               compute()));
    OVERLAPSIM_TRY(wait_stream(env_.ctx->comm, compute(), "shaped: keep sequential"));

    std::vector<EnqueueIteration> variants{io_.op_alone, io_.collective_alone, io_.sequential};
    for (int k : chunks_)
      variants.push_back([this, k](int i) {
        return decomposed_.run(base_, io_.set(i), k, compute(), comm_stream());
      });
    for (auto& d : gemm_alone_)
      variants.push_back(
          [this, p = d.get()](int i) { return p->run_gemms(io_.set(i), compute()); });
    for (auto& p : coll_alone_)
      variants.push_back([this, q = p.get()](int i) {
        return q->enqueue_collective(io_.set(i), 1, 0, compute());
      });
    // Every chunked plan's GEMMs alone, one (S, k) each (c does not change the GEMMs): what
    // the simulator's shaped model prices, a chunk on SMs - S against one on all SMs.
    std::vector<const ShapedDesign*> chunk_gemms;
    for (const auto& d : designs_) {
      const ShapedConfig& g = d->config();
      if (g.chunks < 2) continue;
      const bool seen = std::any_of(chunk_gemms.begin(), chunk_gemms.end(), [&](const auto* x) {
        return x->config().free_sms == g.free_sms && x->config().chunks == g.chunks;
      });
      if (!seen) chunk_gemms.push_back(d.get());
    }
    for (const ShapedDesign* d : chunk_gemms)
      variants.push_back([this, d](int i) { return d->run_gemms(io_.set(i), compute()); });
    const std::size_t first_design = variants.size();
    for (auto& d : designs_)
      variants.push_back(
          [this, p = d.get()](int i) { return p->run(io_.set(i), compute(), comm_stream()); });
    std::vector<Timing> t;
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "shaped: search ready"));
    OVERLAPSIM_TRY(
        time_interleaved(*env_.ctx, 1, std::max(5, case_.iterations / 3), variants, io_.align, &t));
    std::size_t v = 0;
    env_.emit(row(to_string(op_), "op_alone_sh_search", 1, t[v++])
                  .flops(compute_flops(op_, shape_))
                  .row());
    env_.emit(pair_row("collective_alone_sh_search", 1, t[v++]).flops(0).row());
    env_.emit(pair_row("sequential_sh_search", 1, t[v++]).row());
    double best_decomposed_s = 0;
    for (int k : chunks_) {
      env_.emit(pair_row("decomposed_sh_search", k, t[v]).row());
      if (best_k_ == 0 || t[v].median_s < best_decomposed_s) {
        best_k_ = k;
        best_decomposed_s = t[v].median_s;
      }
      ++v;
    }
    for (auto& d : gemm_alone_)
      env_.emit(row("gemm", "cublas_shaped:s" + std::to_string(d->config().free_sms), 1, t[v++])
                    .flops(compute_flops(op_, shape_))
                    .row());
    for (int c : ctas_) {
      if (c == 0) continue;
      env_.emit(row(to_string(coll()), "nccl_shaped:c" + std::to_string(c), 1, t[v++])
                    .bytes(collective_bytes(op_, shape_, env_.world(), case_.dtype))
                    .busbw_factor(busbw_factor(coll(), env_.world()))
                    .row());
    }
    for (const ShapedDesign* d : chunk_gemms)
      env_.emit(row("gemm", "cublas_shaped_chunks:s" + std::to_string(d->config().free_sms),
                    d->config().chunks, t[v++])
                    .flops(compute_flops(op_, shape_))
                    .row());
    for (std::size_t d = 0; d < designs_.size(); ++d) {
      const Timing& td = t[first_design + d];
      const ShapedConfig& g = designs_[d]->config();
      std::uint64_t differ = 0;
      OVERLAPSIM_TRY(exact_mismatches(
          [&] { return designs_[d]->run(io_.set(0), compute(), comm_stream()); }, &differ));
      env_.emit(pair_row("shaped_search:s" + std::to_string(g.free_sms) + ":c" +
                             std::to_string(g.comm_ctas),
                         g.chunks, td)
                    .wrong(differ)
                    .row());
    }
    std::vector<int> all(designs_.size());
    for (std::size_t d = 0; d < designs_.size(); ++d) all[d] = static_cast<int>(d);
    const auto search_s = [&](int d) {
      return t[first_design + static_cast<std::size_t>(d)].median_s;
    };
    // Finalists: the search's choice, decomposed's point, then the fastest others.
    finalists_ = {choose(all, search_s)};
    const auto add = [&](int d) {
      if (d >= 0 && static_cast<int>(finalists_.size()) < kFinalists &&
          std::find(finalists_.begin(), finalists_.end(), d) == finalists_.end())
        finalists_.push_back(d);
    };
    add(plain_point(all, search_s));
    std::vector<int> by_time = all;
    std::stable_sort(by_time.begin(), by_time.end(),
                     [&](int x, int y) { return search_s(x) < search_s(y); });
    for (int d : by_time) add(d);
    return Status::success();
  }

  // Decomposed's fastest point (S 0, c 0, k > 1) among `candidates`, or -1.
  int plain_point(const std::vector<int>& candidates,
                  const std::function<double(int)>& time_of) const {
    int plain = -1;
    for (int d : candidates) {
      const ShapedConfig& g = designs_[static_cast<std::size_t>(d)]->config();
      if (g.free_sms == 0 && g.comm_ctas == 0 && g.chunks > 1 &&
          (plain < 0 || time_of(d) < time_of(plain)))
        plain = d;
    }
    return plain;
  }

  // The fastest of `candidates`, unless a simpler one is within kSimplerWithin of it: the
  // sequential point (grid index 0) first, then decomposed's. A point that wins by less
  // than that is as likely noise as shaping, and the simpler one cannot lose to its
  // baseline but by noise. Every rank reads the same max-over-rank times, so every rank
  // picks the same point.
  int choose(const std::vector<int>& candidates, const std::function<double(int)>& time_of) const {
    int best = candidates.front();
    for (int d : candidates)
      if (time_of(d) < time_of(best)) best = d;
    const double bar_s = (1.0 + kSimplerWithin) * time_of(best);
    if (std::find(candidates.begin(), candidates.end(), 0) != candidates.end() &&
        time_of(0) <= bar_s)
      return 0;
    const int plain = plain_point(candidates, time_of);
    if (plain >= 0 && time_of(plain) <= bar_s) return plain;
    return best;
  }

  // The finalists re-timed in one loop with sequential and decomposed (the final loop's
  // mix, so its clock state): the search loop's 50-odd variants run cooler, and its
  // ranking of close points did not always hold in the final loop (run 1).
  Status confirm() {
    std::vector<EnqueueIteration> variants{io_.sequential};
    if (best_k_ > 0)
      variants.push_back([this](int i) {
        return decomposed_.run(base_, io_.set(i), best_k_, compute(), comm_stream());
      });
    const std::size_t first = variants.size();
    for (int d : finalists_)
      variants.push_back([this, p = designs_[static_cast<std::size_t>(d)].get()](int i) {
        return p->run(io_.set(i), compute(), comm_stream());
      });
    std::vector<Timing> t;
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "shaped: confirm ready"));
    OVERLAPSIM_TRY(
        time_interleaved(*env_.ctx, 1, std::max(5, case_.iterations / 2), variants, io_.align, &t));
    env_.emit(pair_row("sequential_sh_confirm", 1, t[0]).row());
    if (best_k_ > 0) env_.emit(pair_row("decomposed_sh_confirm", best_k_, t[1]).row());
    std::vector<double> by_design(designs_.size(), 0.0);
    for (std::size_t f = 0; f < finalists_.size(); ++f) {
      const int d = finalists_[f];
      by_design[static_cast<std::size_t>(d)] = t[first + f].median_s;
      const ShapedConfig& g = designs_[static_cast<std::size_t>(d)]->config();
      env_.emit(pair_row("shaped_confirm:s" + std::to_string(g.free_sms) + ":c" +
                             std::to_string(g.comm_ctas),
                         g.chunks, t[first + f])
                    .row());
    }
    chosen_ = choose(finalists_, [&](int d) { return by_design[static_cast<std::size_t>(d)]; });
    return Status::success();
  }

  Status final_loop() {
    const ShapedDesign& chosen = *designs_[static_cast<std::size_t>(chosen_)];
    std::vector<EnqueueIteration> variants{io_.op_alone, io_.collective_alone, io_.sequential};
    if (best_k_ > 0)
      variants.push_back([this](int i) {
        return decomposed_.run(base_, io_.set(i), best_k_, compute(), comm_stream());
      });
    variants.push_back(
        [this, &chosen](int i) { return chosen.run(io_.set(i), compute(), comm_stream()); });
    std::vector<Timing> t;
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "shaped: final ready"));
    OVERLAPSIM_TRY(
        time_interleaved(*env_.ctx, case_.warmup, case_.iterations, variants, io_.align, &t));
    std::size_t v = 0;
    env_.emit(
        row(to_string(op_), "op_alone_sh_loop", 1, t[v++]).flops(compute_flops(op_, shape_)).row());
    env_.emit(pair_row("collective_alone_sh_loop", 1, t[v++]).flops(0).row());
    env_.emit(pair_row("sequential_sh_loop", 1, t[v++]).row());
    if (best_k_ > 0) {
      std::uint64_t wrong = 0;
      OVERLAPSIM_TRY(io_.run_and_check(
          [&] { return decomposed_.run(base_, io_.set(0), best_k_, compute(), comm_stream()); },
          &wrong));
      env_.emit(pair_row("decomposed_sh_loop", best_k_, t[v++]).wrong(wrong).row());
    }
    std::uint64_t wrong = 0;
    OVERLAPSIM_TRY(io_.run_and_check(
        [&] { return chosen.run(io_.set(0), compute(), comm_stream()); }, &wrong));
    const ShapedConfig& g = chosen.config();
    env_.emit(pair_row("shaped:s" + std::to_string(g.free_sms) + ":c" + std::to_string(g.comm_ctas),
                       g.chunks, t[v++])
                  .wrong(wrong)
                  .row());
    if (env_.rank() == 0)
      std::fprintf(stderr, "overlap-bench: shaped %s %lldx%lldx%lld world %d: chose %s\n",
                   to_string(op_), static_cast<long long>(shape_.m),
                   static_cast<long long>(shape_.n), static_cast<long long>(shape_.k), env_.world(),
                   g.name().c_str());
    return Status::success();
  }

  BenchEnv& env_;
  const BenchCase& case_;
  PairOp op_;
  PairShape shape_;
  const TilewiseCaseIo& io_;
  std::vector<int> ctas_, chunks_, free_sms_;
  std::vector<ShapedConfig> grid_;
  PairKernels base_;  // the decomposed design's GEMM plans, on the run's communicator
  DecomposedDesign decomposed_;
  std::vector<std::unique_ptr<ShapedDesign>> designs_;     // one per grid point
  std::vector<std::unique_ptr<ShapedDesign>> gemm_alone_;  // unchunked, per S > 0
  std::vector<std::unique_ptr<PairKernels>> coll_alone_;   // unchunked collective, per c > 0
  DeviceBuffer sequential_bits_;
  std::size_t result_count_ = 0;
  int best_k_ = 0;
  std::vector<int> finalists_;  // grid indices, the search's choice first
  int chosen_ = -1;
};

}  // namespace

Status run_shaped_rows(BenchEnv& env, const BenchCase& c, PairOp op, const PairShape& shape,
                       const TilewiseCaseIo& io) {
  if (!ShapedDesign::supports(op)) {
    if (env.rank() == 0)
      std::fprintf(stderr, "overlap-bench: design shaped does not run %s; skipped\n",
                   to_string(op));
    return Status::success();
  }
  ShapedRunner runner(env, c, op, shape, io);
  return runner.run();
}

}  // namespace overlapsim::kernels::bench
