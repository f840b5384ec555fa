#include "kernels/bench/allgather_tilewise_runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/bench/clock_states.hpp"
#include "kernels/bench/timing.hpp"
#include "kernels/bench/verify.hpp"
#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/gemm/own_gemm.hpp"
#include "kernels/harness/fill.hpp"
#include "kernels/harness/stream_gate.hpp"
#include "kernels/tilewise/allgather_gemm.hpp"

namespace overlapsim::kernels::bench {
namespace {

namespace tw = overlapsim::kernels::tilewise;

struct Candidate {
  tw::AllGatherGemmOptions options;
  std::unique_ptr<tw::AllGatherGemmDesign> design;
  Timing search;
};

// "_k<n>": the GEMM's last wave split in n ranges of K (AllGatherGemmOptions::split_k_tail);
// "tilewise_ag_vendor": cuBLASLt a block and a chunk (AllGatherGemmOptions::vendor_gemm),
// "_2s" on two alternating streams (vendor_streams); "_noalign": without the start barrier.
std::string design_name(const tw::AllGatherGemmOptions& o) {
  const std::string start = o.align_start ? "" : "_noalign";
  if (o.vendor_gemm)
    return std::string("tilewise_ag_vendor") + (o.vendor_streams == 2 ? "_2s" : "") + start;
  return std::string(o.push == tw::AllGatherPush::PerPeer ? "tilewise_ag_par" : "tilewise_ag") +
         (o.split_k_tail > 1 ? "_k" + std::to_string(o.split_k_tail) : std::string()) + start;
}

class AllGatherTilewiseRunner {
 public:
  AllGatherTilewiseRunner(BenchEnv& env, const BenchCase& c, const PairShape& shape,
                          const TilewiseCaseIo& io)
      : env_(env), case_(c), shape_(shape), io_(io) {}

