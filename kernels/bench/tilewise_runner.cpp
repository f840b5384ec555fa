#include "kernels/bench/tilewise_runner.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/bench/clock_states.hpp"
#include "kernels/bench/tilewise_context.hpp"
#include "kernels/bench/tilewise_measure.hpp"
#include "kernels/bench/tilewise_report.hpp"
#include "kernels/bench/tilewise_tuner.hpp"
#include "kernels/bench/vendor_reduce_scatter_runner.hpp"
#include "kernels/bench/verify.hpp"
#include "kernels/harness/fill.hpp"
#include "kernels/tilewise/design_support.hpp"

namespace overlapsim::kernels::bench {
namespace {

// One pair shape: the measurements, the tuner per transport, then the final round, in
// which the chosen configurations are re-timed beside the sequential pair and checked.
class TilewiseShapeRunner {
 public:
  explicit TilewiseShapeRunner(TilewiseShapeContext& sc) : sc_(sc) {}

  Status run() {
    const std::size_t mn = static_cast<std::size_t>(sc_.shape.m * sc_.shape.n);
    OVERLAPSIM_TRY(sc_.p.allocate(mn * 2));
    OVERLAPSIM_TRY(sc_.r.allocate(sc_.coll == CollectiveOp::AllReduce ? 0 : mn * 2));
    OVERLAPSIM_TRY(sc_.natural.allocate(mn * 2));
    OVERLAPSIM_TRY(sc_.natural_out.allocate(sc_.coll == CollectiveOp::AllReduce ? 0 : mn * 2));
    OVERLAPSIM_TRY(quiesce(*sc_.env.ctx, "tilewise: after allocating"));
    OVERLAPSIM_TRY(measure_own_alone(sc_));
    sc_.ce_ok =
        sc_.settings.copy_engine &&
        !tw::owner_shape_error(sc_.coll, sc_.shape.m, sc_.shape.n, sc_.env.world()).has_value();
    if (sc_.settings.copy_engine && !sc_.ce_ok && sc_.env.rank() == 0)
      std::fprintf(
          stderr, "overlap-bench: %s %lldx%lldx%lld: no copy_engine transport: %s\n",
          to_string(sc_.op), static_cast<long long>(sc_.shape.m),
          static_cast<long long>(sc_.shape.n), static_cast<long long>(sc_.shape.k),
          tw::owner_shape_error(sc_.coll, sc_.shape.m, sc_.shape.n, sc_.env.world())->c_str());

    if (!sc_.state.cache) {
      sc_.state.cache.emplace();
      if (!sc_.settings.cache_path.empty())
        OVERLAPSIM_TRY(sc_.state.cache->load(sc_.settings.cache_path));
    }
    // Acceptance 3: remapped stores + signals alone, every SM, interleaved with the plain GEMM.
    OVERLAPSIM_TRY(measure_signal_interleaved(sc_));

    std::optional<TilewiseCandidate> best_nccl, best_ce, other_ce;
    std::string search_nccl = "cached", search_ce = "cached";
    if (sc_.settings.nccl) OVERLAPSIM_TRY(search_nccl_transport(sc_, &best_nccl, &search_nccl));
    if (sc_.ce_ok) OVERLAPSIM_TRY(search_copy_engine(sc_, &best_ce, &search_ce, &other_ce));
    OVERLAPSIM_TRY(search_vendor(best_ce));
    OVERLAPSIM_TRY(final_round(best_nccl, search_nccl, best_ce, search_ce, other_ce));
    if (sc_.env.rank() == 0) OVERLAPSIM_TRY(sc_.reports.write_detail(sc_.settings.detail_path));
    return Status::success();
  }

  // The per-chunk vendor family (gemm+reducescatter): its best candidate, and the tuner's
  // choice among it, the copy-engine choice and the sequential pair by their search times
  // (the sequential pair kept unless the faster family is more than 1 % ahead).
  Status search_vendor(const std::optional<TilewiseCandidate>& best_ce) {
    OVERLAPSIM_TRY(vendor_.search());
    if (!vendor_.found()) return Status::success();
    if (sc_.io.sequential && sc_.t_sequential_search_s <= 0) {
      Timing t;
      OVERLAPSIM_TRY(time_iterations(*sc_.env.ctx, std::max(3, sc_.bench_case.warmup / 2),
                                     std::max(8, sc_.bench_case.iterations / 2), sc_.io.sequential,
                                     &t));
      sc_.t_sequential_search_s = t.median_s;
    }
    vendor_chosen_ = !best_ce || vendor_.search_s() < best_ce->measured_s;
    const double fastest = vendor_chosen_ ? vendor_.search_s() : best_ce->measured_s;
    sc_.sequential_chosen = !(fastest < 0.99 * sc_.t_sequential_search_s);
    return Status::success();
  }

