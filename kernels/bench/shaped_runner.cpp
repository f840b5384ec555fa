#include "kernels/bench/shaped_runner.hpp"

#include <algorithm>
#include <cmath>
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
// A grid point must beat the simpler candidates by more than this to be chosen.
constexpr double kSimplerWithin = 0.01;
// Grid points the search hands to the confirming loop (beside sequential and decomposed).
constexpr int kGridFinalists = 2;
// Paired-loop rounds enqueued between two reads of their events.
constexpr int kRoundsPerBatch = 25;

// Start and stop events of one timed variant run.
class EventPairs {
 public:
  EventPairs() = default;
  EventPairs(const EventPairs&) = delete;
  EventPairs& operator=(const EventPairs&) = delete;
  ~EventPairs() {
    for (cudaEvent_t e : events_)
      if (e) cudaEventDestroy(e);
  }
  Status create(int pairs) {
    events_.assign(static_cast<std::size_t>(2 * pairs), nullptr);
    for (cudaEvent_t& e : events_) CUDA_CHECK(cudaEventCreate(&e));
    return Status::success();
  }
  cudaEvent_t start(int i) const { return events_[static_cast<std::size_t>(2 * i)]; }
  cudaEvent_t stop(int i) const { return events_[static_cast<std::size_t>(2 * i + 1)]; }

 private:
  std::vector<cudaEvent_t> events_;
};

