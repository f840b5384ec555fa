#include "kernels/bench/tilewise_measure.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/harness/fill.hpp"
#include "kernels/tilewise/peer_memory.hpp"
#include "kernels/tilewise/signal_wait.hpp"
#include "kernels/tilewise/tail_exchange.hpp"

namespace overlapsim::kernels::bench {
namespace {

// One point of a peer-copy curve: `issue` (every rank at once) timed like the transport's
// calls, added to `curve` and emitted as a peer_copy row of `design`.
Status time_peer_copy(TilewiseShapeContext& sc, const char* design, std::size_t bytes,
                      tw::CommCurve* curve, const std::function<Status()>& issue) {
  Timing t;
  OVERLAPSIM_TRY(time_iterations(
      *sc.env.ctx, 3, std::max(8, sc.bench_case.iterations / 2), [&](int) { return issue(); }, &t));
  curve->add_point(static_cast<double>(bytes), t.median_s);
  sc.emit(sc.row("peer_copy", design, 1, t).shape(0, 0, 0).bytes(bytes));
  return Status::success();
}

// One collective call on the first `elems` elements of P (nccl-tests bytes = elems·2).
Status enqueue_collective(TilewiseShapeContext& sc, CommHandle& comm, std::int64_t elems,
                          cudaStream_t stream) {
  const auto count = static_cast<std::size_t>(elems);
  const std::size_t per_rank = count / static_cast<std::size_t>(sc.env.world());
  switch (sc.coll) {
    case CollectiveOp::AllReduce:
      return all_reduce(comm, sc.p.data(), sc.p.data(), count, sc.bench_case.dtype, stream);
    case CollectiveOp::ReduceScatter:
      return reduce_scatter(comm, sc.p.data(), sc.r.data(), per_rank, sc.bench_case.dtype, stream);
    case CollectiveOp::AllToAll:
      return all_to_all(comm, sc.p.data(), per_rank, sc.r.data(), per_rank, per_rank,
                        sc.bench_case.dtype, stream);
    case CollectiveOp::AllGather:
      break;
  }
  return Status::failure("tilewise: unsupported collective");
}

}  // namespace

Status measure_own_alone(TilewiseShapeContext& sc) {
  std::vector<std::unique_ptr<gemm::OwnGemm>> gemms;
  OVERLAPSIM_TRY(sc.natural_gemms({}, &gemms));
  Timing t;
  OVERLAPSIM_TRY(time_iterations(
      *sc.env.ctx, sc.bench_case.warmup, sc.bench_case.iterations,
      [&](int i) { return gemms[static_cast<std::size_t>(i % sc.io.sets)]->run(sc.compute()); },
      &t));
  sc.t_own_s = t.median_s;
  sc.own_gemms = std::move(gemms);
  const std::string key = single_op_key("gemm", "own", sc.bench_case.dtype,
                                        PairShape{sc.shape.m, sc.shape.n, sc.shape.k, 0});
  if (!sc.env.measured.count(key)) {
    sc.env.measured.insert(key);
    sc.emit(sc.row("gemm", "own", 1, t).flops(compute_flops(sc.op, sc.shape)));
  }
  return Status::success();
}

Status measure_signal_interleaved(TilewiseShapeContext& sc) {
  tw::TilewiseDesign d;
  tw::CopyEngineDesign ce;
  tw::CopyEngineDesign ce_gpu;
  std::vector<EnqueueIteration> variants{[&](int i) {
    return sc.own_gemms[static_cast<std::size_t>(i % sc.io.sets)]->run(sc.compute());
  }};
  std::vector<std::string> names{"own_interleaved"};
  std::vector<std::unique_ptr<gemm::OwnGemm>> v2;
  {
    gemm::SchedulerOptions sched;
    sched.cluster_m = 1;
    sched.vector_stores = false;
    OVERLAPSIM_TRY(sc.natural_gemms(sched, &v2));
    variants.push_back(
        [&](int i) { return v2[static_cast<std::size_t>(i % sc.io.sets)]->run(sc.compute()); });
    names.push_back("own_v2_interleaved");
  }
  if (sc.settings.nccl) {
    OVERLAPSIM_TRY(d.initialize(&sc.env.ctx->comm, sc.coll, sc.shape.m, sc.shape.n, sc.shape.k,
                                sc.bench_case.dtype, sc.options_for(TilewiseCandidate{})));
    OVERLAPSIM_TRY(sc.prepare_sets(d));
    variants.push_back([&](int i) {
      const PairBuffers b = sc.io.set(i);
      return d.run_gemm_only(b.a, b.b, sc.p.data(), sc.compute());
    });
    names.push_back("own_signal");
  }
  if (sc.ce_ok) {
    // The copy-engine GEMM with its signals at system and at GPU scope.
    for (const bool system_scope : {true, false}) {
      tw::CopyEngineDesign* design = system_scope ? &ce : &ce_gpu;
      tw::CopyEngineOptions options = sc.copy_engine_options(1);
      options.system_scope_signal = system_scope;
      OVERLAPSIM_TRY(design->initialize(&sc.env.ctx->comm, sc.coll, sc.shape.m, sc.shape.n,
                                        sc.shape.k, sc.bench_case.dtype, options));
      variants.push_back([&sc, design](int i) {
        const PairBuffers b = sc.io.set(i);
        return design->run_gemm_only(b.a, b.b, sc.p.data(), sc.compute());
      });
      names.push_back(system_scope ? "own_signal_ce" : "own_signal_ce_gpu");
    }
  }
  std::vector<Timing> timings;
  OVERLAPSIM_TRY(time_interleaved(*sc.env.ctx, sc.bench_case.warmup, sc.bench_case.iterations,
                                  variants, EnqueueIteration{}, &timings));
  double t_signal_ce_gpu_s = 0;
  for (std::size_t v = 0; v < variants.size(); ++v) {
    sc.emit(sc.row("gemm", names[v], 0, timings[v]).flops(compute_flops(sc.op, sc.shape)));
    if (names[v] == "own_signal") sc.t_signal_s[0] = timings[v].median_s;
    if (names[v] == "own_signal_ce") sc.t_signal_ce_s = timings[v].median_s;
    if (names[v] == "own_signal_ce_gpu") t_signal_ce_gpu_s = timings[v].median_s;
  }
  // The copy-engine layout's signal scope for this shape: the faster of the two in this
  // loop (both are correct here: docs/kernels/design.md "Signal scope"; which is cheaper differs
  // by chip, 4096³ measured +1.2 % system / +3.1 % GPU on H200, +5.3 % / +1.6 % on H100).
  // Every rank decides alike: the timings are the max over ranks.
  sc.ce_system_scope = !(t_signal_ce_gpu_s > 0 && t_signal_ce_gpu_s < sc.t_signal_ce_s);
  if (!sc.ce_system_scope) sc.t_signal_ce_s = t_signal_ce_gpu_s;
  return quiesce(*sc.env.ctx, "tilewise: signal loop done");
}

Status measure_copy_curve(TilewiseShapeContext& sc) {
  if (sc.state.copy_curve) return Status::success();
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  const std::vector<std::size_t> sizes = {kMiB / 4,  kMiB,      4 * kMiB,
                                          16 * kMiB, 64 * kMiB, 256 * kMiB};
  DeviceBuffer src, dst;
  OVERLAPSIM_TRY(src.allocate(sizes.back()));
  OVERLAPSIM_TRY(dst.allocate(sizes.back()));
  OVERLAPSIM_TRY(fill_random(src.data(), sizes.back() / 2, sc.bench_case.dtype,
                             sc.env.seed ^ 0xC0B1u, sc.compute()));
  // The copies go where the transport's go: a peer pointer, or across processes (MPI
  // mode) the peer's buffer mapped here by IPC.
  tw::PeerLinks links;
  OVERLAPSIM_TRY(tw::comm_peer_links(sc.env.ctx->comm, &links));
  tw::PeerMemory peers(std::move(links));
  std::vector<std::vector<void*>> all;
  OVERLAPSIM_TRY(peers.share({dst.data()}, &all));
  void* to = all[static_cast<std::size_t>((sc.env.rank() + 1) % sc.env.world())][0];
  tw::CommCurve curve;
  for (std::size_t bytes : sizes) {
    OVERLAPSIM_TRY(time_peer_copy(sc, "copy_engine", bytes, &curve, [&]() -> Status {
      CUDA_CHECK(cudaMemcpyAsync(to, src.data(), bytes, cudaMemcpyDeviceToDevice, sc.compute()));
      return Status::success();
    }));
  }
  // A group's copy as the transport issues it: the copy, the flag write into the peer,
  // the next group's counter wait (here satisfied) and reset. Less the copy alone at the
  // same size, that is what the predictor adds per group (copy_engine_predictor.hpp).
  {
    constexpr std::size_t kOpsBytes = kMiB;
    DeviceBuffer word;
    OVERLAPSIM_TRY(word.allocate(sizeof(std::uint32_t)));
    CUDA_CHECK(cudaMemsetAsync(word.data(), 0, sizeof(std::uint32_t), sc.compute()));
    auto* peer_word = static_cast<std::uint32_t*>(to);
    auto* local_word = word.as<std::uint32_t>();
    // A driver that refuses stream writes to peer memory (the design then sends its
    // flags by copy) leaves the cost unmeasured and 0 on every rank alike.
    std::vector<double> refused{tw::enqueue_write_value(peer_word, 0, sc.compute()).ok ? 0.0 : 1.0};
    OVERLAPSIM_TRY(allreduce_host(sc.env.ctx->comm, sc.compute(), refused, ncclMax));
    if (refused[0] != 0) {
      std::fprintf(stderr,
                   "overlap-bench: stream writes to peer memory refused; the predictor's "
                   "per-group stream cost is left at 0\n");
    } else {
      Timing t;
      OVERLAPSIM_TRY(time_iterations(
          *sc.env.ctx, 3, std::max(8, sc.bench_case.iterations / 2),
          [&](int i) -> Status {
            CUDA_CHECK(
                cudaMemcpyAsync(to, src.data(), kOpsBytes, cudaMemcpyDeviceToDevice, sc.compute()));
            OVERLAPSIM_TRY(
                tw::enqueue_write_value(peer_word, static_cast<std::uint32_t>(i), sc.compute()));
            OVERLAPSIM_TRY(tw::enqueue_wait_geq(local_word, 0, sc.compute()));
            return tw::enqueue_write_value(local_word, 0, sc.compute());
          },
          &t));
      sc.state.stream_ops_s =
          std::max(0.0, t.median_s - curve.time_s(static_cast<double>(kOpsBytes)));
      sc.emit(
          sc.row("peer_copy", "copy_engine_with_stream_ops", 1, t).shape(0, 0, 0).bytes(kOpsBytes));
    }
  }
  // Every rank's copies into the others' dst are done before any dst goes away (across
  // processes quiesce() only drains this rank).
  OVERLAPSIM_TRY(peers.barrier());
  OVERLAPSIM_TRY(quiesce(*sc.env.ctx, "tilewise: copy curve done"));
  sc.state.copy_curve = curve;
  return Status::success();
}

Status measure_tail_curve(TilewiseShapeContext& sc) {
  if (sc.state.tail_curve) return Status::success();
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  const std::vector<std::size_t> sizes = {kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB};
  const int world = sc.env.world(), rank = sc.env.rank();
  if (world < 2 || world - 1 > tw::kTailMaxPeers)
    return Status::failure("tilewise: the tail kernel's curve needs 2.." +
                           std::to_string(tw::kTailMaxPeers + 1) + " ranks");
  DeviceBuffer src, dst, flags;
  OVERLAPSIM_TRY(src.allocate(sizes.back()));
  OVERLAPSIM_TRY(dst.allocate(sizes.back() * static_cast<std::size_t>(world)));
  OVERLAPSIM_TRY(
      flags.allocate(static_cast<std::size_t>(world) * tw::kTailSlices * sizeof(std::uint32_t)));
  CUDA_CHECK(cudaMemsetAsync(flags.data(), 0, flags.bytes(), sc.compute()));
  OVERLAPSIM_TRY(fill_random(src.data(), sizes.back() / 2, sc.bench_case.dtype,
                             sc.env.seed ^ 0x7A11u, sc.compute()));
  CUDA_CHECK(cudaStreamSynchronize(sc.compute()));
  tw::PeerLinks links;
  OVERLAPSIM_TRY(tw::comm_peer_links(sc.env.ctx->comm, &links));
  tw::PeerMemory peers(std::move(links));
  std::vector<std::vector<void*>> all;
  OVERLAPSIM_TRY(peers.share({dst.data(), flags.data()}, &all));
  int sms = 0, device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  DeviceBuffer timed_out;
  OVERLAPSIM_TRY(timed_out.allocate(sizeof(int)));
  CUDA_CHECK(cudaMemsetAsync(timed_out.data(), 0, sizeof(int), sc.compute()));
  std::uint32_t epoch = 0;  // every rank makes the same calls, so epochs agree
  tw::CommCurve curve;
  for (std::size_t bytes : sizes) {
    tw::TailExchangeArgs t;
    t.src = src.as<char>();
    t.bytes = bytes;
    tw::set_tail_peers(
        world, rank,
        [&](int d) {
          return static_cast<char*>(all[static_cast<std::size_t>(d)][0]) +
                 static_cast<std::size_t>(rank) * sizes.back();
        },
        [&](int d) { return static_cast<std::uint32_t*>(all[static_cast<std::size_t>(d)][1]); },
        flags.as<std::uint32_t>(), &t);
    t.grid = std::min(tw::kTailSlices, sms);
    t.timeout_s = sc.env.ctx->comm.timeout_s;
    t.timed_out = timed_out.as<int>();
    OVERLAPSIM_TRY(time_peer_copy(sc, "tail_kernel", bytes, &curve, [&]() -> Status {
      t.epoch = ++epoch;
      return tw::launch_tail_exchange(t, sc.compute());
    }));
  }
  int flag = 0;
  CUDA_CHECK(cudaMemcpy(&flag, timed_out.data(), sizeof flag, cudaMemcpyDeviceToHost));
  if (flag != 0) return Status::failure("tilewise: the tail kernel's curve timed out waiting");
  // Every rank's stores into the others' buffers are done before any buffer goes away.
  OVERLAPSIM_TRY(peers.barrier());
  OVERLAPSIM_TRY(quiesce(*sc.env.ctx, "tilewise: tail curve done"));
  sc.state.tail_curve = curve;
  return Status::success();
}

Status measure_inputs(TilewiseShapeContext& sc, int sms, CommHandle* comm,
                      tw::PredictorInputs* in) {
  TilewiseCandidate per_wave{sms, tw::WaitMode::Kernel, {}, 0, 0};
  tw::TilewiseDesign d;
  OVERLAPSIM_TRY(d.initialize(comm, sc.coll, sc.shape.m, sc.shape.n, sc.shape.k,
                              sc.bench_case.dtype, sc.options_for(per_wave)));
  OVERLAPSIM_TRY(sc.prepare_sets(d));
  Timing t;
  OVERLAPSIM_TRY(time_iterations(
      *sc.env.ctx, sc.bench_case.warmup, sc.bench_case.iterations,
      [&](int i) {
        const PairBuffers b = sc.io.set(i);
        return d.run_gemm_only(b.a, b.b, sc.p.data(), sc.compute());
      },
      &t));
  sc.t_signal_s[sms] = t.median_s;
  sc.emit(sc.row("gemm", "own_signal", sms, t).flops(compute_flops(sc.op, sc.shape)));

  const tw::RemapPlan& plan = d.plan();
  const int waves = d.grid().waves();
  const int blocks = sc.coll == CollectiveOp::AllReduce ? 1 : sc.env.world();
  in->wave_time_s = t.median_s / waves;
  in->wave_bytes.clear();
  for (int g = 0; g < plan.groups(); ++g)
    in->wave_bytes.push_back(2.0 * blocks * plan.group_block_elems[static_cast<std::size_t>(g)]);
  std::vector<int> sizes;
  for (int w = 1; w < waves; w *= 2) sizes.push_back(w);
  sizes.push_back(waves);
  for (int w : sizes) {
    std::int64_t elems = 0;
    for (int g = 0; g < w; ++g)
      elems += blocks * plan.group_block_elems[static_cast<std::size_t>(g)];
    if (elems == 0) continue;
    Timing ct;
    OVERLAPSIM_TRY(time_iterations(
        *sc.env.ctx, 3, std::max(8, sc.bench_case.iterations / 2),
        [&](int) { return enqueue_collective(sc, *comm, elems, sc.compute()); }, &ct));
    in->comm.add_point(2.0 * elems, ct.median_s);
    sc.emit(sc.row(to_string(sc.coll), "nccl_tilewise", sms, ct)
                .bytes(static_cast<std::uint64_t>(2 * elems))
                .busbw_factor(busbw_factor(sc.coll, sc.env.world())));
  }
  return Status::success();
}

}  // namespace overlapsim::kernels::bench