  // The chosen configurations of both transports and the sequential pair, re-timed in
  // one interleaved loop, then checked.
  // `other`: the best copy-engine candidate of the other slab family (tilewise_tuner.hpp),
  // timed in the same loop as row alt_<its design>_tw_loop (not checked, not cached).
  Status final_round(std::optional<TilewiseCandidate> nccl, const std::string& search_nccl,
                     std::optional<TilewiseCandidate> ce, const std::string& search_ce,
                     std::optional<TilewiseCandidate> other = std::nullopt) {
    std::unique_ptr<tw::TilewiseDesign> dn;
    std::unique_ptr<tw::CopyEngineDesign> dc, dalt;
    std::vector<EnqueueIteration> variants;
    std::vector<std::string> names;
    if (sc_.io.sequential) {
      variants.push_back(sc_.io.sequential);
      names.push_back("sequential");
    }
    if (sc_.io.op_alone) {
      variants.push_back(sc_.io.op_alone);
      names.push_back("op_alone");
    }
    if (sc_.io.collective_alone) {
      variants.push_back(sc_.io.collective_alone);
      names.push_back("collective_alone");
    }
    if (nccl) {
      CommHandle* comm = nullptr;
      OVERLAPSIM_TRY(sc_.comm_for(nccl->comm_sms, &comm));
      dn = std::make_unique<tw::TilewiseDesign>();
      OVERLAPSIM_TRY(dn->initialize(comm, sc_.coll, sc_.shape.m, sc_.shape.n, sc_.shape.k,
                                    sc_.bench_case.dtype, sc_.options_for(*nccl)));
      OVERLAPSIM_TRY(sc_.prepare_sets(*dn));
      variants.push_back([&](int i) {
        const PairBuffers b = sc_.io.set(i);
        return dn->run(b.a, b.b, sc_.p.data(), sc_.r.data(), sc_.compute(), sc_.comm_stream());
      });
      names.push_back("tilewise");
    }
    if (ce) {
      dc = std::make_unique<tw::CopyEngineDesign>();
      OVERLAPSIM_TRY(dc->initialize(&sc_.env.ctx->comm, sc_.coll, sc_.shape.m, sc_.shape.n,
                                    sc_.shape.k, sc_.bench_case.dtype,
                                    sc_.copy_engine_options(*ce)));
      OVERLAPSIM_TRY(sc_.prepare_sets(*dc));
      variants.push_back([&](int i) {
        const PairBuffers b = sc_.io.set(i);
        return dc->run(b.a, b.b, sc_.p.data(), sc_.compute(), sc_.comm_stream());
      });
      names.push_back("tilewise_ce");
      // The same GEMM (chosen groups, rotated order, remapped stores, signals) without its
      // transport, in this loop: the GEMM's share of tilewise_ce under the loop's clock
      // (the signal loop runs GEMMs only, hotter; there the AR tail could not be told
      // from a slower GEMM).
      variants.push_back([&](int i) {
        const PairBuffers b = sc_.io.set(i);
        return dc->run_gemm_only(b.a, b.b, sc_.p.data(), sc_.compute());
      });
      names.push_back("own_signal_ce");
    }
    if (ce && other) {
      dalt = std::make_unique<tw::CopyEngineDesign>();
      OVERLAPSIM_TRY(dalt->initialize(&sc_.env.ctx->comm, sc_.coll, sc_.shape.m, sc_.shape.n,
                                      sc_.shape.k, sc_.bench_case.dtype,
                                      sc_.copy_engine_options(*other)));
      OVERLAPSIM_TRY(sc_.prepare_sets(*dalt));
      variants.push_back([&](int i) {
        const PairBuffers b = sc_.io.set(i);
        return dalt->run(b.a, b.b, sc_.p.data(), sc_.compute(), sc_.comm_stream());
      });
      names.push_back("alt");
    }
    if (vendor_.found()) {
      variants.push_back([&](int i) { return vendor_.run(i); });
      names.push_back("vendor");
    }
    if (variants.empty()) return Status::success();
    OVERLAPSIM_TRY(quiesce(*sc_.env.ctx, "tilewise: final designs ready"));
    std::vector<Timing> timings;
    OVERLAPSIM_TRY(time_interleaved(*sc_.env.ctx, sc_.bench_case.warmup, sc_.bench_case.iterations,
                                    variants, sc_.io.align ? sc_.io.align : EnqueueIteration{},
                                    &timings));
    OVERLAPSIM_TRY(emit_tuned_choice(names, timings, ce));
    for (std::size_t v = 0; v < names.size(); ++v) {
      if (names[v] == "sequential" || names[v] == "op_alone" || names[v] == "collective_alone") {
        RowBuilder r = sc_.row(to_string(sc_.op), names[v] + "_tw_loop", 1, timings[v]);
        if (names[v] != "op_alone")
          r.bytes(collective_bytes(sc_.op, sc_.shape, sc_.env.world(), sc_.bench_case.dtype));
        if (names[v] != "collective_alone") r.flops(compute_flops(sc_.op, sc_.shape));
        if (names[v] != "op_alone") r.busbw_factor(busbw_factor(sc_.coll, sc_.env.world()));
        sc_.emit(r);
      } else if (names[v] == "own_signal_ce") {
        sc_.emit(sc_.row(to_string(sc_.op), "own_signal_ce_tw_loop", ce->ce_groups, timings[v])
                     .flops(compute_flops(sc_.op, sc_.shape)));
      } else if (names[v] == "alt") {
        sc_.emit(sc_.row(to_string(sc_.op), "alt_" + copy_engine_design(*other) + "_tw_loop",
                         other->ce_groups, timings[v])
                     .flops(compute_flops(sc_.op, sc_.shape)));
      } else if (names[v] == "vendor") {
        std::uint64_t wrong = 0;
        OVERLAPSIM_TRY(vendor_.check(&wrong));
        emit_pair_row(VendorReduceScatterFamily::kDesign, vendor_.chunks(), timings[v], wrong);
      } else if (names[v] == "tilewise") {
        OVERLAPSIM_TRY(measure_final(*dn, *nccl, search_nccl, timings[v]));
      } else {
        OVERLAPSIM_TRY(finish_copy_engine(*dc, *ce, search_ce, timings[v]));
      }
    }
    if (dc) OVERLAPSIM_TRY(dc->check_waits());
    if (dalt) OVERLAPSIM_TRY(dalt->check_waits());
    if (sc_.settings.clock_states && sc_.op == PairOp::GemmReduceScatter)
      OVERLAPSIM_TRY(clock_states(dc.get(), ce));
    return quiesce(*sc_.env.ctx, "tilewise: final round done");
  }