// Every variant once per round, round r in the order r, r + 1, ... (mod the variant count),
// `align` (untimed) before each; after `warmup` untimed rounds and the policy's untimed
// warm-up time. (*seconds)[r][v]: variant v's time in timed round r, the max over ranks;
// (*first)[r]: the variant that ran first in it.
Status time_rounds(RankContext& ctx, int warmup, int rounds,
                   const std::vector<EnqueueIteration>& variants, const EnqueueIteration& align,
                   std::vector<std::vector<double>>* seconds, std::vector<int>* first) {
  const int count = static_cast<int>(variants.size());
  const auto run_round = [&](int r, const EventPairs* events, int slot) -> Status {
    for (int step = 0; step < count; ++step) {
      const int v = (r + step) % count;
      if (align) OVERLAPSIM_TRY(align(r));
      if (events) CUDA_CHECK(cudaEventRecord(events->start(slot * count + v), ctx.compute_stream));
      OVERLAPSIM_TRY(variants[static_cast<std::size_t>(v)](r * count + v));
      if (events) CUDA_CHECK(cudaEventRecord(events->stop(slot * count + v), ctx.compute_stream));
    }
    return Status::success();
  };
  int index = 0;
  for (; index < warmup; ++index) OVERLAPSIM_TRY(run_round(index, nullptr, -1));
  OVERLAPSIM_TRY(wait_stream(ctx.comm, ctx.compute_stream, "shaped: paired warm-up"));
  OVERLAPSIM_TRY(run_for(
      ctx, ctx.compute_stream, timing_policy().warmup_s, index,
      [&](int r) { return run_round(r, nullptr, -1); }, &index));
  seconds->clear();
  first->clear();
  for (int done = 0; done < rounds;) {
    const int batch = std::min(kRoundsPerBatch, rounds - done);
    EventPairs events;
    OVERLAPSIM_TRY(events.create(batch * count));
    for (int i = 0; i < batch; ++i) OVERLAPSIM_TRY(run_round(index + done + i, &events, i));
    OVERLAPSIM_TRY(wait_stream(ctx.comm, ctx.compute_stream, "shaped: paired rounds"));
    std::vector<double> s(static_cast<std::size_t>(batch * count), 0.0);
    for (int e = 0; e < batch * count; ++e) {
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, events.start(e), events.stop(e)));
      s[static_cast<std::size_t>(e)] = ms * 1e-3;
    }
    OVERLAPSIM_TRY(allreduce_host(ctx.comm, ctx.compute_stream, s, ncclMax));
    for (int i = 0; i < batch; ++i) {
      seconds->emplace_back(s.begin() + i * count, s.begin() + (i + 1) * count);
      first->push_back((index + done + i) % count);
    }
    done += batch;
  }
  return Status::success();
}

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
    OVERLAPSIM_TRY(paired_loop());
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

  // Candidate `i` run on input set `set`, as the timed loops enqueue it.
  EnqueueIteration candidate_run(std::size_t i) const {
    return [this, c = &candidates_[i]](int set) {
      return c->run(io_.set(set), compute(), comm_stream());
    };
  }
  // The candidate that runs decomposed's own code at k chunks (-1 when k is not a candidate).
  int decomposed_candidate(int k) const {
    for (std::size_t i = 0; i < candidates_.size(); ++i)
      if (candidates_[i].kind() == ShapedChoice::Kind::Decomposed && candidates_[i].chunks() == k)
        return static_cast<int>(i);
    return -1;
  }
  // "shaped:s16:c8", "shaped:decomposed", "shaped:sequential": the CSV design of a choice.
  static std::string choice_design(const char* prefix, const ShapedChoice& c) {
    return std::string(prefix) + ":" + c.name();
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
    OVERLAPSIM_TRY(base_.prepare(1));
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
    // The candidates: the baselines' own objects first, then the grid but its look-alikes.
    candidates_.push_back(ShapedChoice::sequential(base_));
    for (int k : chunks_) candidates_.push_back(ShapedChoice::decomposed(base_, decomposed_, k));
    for (const auto& d : designs_)
      if (d->config().free_sms > 0 || d->config().comm_ctas > 0)
        candidates_.push_back(ShapedChoice::grid(*d));
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
    OVERLAPSIM_TRY(base_.enqueue_op(b, 1, 0, compute()));
    for (int k : chunks_)
      for (int chunk = 0; chunk < k; ++chunk)
        OVERLAPSIM_TRY(base_.enqueue_op(b, k, chunk, compute()));
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "shaped: decomposed GEMMs loaded"));
    for (auto& p : coll_alone_) OVERLAPSIM_TRY(p->enqueue_collective(b, 1, 0, compute()));
    OVERLAPSIM_TRY(io_.sequential(0));
    return wait_stream(env_.ctx->comm, compute(), "shaped: warm-up");
  }

  // --shaped-algos: one CSV line per chunk GEMM plan (every grid point, the unchunked GEMM
  // alone per S > 0, and the decomposed design's own plans: sequential's k = 1 and each k)
  // with the algorithm cuBLASLt chose for it; the header only when the file is new or
  // empty, so every shape of a run appends to one file.
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
    const auto line = [&](const char* role, const ShapedConfig& g, const CublasLtGemm& gemm,
                          int batches) -> Status {
      CublasLtAlgoInfo a;
      OVERLAPSIM_TRY(gemm.algo_info(&a));
      const GemmShape& gs = gemm.shape();
      out << gpu << ',' << env_.world() << ',' << to_string(op_) << ',' << to_string(case_.dtype)
          << ',' << shape_.m << ',' << shape_.n << ',' << shape_.k << ',' << role << ','
          << g.free_sms << ',' << (g.free_sms > 0 ? sms - g.free_sms : 0) << ',' << g.comm_ctas
          << ',' << g.chunks << ',' << gs.m << ',' << gs.n << ',' << gs.k << ',' << batches << ','
          << a.algo_id << ',' << a.tile_id << ',' << a.tile_m() << ',' << a.tile_n() << ','
          << a.cluster_m() << ',' << a.cluster_n() << ',' << a.splitk_num << ','
          << a.reduction_scheme << ',' << a.stages_id << ',' << a.swizzle << ',' << a.waves << '\n';
      return Status::success();
    };
    // c only changes the communicator, not the GEMM plan: one line per (S, k).
    std::vector<std::pair<int, int>> seen;
    for (const auto& d : designs_) {
      const std::pair<int, int> key{d->config().free_sms, d->config().chunks};
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
      seen.push_back(key);
      OVERLAPSIM_TRY(line("grid", d->config(), d->gemm(), d->gemm_batches()));
    }
    for (const auto& d : gemm_alone_)
      OVERLAPSIM_TRY(line("gemm_alone", d->config(), d->gemm(), d->gemm_batches()));
    std::vector<int> plain{1};
    plain.insert(plain.end(), chunks_.begin(), chunks_.end());
    for (int k : plain) {
      CublasLtGemm gemm;
      int batches = 1;
      OVERLAPSIM_TRY(decomposed_chunk_gemm(env_.lt, op_, shape_, env_.world(), case_.dtype,
                                           env_.workspace.data(), env_.workspace.bytes(), k, &gemm,
                                           &batches));
      OVERLAPSIM_TRY(line("decomposed", {0, 0, k}, gemm, batches));
    }
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

    // Sequential and decomposed are the candidates' own runs (the same objects).
    std::vector<EnqueueIteration> variants{io_.op_alone, io_.collective_alone, candidate_run(0)};
    for (int k : chunks_)
      variants.push_back(candidate_run(static_cast<std::size_t>(decomposed_candidate(k))));
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
    std::vector<double> search_s(candidates_.size(), 0.0);
    std::size_t v = 0;
    env_.emit(row(to_string(op_), "op_alone_sh_search", 1, t[v++])
                  .flops(compute_flops(op_, shape_))
                  .row());
    env_.emit(pair_row("collective_alone_sh_search", 1, t[v++]).flops(0).row());
    search_s[0] = t[v].median_s;
    env_.emit(pair_row("sequential_sh_search", 1, t[v++]).row());
    double best_decomposed_s = 0;
    for (int k : chunks_) {
      const int cand = decomposed_candidate(k);
      search_s[static_cast<std::size_t>(cand)] = t[v].median_s;
      std::uint64_t differ = 0;
      OVERLAPSIM_TRY(exact_mismatches(
          [&] {
            return candidates_[static_cast<std::size_t>(cand)].run(io_.set(0), compute(),
                                                                   comm_stream());
          },
          &differ));
      env_.emit(pair_row("decomposed_sh_search", k, t[v]).wrong(differ).row());
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
      for (std::size_t c = 0; c < candidates_.size(); ++c)
        if (candidates_[c].design() == designs_[d].get()) search_s[c] = td.median_s;
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
    std::vector<int> all(candidates_.size());
    for (std::size_t c = 0; c < candidates_.size(); ++c) all[c] = static_cast<int>(c);
    const auto time_of = [&](int c) { return search_s[static_cast<std::size_t>(c)]; };
    // Finalists: the search's choice if a grid point, then the fastest other grid points;
    // the confirming loop times sequential and decomposed beside them anyway.
    const auto add = [&](int c) {
      if (c >= 0 && candidates_[static_cast<std::size_t>(c)].kind() == ShapedChoice::Kind::Grid &&
          static_cast<int>(finalists_.size()) < kGridFinalists &&
          std::find(finalists_.begin(), finalists_.end(), c) == finalists_.end())
        finalists_.push_back(c);
    };
    add(choose(all, time_of));
    std::vector<int> by_time = all;
    std::stable_sort(by_time.begin(), by_time.end(),
                     [&](int x, int y) { return time_of(x) < time_of(y); });
    for (int c : by_time) add(c);
    return Status::success();
  }

  // The fastest of `candidates`, unless a simpler one is within kSimplerWithin of it:
  // decomposed at its fastest k among them first, then sequential (candidate 0). A point
  // that wins by less than that is as likely noise as shaping; decomposed first, since the
  // bar against it allows no margin and the bar against sequential 1 %. Every rank reads
  // the same max-over-rank times, so every rank picks the same candidate.
  int choose(const std::vector<int>& candidates, const std::function<double(int)>& time_of) const {
    int best = candidates.front();
    for (int c : candidates)
      if (time_of(c) < time_of(best)) best = c;
    const double bar_s = (1.0 + kSimplerWithin) * time_of(best);
    int plain = -1;
    for (int c : candidates)
      if (candidates_[static_cast<std::size_t>(c)].kind() == ShapedChoice::Kind::Decomposed &&
          (plain < 0 || time_of(c) < time_of(plain)))
        plain = c;
    if (plain >= 0 && time_of(plain) <= bar_s) return plain;
    if (std::find(candidates.begin(), candidates.end(), 0) != candidates.end() &&
        time_of(0) <= bar_s)
      return 0;
    return best;
  }

  // Sequential, decomposed at its best k and the grid finalists re-timed in one loop (the
  // final loop's mix, so its clock state): the search loop's 50-odd variants run cooler,
  // and its ranking of close points did not always hold in the final loop (h100x4 run 1).
  Status confirm() {
    std::vector<int> timed{0};
    if (best_k_ > 0) timed.push_back(decomposed_candidate(best_k_));
    timed.insert(timed.end(), finalists_.begin(), finalists_.end());
    std::vector<EnqueueIteration> variants;
    for (int c : timed) variants.push_back(candidate_run(static_cast<std::size_t>(c)));
    std::vector<Timing> t;
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "shaped: confirm ready"));
    OVERLAPSIM_TRY(
        time_interleaved(*env_.ctx, 1, std::max(5, case_.iterations / 2), variants, io_.align, &t));
    std::vector<double> by_candidate(candidates_.size(), 0.0);
    for (std::size_t i = 0; i < timed.size(); ++i) {
      const ShapedChoice& c = candidates_[static_cast<std::size_t>(timed[i])];
      by_candidate[static_cast<std::size_t>(timed[i])] = t[i].median_s;
      if (c.kind() == ShapedChoice::Kind::Sequential)
        env_.emit(pair_row("sequential_sh_confirm", 1, t[i]).row());
      else if (c.kind() == ShapedChoice::Kind::Decomposed)
        env_.emit(pair_row("decomposed_sh_confirm", c.chunks(), t[i]).row());
      else
        env_.emit(pair_row(choice_design("shaped_confirm", c), c.chunks(), t[i]).row());
    }
    chosen_ = choose(timed, [&](int c) { return by_candidate[static_cast<std::size_t>(c)]; });
    return Status::success();
  }

  Status final_loop() {
    const ShapedChoice& chosen = candidates_[static_cast<std::size_t>(chosen_)];
    std::vector<EnqueueIteration> variants{io_.op_alone, io_.collective_alone, candidate_run(0)};
    if (best_k_ > 0)
      variants.push_back(candidate_run(static_cast<std::size_t>(decomposed_candidate(best_k_))));
    variants.push_back(candidate_run(static_cast<std::size_t>(chosen_)));
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
    env_.emit(
        pair_row(choice_design("shaped", chosen), chosen.chunks(), t[v++]).wrong(wrong).row());
    if (env_.rank() == 0) {
      const bool own = chosen.kind() != ShapedChoice::Kind::Grid;
      std::fprintf(stderr, "overlap-bench: shaped %s %lldx%lldx%lld world %d: chose %s:k%d%s\n",
                   to_string(op_), static_cast<long long>(shape_.m),
                   static_cast<long long>(shape_.n), static_cast<long long>(shape_.k), env_.world(),
                   chosen.name().c_str(), chosen.chunks(),
                   own ? " (the baseline's own code path)" : "");
    }
    return Status::success();
  }

  // Sequential, decomposed at its best k and the choice, kPairedRounds rounds of one each:
  // the per-round ratios behind the bars' intervals (shaped_runner.hpp).
  Status paired_loop() {
    const ShapedChoice& chosen = candidates_[static_cast<std::size_t>(chosen_)];
    std::vector<EnqueueIteration> variants{candidate_run(0)};
    if (best_k_ > 0)
      variants.push_back(candidate_run(static_cast<std::size_t>(decomposed_candidate(best_k_))));
    variants.push_back(candidate_run(static_cast<std::size_t>(chosen_)));
    const std::size_t dec = 1;
    const std::size_t sh = variants.size() - 1;
    std::vector<std::vector<double>> s;
    std::vector<int> first;
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "shaped: paired ready"));
    OVERLAPSIM_TRY(
        time_rounds(*env_.ctx, case_.warmup, kPairedRounds, variants, io_.align, &s, &first));
    const auto column = [&](std::size_t v) {
      std::vector<double> out;
      for (const auto& r : s) out.push_back(r[v]);
      return out;
    };
    env_.emit(pair_row("sequential_sh_paired", 1, summarize(column(0))).row());
    if (best_k_ > 0)
      env_.emit(pair_row("decomposed_sh_paired", best_k_, summarize(column(dec))).row());
    env_.emit(
        pair_row(choice_design("shaped_paired", chosen), chosen.chunks(), summarize(column(sh)))
            .row());
    if (env_.rank() != 0) return Status::success();
    std::vector<double> over_seq, over_dec;
    for (const auto& r : s) {
      over_seq.push_back(r[sh] / r[0]);
      if (best_k_ > 0) over_dec.push_back(r[sh] / r[dec]);
    }
    const MedianInterval q = median_interval(over_seq);
    std::fprintf(stderr,
                 "overlap-bench: shaped %s %lldx%lldx%lld world %d paired (%d rounds): "
                 "%s:k%d / sequential %.4f [%.4f, %.4f]",
                 to_string(op_), static_cast<long long>(shape_.m), static_cast<long long>(shape_.n),
                 static_cast<long long>(shape_.k), env_.world(), q.count, chosen.name().c_str(),
                 chosen.chunks(), q.median, q.low, q.high);
    if (best_k_ > 0) {
      const MedianInterval d = median_interval(over_dec);
      std::fprintf(stderr, ", / decomposed:k%d %.4f [%.4f, %.4f]", best_k_, d.median, d.low,
                   d.high);
    }
    std::fprintf(stderr, " (median of per-round ratios, 95 %% interval)\n");
    return env_.shaped_paired_path.empty() ? Status::success() : write_rounds(s, first, dec, sh);
  }

  // --shaped-paired: one line per round, the header only when the file is new or empty.
  Status write_rounds(const std::vector<std::vector<double>>& s, const std::vector<int>& first,
                      std::size_t dec, std::size_t sh) const {
    const std::string& path = env_.shaped_paired_path;
    std::ifstream probe(path, std::ios::binary | std::ios::ate);
    const bool fresh = !probe || probe.tellg() <= 0;
    probe.close();
    std::ofstream out(path, std::ios::app);
    if (!out) return Status::failure("shaped: cannot open " + path);
    if (fresh)
      out << "gpu,world,op,dtype,m,n,k,shaped_choice,shaped_chunks,decomposed_chunks,round,"
             "first,sequential_us,decomposed_us,shaped_us\n";
    const ShapedChoice& chosen = candidates_[static_cast<std::size_t>(chosen_)];
    const std::string gpu = read_device_tags(env_.world()).gpu;
    const char* names[] = {"sequential", best_k_ > 0 ? "decomposed" : "shaped", "shaped"};
    char buffer[64];
    const auto us = [&](double seconds) {
      std::snprintf(buffer, sizeof buffer, "%.3f", seconds * 1e6);
      return std::string(buffer);
    };
    for (std::size_t r = 0; r < s.size(); ++r) {
      out << gpu << ',' << env_.world() << ',' << to_string(op_) << ',' << to_string(case_.dtype)
          << ',' << shape_.m << ',' << shape_.n << ',' << shape_.k << ',' << chosen.name() << ','
          << chosen.chunks() << ',' << best_k_ << ',' << r << ',' << names[first[r]] << ','
          << us(s[r][0]) << ',' << (best_k_ > 0 ? us(s[r][dec]) : std::string()) << ','
          << us(s[r][sh]) << '\n';
    }
    out.flush();
    if (!out) return Status::failure("shaped: writing " + path + " failed");
    return Status::success();
  }

  BenchEnv& env_;
  const BenchCase& case_;
  PairOp op_;
  PairShape shape_;
  const TilewiseCaseIo& io_;
  std::vector<int> ctas_, chunks_, free_sms_;
  std::vector<ShapedConfig> grid_;
  // The sequential and decomposed baselines' GEMM plans, on the run's communicator: the
  // baseline rows and the candidates that are those baselines run these very objects.
  PairKernels base_;
  DecomposedDesign decomposed_;
  std::vector<std::unique_ptr<ShapedDesign>> designs_;     // one per grid point
  std::vector<std::unique_ptr<ShapedDesign>> gemm_alone_;  // unchunked, per S > 0
  std::vector<std::unique_ptr<PairKernels>> coll_alone_;   // unchunked collective, per c > 0
  // Sequential, decomposed per k, then the grid points but (0, 0, k); never resized after
  // build_designs (the timed loops hold pointers into it).
  std::vector<ShapedChoice> candidates_;
  DeviceBuffer sequential_bits_;
  std::size_t result_count_ = 0;
  int best_k_ = 0;
  std::vector<int> finalists_;  // candidate indices of grid points, the search's choice first
  int chosen_ = -1;
};

}  // namespace

