#include "kernels/bench/vendor_reduce_scatter_runner.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace overlapsim::kernels::bench {

Status VendorReduceScatterFamily::search() {
  if (sc_.op != PairOp::GemmReduceScatter) return Status::success();
  // As search_copy_engine times its candidates.
  const int warmup = std::max(3, sc_.bench_case.warmup / 2);
  const int iterations = std::max(8, sc_.bench_case.iterations / 2);
  for (const int chunks : sc_.settings.vendor_chunks) {
    tw::VendorReduceScatterOptions o;
    o.chunks = chunks;
    if (!tw::VendorReduceScatterDesign::can_implement(sc_.shape.m, sc_.shape.n, sc_.shape.k,
                                                      sc_.env.world(), o)
             .ok)
      continue;
    // Every allocation between two rendezvous (design.md, the hang's mechanism).
    OVERLAPSIM_TRY(quiesce(*sc_.env.ctx, "vendor reducescatter: before allocating"));
    auto d = std::make_unique<tw::VendorReduceScatterDesign>();
    OVERLAPSIM_TRY(d->initialize(&sc_.env.ctx->comm, sc_.shape.m, sc_.shape.n, sc_.shape.k,
                                 sc_.bench_case.dtype, o));
    OVERLAPSIM_TRY(quiesce(*sc_.env.ctx, "vendor reducescatter: candidate ready"));
    tw::VendorReduceScatterDesign* raw = d.get();
    Timing t;
    OVERLAPSIM_TRY(time_iterations(
        *sc_.env.ctx, warmup, iterations,
        [&](int i) {
          const PairBuffers b = sc_.io.set(i);
          return raw->run(b.a, b.b, sc_.r.data(), sc_.compute(), sc_.comm_stream());
        },
        &t));
    if (sc_.env.rank() == 0)
      std::fprintf(stderr,
                   "overlap-bench: rs_vendor_candidate %lldx%lldx%lld %s chunks %d: %.1f us\n",
                   static_cast<long long>(sc_.shape.m), static_cast<long long>(sc_.shape.n),
                   static_cast<long long>(sc_.shape.k), kDesign, chunks, 1e6 * t.median_s);
    if (!design_ || t.median_s < search_s_) {
      OVERLAPSIM_TRY(quiesce(*sc_.env.ctx, "vendor reducescatter: before freeing"));
      design_ = std::move(d);
      search_s_ = t.median_s;
      chunks_ = chunks;
    }
    OVERLAPSIM_TRY(quiesce(*sc_.env.ctx, "vendor reducescatter: candidate done"));
  }
  return Status::success();
}

Status VendorReduceScatterFamily::run(int i) {
  const PairBuffers b = sc_.io.set(i);
  return design_->run(b.a, b.b, sc_.r.data(), sc_.compute(), sc_.comm_stream());
}

Status VendorReduceScatterFamily::check(std::uint64_t* wrong) {
  const PairBuffers set0 = sc_.io.set(0);
  void* result = const_cast<void*>(set0.result(sc_.op));
  return sc_.io.run_and_check(
      [&]() { return design_->run(set0.a, set0.b, result, sc_.compute(), sc_.comm_stream()); },
      wrong);
}

}  // namespace overlapsim::kernels::bench