  // --tilewise-clock-states: the sequential pair, the GEMM alone and each family's choice in
  // the two clock states PyTorch's peers are timed in (clock_states.hpp), rows
  // <name>_{steady,burst}; what the comparison with fused_matmul_reduce_scatter reads.
  Status clock_states(tw::CopyEngineDesign* dc, const std::optional<TilewiseCandidate>& ce) {
    if (!sc_.io.sequential || !sc_.io.op_alone) return Status::success();
    std::vector<std::pair<std::string, EnqueueIteration>> variants{
        {"sequential", sc_.io.sequential}, {"op_alone", sc_.io.op_alone}};
    std::vector<int> chunks{1, 1};
    if (dc != nullptr) {
      variants.emplace_back(copy_engine_design(*ce), [&, dc](int i) {
        const PairBuffers b = sc_.io.set(i);
        return dc->run(b.a, b.b, sc_.p.data(), sc_.compute(), sc_.comm_stream());
      });
      chunks.push_back(ce->ce_groups);
    }
    if (vendor_.found()) {
      variants.emplace_back(VendorReduceScatterFamily::kDesign,
                            [this](int i) { return vendor_.run(i); });
      chunks.push_back(vendor_.chunks());
    }
    return time_clock_states(
        sc_.env, sc_.bench_case, variants,
        [&](const std::string& name, std::size_t v, const Timing& t) {
          RowBuilder r = sc_.row(to_string(sc_.op), name, chunks[v], t)
                             .flops(compute_flops(sc_.op, sc_.shape));
          if (v != 1)
            r.bytes(collective_bytes(sc_.op, sc_.shape, sc_.env.world(), sc_.bench_case.dtype))
                .busbw_factor(busbw_factor(sc_.coll, sc_.env.world()));
          sc_.emit(r);
        });
  }