MedianInterval median_interval(std::vector<double> values, double confidence) {
  MedianInterval q;
  q.count = static_cast<int>(values.size());
  if (values.empty()) return q;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  q.median = n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  // P(Binomial(n, 1/2) < j) for j = 1, 2, ...: the chance that fewer than j values fall
  // below the median, i.e. that x(j) lies above it. In logs, so large n does not underflow.
  const double tail = 0.5 * (1.0 - confidence);
  const double log_half_n = static_cast<double>(n) * std::log(0.5);
  const double log_n_fact = std::lgamma(static_cast<double>(n) + 1.0);
  double below = 0;   // P(B < j)
  std::size_t j = 0;  // the largest j with P(B < j) <= tail; 0: none
  double below_j = 0;
  for (std::size_t i = 0; i < n / 2 + 1; ++i) {
    // P(B = i), then P(B < i + 1).
    below += std::exp(log_n_fact - std::lgamma(static_cast<double>(i) + 1.0) -
                      std::lgamma(static_cast<double>(n - i) + 1.0) + log_half_n);
    if (below > tail) break;
    j = i + 1;
    below_j = below;
  }
  if (j == 0) {
    // Too few values: [min, max], which misses the median with chance 2 P(B = 0).
    q.low = values.front();
    q.high = values.back();
    q.coverage = 1.0 - 2.0 * std::exp(log_half_n);
    return q;
  }
  q.low = values[j - 1];
  q.high = values[n - j];
  q.coverage = 1.0 - 2.0 * below_j;
  return q;
}

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