  Status run() {
    const int world = env_.world();
    // A candidate the design can run for this shape, timed with a 30 s wait limit, once per
    // start mode of --tilewise-ag-align.
    const auto add = [&](tw::AllGatherGemmOptions o) {
      o.wait_timeout_s = 30;
      if (!tw::AllGatherGemmDesign::can_implement(shape_.m, shape_.n, shape_.k, world, o).ok)
        return false;
      for (const int align : env_.tilewise_settings.ag_align) {
        Candidate cand;
        cand.options = o;
        cand.options.align_start = align != 0;
        candidates_.push_back(std::move(cand));
      }
      return true;
    };
    for (int chunks : env_.tilewise_settings.ag_chunks)
      for (tw::AllGatherPush push : env_.tilewise_settings.ag_push) {
        if (push == tw::AllGatherPush::PerPeer && world <= 2) continue;  // the same as rotated
        tw::AllGatherGemmOptions o;
        o.chunks = chunks;
        o.push = push;
        if (!add(o)) continue;
        // The split last wave: one chunk, rotated pushes only (where chunks and pushes matter
        // least), so the loop grows by the split counts alone.
        if (chunks != 1 || push != tw::AllGatherPush::Rotated) continue;
        for (const int split : env_.tilewise_settings.split_tail) {
          if (split <= 1) continue;
          tw::AllGatherGemmOptions s = o;
          s.split_k_tail = split;
          add(s);
        }
      }
    // The per-chunk vendor GEMMs on the same pushes (rotated), one candidate a chunk count
    // and stream count.
    for (const int chunks : env_.tilewise_settings.vendor_chunks)
      for (const int streams : env_.tilewise_settings.vendor_streams) {
        tw::AllGatherGemmOptions o;
        o.chunks = chunks;
        o.vendor_gemm = true;
        o.vendor_streams = streams;
        add(o);
      }
    if (candidates_.empty()) {
      if (env_.rank() == 0)
        std::fprintf(stderr, "overlap-bench: allgather+gemm %s: skipping tilewise: %s\n",
                     shape_text().c_str(),
                     tw::AllGatherGemmDesign::can_implement(shape_.m, shape_.n, shape_.k, world, {})
                         .message.c_str());
      return Status::success();
    }
    // Every allocation between two rendezvous: no cudaMalloc while a peer's NCCL kernel
    // waits for this rank (docs/kernels/design.md, the hang's mechanism).
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "allgather tilewise: before allocating"));
    for (Candidate& cand : candidates_) {
      cand.design = std::make_unique<tw::AllGatherGemmDesign>();
      OVERLAPSIM_TRY(cand.design->initialize(&env_.ctx->comm, shape_.m, shape_.n, shape_.k,
                                             case_.dtype, cand.options));
      for (int s = 0; s < io_.sets; ++s) {
        const PairBuffers b = io_.set(s);
        OVERLAPSIM_TRY(cand.design->prepare(b.a, b.b, b.c));
      }
    }
    const std::size_t mn = static_cast<std::size_t>(shape_.m * shape_.n);
    OVERLAPSIM_TRY(own_reference_.allocate(mn * 2));
    for (int s = 0; s < io_.sets; ++s) {
      const PairBuffers b = io_.set(s);
      auto g = std::make_unique<gemm::OwnGemm>();
      OVERLAPSIM_TRY(g->initialize(gemm_args(b.staging, b.b, b.c)));
      own_.push_back(std::move(g));
    }
    // The bit check's own GEMM, one for each split last wave a candidate uses: the split
    // sums K in another order, and which tiles it splits follows the schedule, so the
    // reference runs the design's own schedule (rotation and split; without a split the
    // order does not change a tile's bits, and the plain GEMM is the reference).
    for (const Candidate& cand : candidates_) {
      const int split = cand.options.split_k_tail;
      if (cand.options.vendor_gemm || own_check_.count(split)) continue;
      gemm::SchedulerOptions sched;
      if (split > 1) sched = cand.design->scheduler();
      auto g = std::make_unique<gemm::OwnGemm>();
      OVERLAPSIM_TRY(g->initialize(
          gemm_args(io_.set(0).staging, io_.set(0).b, own_reference_.data()), {}, sched));
      own_check_.emplace(split, std::move(g));
    }
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "allgather tilewise: after allocating"));
    // Each candidate once before anything is timed (its kernels are loaded already).
    for (Candidate& cand : candidates_) OVERLAPSIM_TRY(run_candidate(cand, 0));
    OVERLAPSIM_TRY(wait_stream(env_.ctx->comm, compute(), "allgather tilewise warm-up"));

    OVERLAPSIM_TRY(search());
    OVERLAPSIM_TRY(final_round());
    for (Candidate& cand : candidates_) OVERLAPSIM_TRY(cand.design->check_waits());
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "allgather tilewise: before freeing"));
    return Status::success();
  }

 private:
  cudaStream_t compute() const { return env_.ctx->compute_stream; }

  std::string shape_text() const {
    return std::to_string(shape_.m) + "x" + std::to_string(shape_.n) + "x" +
           std::to_string(shape_.k);
  }

  gemm::GemmArgs gemm_args(const void* a, const void* b, void* c) const {
    gemm::GemmArgs args;
    args.m = shape_.m;
    args.n = shape_.n;
    args.k = shape_.k;
    args.dtype = case_.dtype == DType::BF16 ? gemm::DType::kBf16 : gemm::DType::kFp16;
    args.a = a;
    args.b = b;
    args.c = c;
    return args;
  }

  Status run_candidate(Candidate& cand, int i) {
    const PairBuffers b = io_.set(i);
    return cand.design->run(b.a, b.b, b.c, compute(), env_.ctx->comm_stream);
  }

  // NCCL all-gather of set i's shard into its staging A, then the own GEMM on it.
  Status sequential_own(int i) {
    const PairBuffers b = io_.set(i);
    const std::size_t shard = static_cast<std::size_t>(shape_.m / env_.world() * shape_.k);
    OVERLAPSIM_TRY(all_gather(env_.ctx->comm, b.a, b.staging, shard, case_.dtype, compute()));
    return own_[static_cast<std::size_t>(i % io_.sets)]->run(compute());
  }

  RowBuilder row(const std::string& design, int chunks, const Timing& t) const {
    return RowBuilder(to_string(PairOp::AllGatherGemm), design, to_string(case_.dtype))
        .shape(shape_)
        .chunks(chunks)
        .time(t);
  }

  RowBuilder pair_row(const std::string& design, int chunks, const Timing& t) const {
    return row(design, chunks, t)
        .bytes(collective_bytes(PairOp::AllGatherGemm, shape_, env_.world(), case_.dtype))
        .flops(compute_flops(PairOp::AllGatherGemm, shape_))
        .busbw_factor(busbw_factor(CollectiveOp::AllGather, env_.world()));
  }

  // Every candidate beside the sequential pair in one loop; the fewest chunks within 1 % of
  // the fastest, and whether it beats sequential by more than 1 %.
  Status search() {
    std::vector<EnqueueIteration> variants{io_.sequential};
    for (Candidate& cand : candidates_)
      variants.push_back([this, &cand](int i) { return run_candidate(cand, i); });
    std::vector<Timing> timings;
    OVERLAPSIM_TRY(time_interleaved(*env_.ctx, case_.warmup, case_.iterations, variants, io_.align,
                                    &timings));
    t_sequential_search_ = timings[0];
    best_ = 0;
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
      candidates_[i].search = timings[i + 1];
      if (timings[i + 1].median_s < timings[best_ + 1].median_s) best_ = i;
      if (env_.rank() == 0)
        std::fprintf(stderr,
                     "overlap-bench: ag_candidate %s %s chunks %d: %.1f us (sequential %.1f us)\n",
                     shape_text().c_str(), design_name(candidates_[i].options).c_str(),
                     candidates_[i].options.chunks, 1e6 * timings[i + 1].median_s,
                     1e6 * timings[0].median_s);
    }
    // Among the candidates within kChunkTie of the fastest, the fewest chunks (then the
    // faster): this loop starts every variant aligned, where 1, 2 and 4 chunks mostly tie,
    // but back to back each chunk's copy and flag lengthen the transport under the GEMM,
    // and fewer chunks ran 0-6 % faster there (the call timeline, 4 x H200, 11 shapes).
    const double fastest = candidates_[best_].search.median_s;
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
      const Candidate& c = candidates_[i];
      const Candidate& b = candidates_[best_];
      if (c.search.median_s > (1 + kChunkTie) * fastest) continue;
      if (c.options.chunks < b.options.chunks ||
          (c.options.chunks == b.options.chunks && c.search.median_s < b.search.median_s))
        best_ = i;
    }
    OVERLAPSIM_TRY(finalists());
    sequential_chosen_ =
        !(candidates_[best_].search.median_s < 0.99 * t_sequential_search_.median_s);
    if (env_.rank() == 0)
      std::fprintf(
          stderr,
          "overlap-bench: tilewise allgather+gemm %s: tuner chose %s (search: best %s "
          "chunks %d %.1f us, %s, sequential %.1f us)\n",
          shape_text().c_str(),
          sequential_chosen_ ? "sequential" : design_name(candidates_[best_].options).c_str(),
          design_name(candidates_[best_].options).c_str(), candidates_[best_].options.chunks,
          1e6 * candidates_[best_].search.median_s,
          finalists_timed_ ? "the finalist nearest the fastest in its worse clock state"
                           : "fewest chunks within 1 % of the fastest",
          1e6 * t_sequential_search_.median_s);
    return Status::success();
  }

  // --tilewise-ag-finalists: the interleaved search runs every variant from an aligned start
  // at the loop's own clock, between the steady and burst states PyTorch's peers are timed
  // in; candidates within kFinalistSpread of each other there can order differently in those
  // states (a chunk GEMM's energy, the start barrier's cost back to back). So up to N of them
  // (the search's choice first, then by search time; each more than 1 % faster than
  // sequential in the search) are timed back to back steady and burst, and the one whose
  // worse state is nearest that state's fastest finalist is chosen. Stderr lines
  // "ag_finalist ...". The chosen one is timed afresh in the clock states afterwards.
  Status finalists() {
    const int limit = env_.tilewise_settings.ag_finalists;
    if (limit < 2) return Status::success();
    const double fastest = candidates_[best_].search.median_s;
    std::vector<std::size_t> order{best_};
    std::vector<std::size_t> rest;
    for (std::size_t i = 0; i < candidates_.size(); ++i)
      if (i != best_ && candidates_[i].search.median_s <= (1 + kFinalistSpread) * fastest &&
          candidates_[i].search.median_s < 0.99 * t_sequential_search_.median_s)
        rest.push_back(i);
    std::sort(rest.begin(), rest.end(), [&](std::size_t x, std::size_t y) {
      return candidates_[x].search.median_s < candidates_[y].search.median_s;
    });
    for (std::size_t i : rest)
      if (order.size() < static_cast<std::size_t>(limit)) order.push_back(i);
    if (order.size() < 2) return Status::success();
    std::vector<std::pair<std::string, EnqueueIteration>> variants;
    for (std::size_t i : order) {
      Candidate* cand = &candidates_[i];
      variants.emplace_back(design_name(cand->options),
                            [this, cand](int it) { return run_candidate(*cand, it); });
    }
    std::vector<double> steady(order.size(), 0), burst(order.size(), 0);
    OVERLAPSIM_TRY(time_clock_states(
        env_, case_, variants, [&](const std::string& name, std::size_t v, const Timing& t) {
          const bool is_steady = name.size() >= 7 && name.compare(name.size() - 7, 7, "_steady") == 0;
          (is_steady ? steady : burst)[v] = t.median_s;
        }));
    const double best_steady = *std::min_element(steady.begin(), steady.end());
    const double best_burst = *std::min_element(burst.begin(), burst.end());
    std::size_t chosen = 0;
    double chosen_worst = 0;
    for (std::size_t v = 0; v < order.size(); ++v) {
      const double worst = std::max(steady[v] / best_steady, burst[v] / best_burst);
      if (v == 0 || worst < chosen_worst) {
        chosen = v;
        chosen_worst = worst;
      }
      if (env_.rank() == 0) {
        const tw::AllGatherGemmOptions& o = candidates_[order[v]].options;
        std::fprintf(stderr,
                     "overlap-bench: ag_finalist %s %s chunks %d: search %.1f us, steady %.1f us, "
                     "burst %.1f us, worse state %.4f x its fastest\n",
                     shape_text().c_str(), design_name(o).c_str(), o.chunks,
                     1e6 * candidates_[order[v]].search.median_s, 1e6 * steady[v],
                     1e6 * burst[v], worst);
      }
    }
    best_ = order[chosen];
    finalists_timed_ = true;
    return Status::success();
  }

  Status final_round() {
    Candidate& best = candidates_[best_];
    std::vector<EnqueueIteration> variants{
        io_.sequential, io_.op_alone, io_.collective_alone,
        [this](int i) { return sequential_own(i); },
        [this](int i) { return own_[static_cast<std::size_t>(i % io_.sets)]->run(compute()); }};
    const std::vector<std::string> names{"sequential", "op_alone", "collective_alone",
                                         "sequential_own", "own_alone"};
    for (const auto& [k, enqueue] : io_.decomposed) variants.push_back(enqueue);
    variants.push_back([this, &best](int i) { return run_candidate(best, i); });
    // The chosen transport alone (copy engines, stream waits): the predictor's copy time.
    variants.push_back([this, &best](int i) {
      return best.design->run_gather_only(io_.set(i).a, compute(), env_.ctx->comm_stream);
    });
    std::vector<Timing> timings;
    OVERLAPSIM_TRY(time_interleaved(*env_.ctx, case_.warmup, case_.iterations, variants, io_.align,
                                    &timings));
    for (std::size_t v = 0; v < names.size(); ++v) {
      RowBuilder r = row(names[v] + "_tw_loop", 1, timings[v]);
      if (names[v] != "op_alone" && names[v] != "own_alone")
        r.bytes(collective_bytes(PairOp::AllGatherGemm, shape_, env_.world(), case_.dtype))
            .busbw_factor(busbw_factor(CollectiveOp::AllGather, env_.world()));
      if (names[v] != "collective_alone") r.flops(compute_flops(PairOp::AllGatherGemm, shape_));
      env_.emit(r.row());
    }
    std::size_t v = names.size();
    for (const auto& [k, enqueue] : io_.decomposed)
      env_.emit(pair_row("decomposed_tw_loop", k, timings[v++]).row());
    const Timing& t_best = timings[v];
    // The predictor on this loop's GEMM alone and transport alone (row own_alone_tw_loop,
    // gather_only_tw_loop) against the measured call.
    // (The planner models the own GEMM's per-chunk waits; a vendor choice is not predicted.)
    const double predicted =
        best.options.vendor_gemm
            ? 0.0
            : tw::predict_allgather_time_s(shape_.m, shape_.n, env_.world(), best.options,
                                           best.design->num_ctas(), timings[4].median_s,
                                           timings[v + 1].median_s);
    if (env_.rank() == 0)
      std::fprintf(stderr,
                   "overlap-bench: ag_predicted %s %s chunks %d: predicted %.1f us, measured "
                   "%.1f us (own GEMM %.1f us, transport %.1f us)\n",
                   shape_text().c_str(), design_name(best.options).c_str(), best.options.chunks,
                   1e6 * predicted, 1e6 * t_best.median_s, 1e6 * timings[4].median_s,
                   1e6 * timings[v + 1].median_s);
    env_.emit(row("gather_only_tw_loop", best.options.chunks, timings[v + 1])
                  .bytes(collective_bytes(PairOp::AllGatherGemm, shape_, env_.world(), case_.dtype))
                  .busbw_factor(busbw_factor(CollectiveOp::AllGather, env_.world()))
                  .row());

    // Correctness on set 0 behind poisoned outputs: the reference and the sequential result.
    std::uint64_t wrong = 0;
    OVERLAPSIM_TRY(io_.run_and_check([&]() { return run_candidate(best, 0); }, &wrong));
    OVERLAPSIM_TRY(best.design->check_waits());
    // Bit for bit against NCCL's all-gather and the own GEMM (set 0's result is in its c); a
    // vendor choice against NCCL's all-gather and its own cuBLASLt GEMMs, without waits.
    const PairBuffers b0 = io_.set(0);
    const std::size_t shard = static_cast<std::size_t>(shape_.m / env_.world() * shape_.k);
    OVERLAPSIM_TRY(all_gather(env_.ctx->comm, b0.a, b0.staging, shard, case_.dtype, compute()));
    if (best.options.vendor_gemm) {
      OVERLAPSIM_TRY(
          best.design->run_vendor_on_gathered(b0.staging, b0.b, own_reference_.data(), compute()));
    } else {
      OVERLAPSIM_TRY(own_check_.at(best.options.split_k_tail)->run(compute()));
    }
    OVERLAPSIM_TRY(wait_stream(env_.ctx->comm, compute(), "allgather tilewise bit check"));
    std::uint64_t mismatches = 0;
    OVERLAPSIM_TRY(count_mismatches(b0.c, own_reference_.data(),
                                    static_cast<std::size_t>(shape_.m * shape_.n), case_.dtype, 0.0,
                                    0.0, compute(), &mismatches));
    OVERLAPSIM_TRY(sum_over_ranks(env_, &mismatches));
    if (env_.rank() == 0)
      std::fprintf(stderr,
                   "overlap-bench: ag_bits %s %s chunks %d: mismatches %llu against NCCL "
                   "all-gather + %s\n",
                   shape_text().c_str(), design_name(best.options).c_str(), best.options.chunks,
                   static_cast<unsigned long long>(mismatches),
                   best.options.vendor_gemm ? "the same cuBLASLt chunk GEMMs" : "own GEMM");
    env_.emit(pair_row(design_name(best.options), best.options.chunks, t_best).wrong(wrong).row());
    const Timing& t_tuned = sequential_chosen_ ? timings[0] : t_best;
    env_.emit(pair_row("tilewise_tuned", sequential_chosen_ ? 0 : best.options.chunks, t_tuned)
                  .wrong(sequential_chosen_ ? 0 : wrong)
                  .row());
    // The chosen candidate in a loop of its own, as the pair runner times sequential and
    // decomposed and as PyTorch's peers time themselves (cooler than the interleaved loop).
    Timing own_loop;
    OVERLAPSIM_TRY(time_iterations(
        *env_.ctx, case_.warmup, case_.iterations,
        [this, &best](int i) { return run_candidate(best, i); }, &own_loop));
    env_.emit(pair_row(design_name(best.options) + "_own_loop", best.options.chunks, own_loop)
                  .row());
    return clock_states(best);
  }

  // The chosen candidate and the cuBLAS GEMM alone in the two clock states PyTorch's peers
  // are timed in (clock_states.hpp): rows op_alone_{steady,burst} and <design>_{steady,burst}.
  Status clock_states(Candidate& best) {
    const std::vector<std::pair<std::string, EnqueueIteration>> variants{
        {"op_alone", io_.op_alone},
        {design_name(best.options), [this, &best](int i) { return run_candidate(best, i); }}};
    OVERLAPSIM_TRY(time_clock_states(
        env_, case_, variants, [&](const std::string& name, std::size_t v, const Timing& t) {
          if (v == 0)
            env_.emit(row(name, 1, t).flops(compute_flops(PairOp::AllGatherGemm, shape_)).row());
          else
            env_.emit(pair_row(name, best.options.chunks, t).row());
        }));
    return timeline(best);
  }

  // Diagnostic (OVERLAPSIM_AG_TIMELINE=<folder>): kTimelineCalls calls back to back behind
  // a stream gate from a common start (every rank drained and met, then a t0 event), each
  // call's events (start, pushes start, each push step's end, GEMM end, end) in µs after t0
  // into <folder>/timeline_rank<r>.csv: where each rank's calls start and end, when each
  // peer block arrives, against the own GEMM alone in the same loop. Variants: the own GEMM
  // alone, every rotated candidate, and the chosen options with and without align_start
  // (also timed steady and burst as the clock-state rows).
  Status timeline(Candidate& best) {
    const char* dir = std::getenv("OVERLAPSIM_AG_TIMELINE");
    if (dir == nullptr || *dir == '\0') return Status::success();
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "allgather timeline: before allocating"));
    if (!gate_.initialized()) OVERLAPSIM_TRY(gate_.initialize());
    tw::AllGatherGemmOptions aligned_options = best.options;
    aligned_options.align_start = !best.options.align_start;
    Candidate aligned;
    aligned.options = aligned_options;
    aligned.design = std::make_unique<tw::AllGatherGemmDesign>();
    OVERLAPSIM_TRY(aligned.design->initialize(&env_.ctx->comm, shape_.m, shape_.n, shape_.k,
                                              case_.dtype, aligned_options));
    for (int s = 0; s < io_.sets; ++s) {
      const PairBuffers b = io_.set(s);
      OVERLAPSIM_TRY(aligned.design->prepare(b.a, b.b, b.c));
    }
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "allgather timeline: after allocating"));
    for (int i = 0; i < 2; ++i) OVERLAPSIM_TRY(run_candidate(aligned, i));
    OVERLAPSIM_TRY(wait_stream(env_.ctx->comm, compute(), "allgather timeline warm-up"));

    const std::string path =
        std::string(dir) + "/timeline_rank" + std::to_string(env_.rank()) + ".csv";
    std::FILE* out = std::fopen(path.c_str(), "a");
    if (out == nullptr) return Status::failure("allgather timeline: cannot open " + path);
    const auto label = [](const tw::AllGatherGemmOptions& o) {
      return design_name(o) + "_c" + std::to_string(o.chunks) +
             (o.align_start ? "_align" : "_unaligned");
    };
    Status st = trace_calls(out, "own_gemm", nullptr);
    for (Candidate& cand : candidates_)
      if (st.ok && cand.options.push == tw::AllGatherPush::Rotated)
        st = trace_calls(out, label(cand.options) + (&cand == &best ? "_chosen" : ""), &cand);
    if (st.ok) st = trace_calls(out, label(aligned.options), &aligned);
    if (st.ok) st = trace_calls(out, "gather_only_" + label(best.options), &best, true);
    std::fclose(out);
    OVERLAPSIM_TRY(st);

    // The other start in the two clock states, as clock_states() times the chosen one.
    OVERLAPSIM_TRY(time_clock_states(
        env_, case_,
        {{label(aligned.options), [this, &aligned](int i) { return run_candidate(aligned, i); }}},
        [&](const std::string& name, std::size_t, const Timing& t) {
          env_.emit(pair_row(name, aligned.options.chunks, t).row());
        }));
    OVERLAPSIM_TRY(aligned.design->check_waits());
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "allgather timeline: before freeing"));
    return Status::success();
  }

  // kTimelineCalls calls of `cand` (the own GEMM alone when null) behind the gate.
  Status trace_calls(std::FILE* out, const std::string& variant, Candidate* cand,
                     bool gather_only = false) {
    const int steps = env_.world() - 1;
    struct CallEvents {
      cudaEvent_t start = nullptr, stop = nullptr;
      tw::AllGatherCallTrace trace;
    };
    std::vector<CallEvents> calls(kTimelineCalls);
    cudaEvent_t t0 = nullptr;
    const auto make = [](cudaEvent_t* e) { return cudaEventCreate(e); };
    CUDA_CHECK(make(&t0));
    for (CallEvents& c : calls) {
      CUDA_CHECK(make(&c.start));
      CUDA_CHECK(make(&c.stop));
      CUDA_CHECK(make(&c.trace.pushes_start));
      CUDA_CHECK(make(&c.trace.gemm_end));
      c.trace.step_end.assign(static_cast<std::size_t>(steps), nullptr);
      for (cudaEvent_t& e : c.trace.step_end) CUDA_CHECK(make(&e));
    }
    Status st = quiesce(*env_.ctx, "allgather timeline: common start");
    if (st.ok) CUDA_CHECK(cudaEventRecord(t0, compute()));
    const int timeouts_before = gate_.timeouts();
    // A gate every kTimelineGated calls, as time_iterations does: a longer batch behind one
    // gate can fill the launch queue (4 chunks: some 30 operations a call on the comm
    // stream), and the gate then opens only by its timeout.
    for (int i = 0; st.ok && i < kTimelineCalls; ++i) {
      if (i % kTimelineGated == 0) {
        if (i > 0) gate_.open();
        st = gate_.close(compute(), 10.0);
        if (!st.ok) break;
      }
      CallEvents& c = calls[static_cast<std::size_t>(i)];
      CUDA_CHECK(cudaEventRecord(c.start, compute()));
      if (cand != nullptr) {
        cand->design->trace_next(&c.trace);
        st = gather_only
                 ? cand->design->run_gather_only(io_.set(i).a, compute(), env_.ctx->comm_stream)
                 : run_candidate(*cand, i);
      } else {
        st = own_[static_cast<std::size_t>(i % io_.sets)]->run(compute());
      }
      CUDA_CHECK(cudaEventRecord(c.stop, compute()));
    }
    gate_.open();
    if (st.ok) st = wait_stream(env_.ctx->comm, compute(), "allgather timeline");
    if (st.ok) CUDA_CHECK(cudaStreamSynchronize(env_.ctx->comm_stream));
    if (gate_.timeouts() != timeouts_before)
      std::fprintf(
          stderr, "overlap-bench: ag_timeline %s %s rank %d: %d gate(s) opened by timeout\n",
          shape_text().c_str(), variant.c_str(), env_.rank(), gate_.timeouts() - timeouts_before);
    const auto since = [&](cudaEvent_t e) {
      float ms = 0;
      return cudaEventElapsedTime(&ms, t0, e) == cudaSuccess ? 1e3 * ms : std::nan("");
    };
    for (int i = 0; st.ok && i < kTimelineCalls; ++i) {
      const CallEvents& c = calls[static_cast<std::size_t>(i)];
      std::fprintf(out, "%s,%s,%d,%d,%.1f,%.1f", shape_text().c_str(), variant.c_str(), env_.rank(),
                   i, since(c.start), cand ? since(c.trace.pushes_start) : std::nan(""));
      for (cudaEvent_t e : c.trace.step_end)
        std::fprintf(out, ",%.1f", cand ? since(e) : std::nan(""));
      std::fprintf(out, ",%.1f,%.1f\n",
                   cand && !gather_only ? since(c.trace.gemm_end) : std::nan(""), since(c.stop));
    }
    (void)cudaGetLastError();  // unrecorded events of the own GEMM's calls
    for (CallEvents& c : calls) {
      cudaEventDestroy(c.start);
      cudaEventDestroy(c.stop);
      cudaEventDestroy(c.trace.pushes_start);
      cudaEventDestroy(c.trace.gemm_end);
      for (cudaEvent_t e : c.trace.step_end) cudaEventDestroy(e);
    }
    cudaEventDestroy(t0);
    return st;
  }

  static constexpr int kTimelineCalls = 40;
  static constexpr double kChunkTie = 0.01;
  // Search spread within which a candidate is a finalist: wide enough to keep the vendor
  // family where it was 1.6-3.8 % behind the own GEMM in the search (4 x H200) but not the
  // candidates 8-13 % behind.
  static constexpr double kFinalistSpread = 0.05;
  bool finalists_timed_ = false;
  static constexpr int kTimelineGated = 8;
  StreamGate gate_;  // the timeline's

  BenchEnv& env_;
  const BenchCase& case_;
  PairShape shape_;
  const TilewiseCaseIo& io_;
  std::vector<Candidate> candidates_;
  std::vector<std::unique_ptr<gemm::OwnGemm>> own_;  // natural own GEMM on each set's staging
  // Set 0's, into own_reference_, per split last wave (1: unsplit).
  std::map<int, std::unique_ptr<gemm::OwnGemm>> own_check_;
  DeviceBuffer own_reference_;
  Timing t_sequential_search_;
  std::size_t best_ = 0;
  bool sequential_chosen_ = true;
};

}  // namespace

Status run_allgather_tilewise_rows(BenchEnv& env, const BenchCase& c, const PairShape& shape,
                                   const TilewiseCaseIo& io) {
  AllGatherTilewiseRunner runner(env, c, shape, io);
  return runner.run();
}

}  // namespace overlapsim::kernels::bench