  // The tuner's choice among the copy-engine configurations and the sequential pair
  // (tilewise_tuner.hpp), as it ran in this loop: row `tilewise_tuned`, chunks = the
  // chosen groups per part, 0 where the sequential pair was chosen.
  Status emit_tuned_choice(const std::vector<std::string>& names,
                           const std::vector<Timing>& timings,
                           const std::optional<TilewiseCandidate>& ce) {
    if ((!ce && !vendor_.found()) || sc_.t_sequential_search_s <= 0) return Status::success();
    const std::string chosen = sc_.sequential_chosen ? "sequential"
                               : vendor_chosen_      ? "vendor"
                                                     : "tilewise_ce";
    const std::string choice =
        vendor_chosen_ ? VendorReduceScatterFamily::kDesign : copy_engine_design(*ce);
    const double choice_s = vendor_chosen_ ? vendor_.search_s() : ce->measured_s;
    const int choice_chunks = vendor_chosen_ ? vendor_.chunks() : ce->ce_groups;
    for (std::size_t v = 0; v < names.size(); ++v) {
      if (names[v] != chosen) continue;
      emit_pair_row("tilewise_tuned", sc_.sequential_chosen ? 0 : choice_chunks, timings[v], 0);
      if (sc_.env.rank() == 0)
        std::fprintf(stderr,
                     "overlap-bench: tilewise %s %lldx%lldx%lld: tuner chose %s (search: best "
                     "%s %.1f us, sequential %.1f us)\n",
                     to_string(sc_.op), static_cast<long long>(sc_.shape.m),
                     static_cast<long long>(sc_.shape.n), static_cast<long long>(sc_.shape.k),
                     sc_.sequential_chosen ? "sequential" : choice.c_str(), choice.c_str(),
                     1e6 * choice_s, 1e6 * sc_.t_sequential_search_s);
    }
    return Status::success();
  }

  // Own GEMM on set 0 followed by the same NCCL collective on the parent communicator;
  // *own_result: where that result is (natural layout).
  Status own_then_nccl(void** own_result) {
    OVERLAPSIM_TRY((own_reference_ != nullptr ? own_reference_ : sc_.own_gemms.front().get())
                       ->run(sc_.compute()));
    const auto count = static_cast<std::size_t>(sc_.shape.m * sc_.shape.n);
    const std::size_t per_rank = count / static_cast<std::size_t>(sc_.env.world());
    CommHandle& parent = sc_.env.ctx->comm;
    *own_result = sc_.natural.data();
    if (sc_.coll == CollectiveOp::AllReduce) {
      OVERLAPSIM_TRY(all_reduce(parent, sc_.natural.data(), sc_.natural.data(), count,
                                sc_.bench_case.dtype, sc_.compute()));
    } else if (sc_.coll == CollectiveOp::ReduceScatter) {
      OVERLAPSIM_TRY(reduce_scatter(parent, sc_.natural.data(), sc_.natural_out.data(), per_rank,
                                    sc_.bench_case.dtype, sc_.compute()));
      *own_result = sc_.natural_out.data();
    } else {
      OVERLAPSIM_TRY(all_to_all(parent, sc_.natural.data(), per_rank, sc_.natural_out.data(),
                                per_rank, per_rank, sc_.bench_case.dtype, sc_.compute()));
      *own_result = sc_.natural_out.data();
    }
    return wait_stream(sc_.env.ctx->comm, sc_.compute(), "tilewise own + NCCL");
  }

  Status bitwise_against_own(const void* result, std::size_t out_elems, std::uint64_t* mismatches) {
    void* own_result = nullptr;
    OVERLAPSIM_TRY(own_then_nccl(&own_result));
    *mismatches = 0;
    OVERLAPSIM_TRY(count_mismatches(result, own_result, out_elems, sc_.bench_case.dtype, 0.0, 0.0,
                                    sc_.compute(), mismatches));
    OVERLAPSIM_TRY(sum_over_ranks(sc_.env, mismatches));
    if (*mismatches != 0 && sc_.env.rank() == 0)
      std::fprintf(
          stderr,
          "overlap-bench: tilewise %s %lldx%lldx%lld: %llu elements differ from own GEMM + NCCL\n",
          to_string(sc_.op), static_cast<long long>(sc_.shape.m),
          static_cast<long long>(sc_.shape.n), static_cast<long long>(sc_.shape.k),
          static_cast<unsigned long long>(*mismatches));
    return Status::success();
  }

  // The pair row of a tile-wise transport's final configuration.
  void emit_pair_row(const char* design, int chunks, const Timing& t, std::uint64_t wrong) {
    sc_.emit(sc_.row(to_string(sc_.op), design, chunks, t)
                 .bytes(collective_bytes(sc_.op, sc_.shape, sc_.env.world(), sc_.bench_case.dtype))
                 .flops(compute_flops(sc_.op, sc_.shape))
                 .busbw_factor(busbw_factor(sc_.coll, sc_.env.world()))
                 .wrong(wrong));
  }

  // What the final round's correctness check found for one configuration.
  struct FinalCheck {
    void* result = nullptr;            // input set 0's result, natural layout
    std::uint64_t wrong = 0;           // against the reference and the sequential pair
    std::uint64_t bit_mismatches = 0;  // against our own GEMM followed by NCCL
  };

  // Correctness of a transport's final configuration: on input set 0, behind poisoned P and
  // R (stale data from the timed runs must not pass), `run_once(set0, result)` runs the
  // design and un-permutes into the pair's result, which the harness checks against the
  // reference and the sequential pair; then the design's waits, and bit for bit against our
  // own GEMM followed by the same NCCL collective.
  template <class Design, class RunOnce>
  Status check_final(Design& d, RunOnce run_once, FinalCheck* out) {
    const PairBuffers set0 = sc_.io.set(0);
    out->result = const_cast<void*>(set0.result(sc_.op));
    OVERLAPSIM_TRY(sc_.io.run_and_check(
        [&]() -> Status {
          OVERLAPSIM_TRY(poison(sc_.p.data(), static_cast<std::size_t>(sc_.shape.m * sc_.shape.n),
                                sc_.compute()));
          if (sc_.r.bytes()) OVERLAPSIM_TRY(poison(sc_.r.data(), sc_.r.bytes() / 2, sc_.compute()));
          return run_once(set0, out->result);
        },
        &out->wrong));
    OVERLAPSIM_TRY(d.check_waits());
    return bitwise_against_own(out->result,
                               static_cast<std::size_t>(d.plan().out_rows * sc_.shape.n),
                               &out->bit_mismatches);
  }

  // A transport's final configuration into the tuning cache.
  Status remember_final(bool copy_engine, const TilewiseCandidate& best, std::vector<int> partition,
                        int comm_sms, std::string wait, const std::string& search) {
    tw::TuningEntry entry;
    entry.key = sc_.cache_key(copy_engine);
    entry.partition = std::move(partition);
    entry.comm_sms = comm_sms;
    entry.wait = std::move(wait);
    entry.time_s = best.measured_s;
    entry.predicted_s = best.predicted_s;
    entry.search = search;
    return sc_.remember(entry);
  }

  Status finish_copy_engine(tw::CopyEngineDesign& d, TilewiseCandidate best,
                            const std::string& search, const Timing& t) {
    best.measured_s = t.median_s;
    // A split last wave sums the split tiles' K in another order, and which tiles it splits
    // follows the design's schedule: the bit check's own GEMM then runs that schedule with the
    // same split (one GEMM; row chunks run several, and keep the plain reference). Allocated
    // between two rendezvous, as every allocation beside NCCL (design.md, the hang).
    std::vector<std::unique_ptr<gemm::OwnGemm>> split_reference;
    if (best.split_k_tail > 1 && best.row_chunks == 1) {
      gemm::SchedulerOptions sched =
          tw::owner_scheduler(d.plan(), sc_.env.world(), sc_.env.rank());
      sched.split_k_tail = best.split_k_tail;
      OVERLAPSIM_TRY(quiesce(*sc_.env.ctx, "tilewise: before the split reference"));
      OVERLAPSIM_TRY(sc_.natural_gemms(sched, &split_reference));
      OVERLAPSIM_TRY(quiesce(*sc_.env.ctx, "tilewise: split reference ready"));
      own_reference_ = split_reference.front().get();
    }
    FinalCheck check;
    const Status checked = check_final(
        d,
        [&](const PairBuffers& set0, void* result) -> Status {
          OVERLAPSIM_TRY(d.run(set0.a, set0.b, sc_.p.data(), sc_.compute(), sc_.comm_stream()));
          return d.unpermute(sc_.p.data(), result, sc_.compute());
        },
        &check);
    own_reference_ = nullptr;
    OVERLAPSIM_TRY(checked);
    emit_pair_row(copy_engine_design(best).c_str(), best.ce_groups, t, check.wrong);
    sc_.reports.detail(sc_, "final", best, search, static_cast<long long>(check.bit_mismatches),
                       -1);
    OVERLAPSIM_TRY(record_timeline(d, best));
    return remember_final(true, best, {best.ce_groups}, 0, copy_engine_wait(best), search);
  }

  Status measure_final(tw::TilewiseDesign& d, TilewiseCandidate best, const std::string& search,
                       const Timing& t) {
    best.measured_s = t.median_s;
    FinalCheck check;
    OVERLAPSIM_TRY(check_final(
        d,
        [&](const PairBuffers& set0, void* result) -> Status {
          OVERLAPSIM_TRY(
              d.run(set0.a, set0.b, sc_.p.data(), sc_.r.data(), sc_.compute(), sc_.comm_stream()));
          return d.unpermute(sc_.p.data(), sc_.r.data(), result, sc_.compute());
        },
        &check));
    emit_pair_row("tilewise", static_cast<int>(best.partition.size()), t, check.wrong);

    std::uint64_t fused_mismatches = 0;
    OVERLAPSIM_TRY(measure_layout_ops(d, check.result, &fused_mismatches));
    sc_.reports.detail(sc_, "final", best, search, static_cast<long long>(check.bit_mismatches),
                       static_cast<long long>(fused_mismatches));
    return remember_final(false, best, best.partition, best.comm_sms, tw::to_string(best.wait),
                          search);
  }

  // Un-permute alone; residual + RMSNorm on the natural result and fused through the
  // remap table (which must agree bit for bit).
  Status measure_layout_ops(tw::TilewiseDesign& d, void* natural_result,
                            std::uint64_t* fused_mismatches) {
    const std::int64_t rows = d.plan().out_rows;
    const auto elems = static_cast<std::size_t>(rows * sc_.shape.n);
    DeviceBuffer residual, weight, out_natural, out_fused;
    OVERLAPSIM_TRY(residual.allocate(elems * 2));
    OVERLAPSIM_TRY(weight.allocate(static_cast<std::size_t>(sc_.shape.n) * 2));
    OVERLAPSIM_TRY(out_natural.allocate(elems * 2));
    OVERLAPSIM_TRY(out_fused.allocate(elems * 2));
    OVERLAPSIM_TRY(fill_random(residual.data(), elems, sc_.bench_case.dtype, sc_.env.seed ^ 0x5E5Du,
                               sc_.compute()));
    OVERLAPSIM_TRY(fill_random(weight.data(), static_cast<std::size_t>(sc_.shape.n),
                               sc_.bench_case.dtype, sc_.env.seed ^ 0x3E16u, sc_.compute()));
    void* scratch = sc_.natural.data();
    Timing t;
    OVERLAPSIM_TRY(time_iterations(
        *sc_.env.ctx, sc_.bench_case.warmup, sc_.bench_case.iterations,
        [&](int) { return d.unpermute(sc_.p.data(), sc_.r.data(), scratch, sc_.compute()); }, &t));
    // bytes: read + write
    sc_.emit(sc_.row("unpermute", "tilewise", 1, t).bytes(static_cast<std::uint64_t>(elems) * 4));

    const tw::TileView natural_view{natural_result, nullptr, rows, sc_.shape.n};
    const tw::TileView fused_view = d.result_view(sc_.p.data(), sc_.r.data());
    constexpr float kEps = 1e-6f;
    for (const bool fused : {false, true}) {
      Timing rt;
      OVERLAPSIM_TRY(time_iterations(
          *sc_.env.ctx, sc_.bench_case.warmup, sc_.bench_case.iterations,
          [&](int) {
            return tw::residual_rmsnorm(
                fused ? fused_view : natural_view, residual.data(), weight.data(), kEps,
                fused ? out_fused.data() : out_natural.data(), sc_.bench_case.dtype, sc_.compute());
          },
          &rt));
      // bytes: x and residual read, out written
      sc_.emit(sc_.row("residual_rmsnorm", fused ? "tilewise_fused" : "natural", 1, rt)
                   .bytes(static_cast<std::uint64_t>(elems) * 6));
    }
    OVERLAPSIM_TRY(wait_stream(sc_.env.ctx->comm, sc_.compute(), "tilewise layout ops"));
    OVERLAPSIM_TRY(count_mismatches(out_natural.data(), out_fused.data(), elems,
                                    sc_.bench_case.dtype, 0.0, 0.0, sc_.compute(),
                                    fused_mismatches));
    return sum_over_ranks(sc_.env, fused_mismatches);
  }

  // Five untimed calls of the chosen configuration with CopyEngineDesign's timeline on; one row
  // per step: where the call's time after the GEMM goes.
  Status record_timeline(tw::CopyEngineDesign& d, const TilewiseCandidate& best) {
    if (sc_.settings.timeline_path.empty()) return Status::success();
    const PairBuffers set0 = sc_.io.set(0);
    std::vector<std::vector<std::pair<std::string, double>>> calls;
    d.set_timeline(true);
    for (int call = 0; call < 5; ++call) {
      std::vector<std::pair<std::string, double>> steps;
      const Status ran = d.run(set0.a, set0.b, sc_.p.data(), sc_.compute(), sc_.comm_stream());
      const Status waited =
          ran.ok ? wait_stream(sc_.env.ctx->comm, sc_.compute(), "tilewise timeline") : ran;
      const Status got = waited.ok ? d.timeline(&steps) : waited;
      if (!got.ok) {
        d.set_timeline(false);
        return got;
      }
      calls.push_back(std::move(steps));
    }
    d.set_timeline(false);
    OVERLAPSIM_TRY(d.check_waits());
    return sc_.reports.add_timeline(sc_, best, calls, sc_.settings.timeline_path);
  }

 private:
  TilewiseShapeContext& sc_;
  VendorReduceScatterFamily vendor_{sc_};
  bool vendor_chosen_ = false;              // the vendor family's best beat the copy-engine choice
  gemm::OwnGemm* own_reference_ = nullptr;  // the bit check's own GEMM when not the plain one
};

}  // namespace

bool tilewise_supports(PairOp op) {
  return op == PairOp::GemmAllReduce || op == PairOp::GemmReduceScatter ||
         op == PairOp::GemmAllToAll;
}

Status run_tilewise_rows(BenchEnv& env, const BenchCase& c, PairOp op, const PairShape& shape,
                         const TilewiseCaseIo& io) {
  const auto skip = [&](const std::string& why) {
    if (env.rank() == 0)
      std::fprintf(stderr, "overlap-bench: %s %lldx%lldx%lld: skipping tilewise: %s\n",
                   to_string(op), static_cast<long long>(shape.m), static_cast<long long>(shape.n),
                   static_cast<long long>(shape.k), why.c_str());
    return Status::success();
  };
  if (!tilewise_supports(op)) return skip("not a GEMM followed by its collective");
  if (auto e = tilewise::shape_error(pair_collective(op), shape.m, shape.n, env.world()))
    return skip(*e);
  // Kept across shapes and cases: per rank, and (the reports) shared by every rank when
  // the caller set them up so (overlap-bench's main does).
  if (!env.tilewise_state) env.tilewise_state = std::make_shared<TilewiseRankState>();
  if (!env.tilewise_reports) env.tilewise_reports = std::make_shared<TilewiseReports>();
  TilewiseShapeContext sc(env, c, op, shape, io, env.tilewise_settings, *env.tilewise_state,
                          *env.tilewise_reports);
  return TilewiseShapeRunner(sc).run();
}

}  // namespace overlapsim::kernels::bench
