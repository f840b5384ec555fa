#include "kernels/bench/tilewise_runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "config/atomic_file.hpp"
#include "kernels/bench/verify.hpp"
#include "kernels/harness/fill.hpp"
#include "kernels/tilewise/group_predictor.hpp"
#include "kernels/tilewise/tilewise_design.hpp"
#include "kernels/tilewise/tuning_cache.hpp"

namespace overlapsim::kernels::bench {
namespace {

namespace tw = overlapsim::kernels::tilewise;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// Settings from the environment, validated once (bad values are input errors).
struct TilewiseSettings {
  std::vector<int> comm_sms;
  std::vector<tw::WaitMode> waits;
  int keep = 6;
  int exhaustive_limit = 16;
  std::string cache_path;
  std::string detail_path;
};

Status read_settings(TilewiseSettings* s) {
  for (const std::string& v : split_commas(env_or("OVERLAPSIM_TILEWISE_COMM_SMS", "16"))) {
    char* end = nullptr;
    const long sms = std::strtol(v.c_str(), &end, 10);
    if (*end != '\0' || sms < 0 || sms > 64)
      return Status::failure("OVERLAPSIM_TILEWISE_COMM_SMS: '" + v +
                             "' is not an SM count in 0..64 (expected e.g. 8,16)");
    s->comm_sms.push_back(static_cast<int>(sms));
  }
  for (const std::string& v : split_commas(env_or("OVERLAPSIM_TILEWISE_WAIT", "kernel,stream_memop"))) {
    auto mode = tw::parse_wait_mode(v);
    if (!mode)
      return Status::failure("OVERLAPSIM_TILEWISE_WAIT: '" + v +
                             "' is not a wait mode (expected kernel and/or stream_memop)");
    s->waits.push_back(*mode);
  }
  if (s->comm_sms.empty() || s->waits.empty())
    return Status::failure("OVERLAPSIM_TILEWISE_COMM_SMS and _WAIT need at least one value");
  s->keep = std::max(1, std::atoi(env_or("OVERLAPSIM_TILEWISE_KEEP", "6").c_str()));
  s->exhaustive_limit = std::max(1, std::atoi(env_or("OVERLAPSIM_TILEWISE_EXHAUSTIVE", "16").c_str()));
  s->cache_path = env_or("OVERLAPSIM_TILEWISE_CACHE", "");
  s->detail_path = env_or("OVERLAPSIM_TILEWISE_DETAIL", "");
  return Status::success();
}

// One tuning cache per rank thread, loaded once and updated identically on every rank
// (each rank's decisions must match, or the ranks would issue different NCCL calls).
thread_local std::optional<tw::TuningCache> t_cache;

// Limited communicators of this rank thread (see comm_for).
thread_local std::map<int, CommHandle>* t_comms = nullptr;

// Detail CSV rows of rank 0, rewritten atomically after every shape.
std::mutex g_detail_mutex;
std::vector<std::string> g_detail_lines;

const char* kDetailHeader =
    "record,gpu,driver,cuda,nccl,dtype,op,m,n,k,world,comm_sms,wait,partition,groups,predicted_s,measured_s,"
    "pred_error,search,bit_mismatches,fused_mismatches,t_own_s,t_own_signal_s";

std::string fmt_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

struct Candidate {
  int comm_sms = 0;
  tw::WaitMode wait = tw::WaitMode::Kernel;
  std::vector<int> partition;
  double predicted_s = 0;
  double measured_s = 0;
};

class TilewiseShapeRunner {
 public:
  TilewiseShapeRunner(BenchEnv& env, const BenchCase& c, PairOp op, const PairShape& shape,
                      const TilewiseCaseIo& io, const TilewiseSettings& settings)
      : env_(env), case_(c), op_(op), coll_(pair_collective(op)), shape_(shape), io_(io),
        settings_(settings), tags_(read_device_tags(env.world())) {}

  Status run() {
    const std::size_t mn = static_cast<std::size_t>(shape_.m * shape_.n);
    OVERLAPSIM_TRY(p_.allocate(mn * 2));
    OVERLAPSIM_TRY(r_.allocate(coll_ == CollectiveOp::AllReduce ? 0 : mn * 2));
    OVERLAPSIM_TRY(natural_.allocate(mn * 2));
    OVERLAPSIM_TRY(natural_out_.allocate(coll_ == CollectiveOp::AllReduce ? 0 : mn * 2));
    OVERLAPSIM_TRY(measure_own_alone());

    tw::TuningKey key{tags_.gpu, to_string(case_.dtype), shape_.m, shape_.n, shape_.k,
                      env_.world(), to_string(coll_)};
    if (!t_cache) {
      t_cache.emplace();
      if (!settings_.cache_path.empty()) OVERLAPSIM_TRY(t_cache->load(settings_.cache_path));
    }
    const std::optional<tw::TuningEntry> cached = t_cache->find(key);
    std::vector<int> sms_list = settings_.comm_sms;
    if (cached) sms_list = {cached->comm_sms};

    // Acceptance 3: remapped stores + signals alone, on every SM (no carve-out).
    if (std::find(settings_.comm_sms.begin(), settings_.comm_sms.end(), 0) ==
        settings_.comm_sms.end())
      OVERLAPSIM_TRY(measure_signal_alone());

    std::optional<Candidate> best;
    std::string search = "cached";
    for (int sms : sms_list) {
      CommHandle* comm = nullptr;
      OVERLAPSIM_TRY(comm_for(sms, &comm));
      tw::PredictorInputs inputs;
      OVERLAPSIM_TRY(measure_inputs(sms, comm, &inputs));
      std::vector<std::vector<int>> partitions;
      std::vector<tw::WaitMode> waits = settings_.waits;
      if (cached) {
        partitions = {cached->partition};
        waits = {*tw::parse_wait_mode(cached->wait)};
      } else {
        bool exhaustive = false;
        partitions = tw::candidate_partitions(inputs, settings_.exhaustive_limit, settings_.keep,
                                              &exhaustive);
        search = exhaustive ? "exhaustive" : "predictive";
      }
      for (tw::WaitMode wait : waits) {
        for (const auto& partition : partitions) {
          Candidate cand{sms, wait, partition, tw::predict_time_s(inputs, partition), 0};
          Timing t;
          OVERLAPSIM_TRY(time_design(cand, comm, std::max(3, case_.warmup / 2),
                                     std::max(8, case_.iterations / 2), &t));
          cand.measured_s = t.median_s;
          detail("candidate", cand, search, -1, -1);
          if (!best || cand.measured_s < best->measured_s) best = cand;
        }
      }
    }
    OVERLAPSIM_TRY(measure_final(*best, search));
    if (env_.rank() == 0) OVERLAPSIM_TRY(write_detail());
    return Status::success();
  }

  cudaStream_t compute() const { return env_.ctx->compute_stream; }
  cudaStream_t comm_stream() const { return env_.ctx->comm_stream; }

  BenchRow row(const std::string& op, const std::string& design, int chunks, const Timing& t) const {
    BenchRow r;
    r.op = op;
    r.design = design;
    r.dtype = to_string(case_.dtype);
    r.m = shape_.m;
    r.n = shape_.n;
    r.k = shape_.k;
    r.chunks = chunks;
    r.time_s = t.median_s;
    r.time_min_s = t.min_s;
    r.time_max_s = t.max_s;
    return r;
  }

  Status comm_for(int sms, CommHandle** out) {
    if (sms == 0) {
      *out = &env_.ctx->comm;
      return Status::success();
    }
    // One limited communicator per SM count for the rank's whole run, never destroyed:
    // finalizing one between shapes hung rank 0 while rank 1 went on to the next shape's
    // collectives on the parent (measured on 2 x H200, NCCL 2.28.9); process exit frees it.
    if (t_comms == nullptr) t_comms = new std::map<int, CommHandle>();
    auto found = t_comms->find(sms);
    if (found == t_comms->end()) {
      CommHandle handle;
      OVERLAPSIM_TRY(tw::make_limited_comm(env_.ctx->comm, sms, &handle));
      found = t_comms->emplace(sms, handle).first;
    }
    *out = &found->second;
    return Status::success();
  }

  tw::TilewiseOptions options_for(const Candidate& cand) const {
    tw::TilewiseOptions o;
    o.group_waves = cand.partition;
    o.wait = cand.wait;
    o.comm_sms = cand.comm_sms;
    o.wait_timeout_s = env_.ctx->comm.timeout_s;
    return o;
  }

  Status prepare_sets(tw::TilewiseDesign& d) {
    for (int s = 0; s < io_.sets; ++s) {
      const PairBuffers b = io_.set(s);
      OVERLAPSIM_TRY(d.prepare(b.a, b.b, p_.data()));
    }
    return Status::success();
  }

  // Own GEMM alone, natural stores on every SM: the GEMM the tile-wise design builds on.
  Status measure_own_alone() {
    std::vector<std::unique_ptr<gemm::OwnGemm>> gemms;
    for (int s = 0; s < io_.sets; ++s) {
      const PairBuffers b = io_.set(s);
      auto g = std::make_unique<gemm::OwnGemm>();
      gemm::GemmArgs args;
      args.m = shape_.m;
      args.n = shape_.n;
      args.k = shape_.k;
      args.dtype = case_.dtype == DType::BF16 ? gemm::DType::kBf16 : gemm::DType::kFp16;
      args.a = b.a;
      args.b = b.b;
      args.c = natural_.data();
      OVERLAPSIM_TRY(g->initialize(args));
      gemms.push_back(std::move(g));
    }
    Timing t;
    OVERLAPSIM_TRY(time_iterations(
        *env_.ctx, case_.warmup, case_.iterations,
        [&](int i) { return gemms[static_cast<std::size_t>(i % io_.sets)]->run(compute()); }, &t));
    t_own_s_ = t.median_s;
    own_set0_ = std::move(gemms.front());
    const std::string key =
        single_op_key("gemm", "own", case_.dtype, PairShape{shape_.m, shape_.n, shape_.k, 0});
    if (!env_.measured.count(key)) {
      env_.measured.insert(key);
      BenchRow r = row("gemm", "own", 1, t);
      r.flops = compute_flops(op_, shape_);
      env_.emit(r);
    }
    return Status::success();
  }

  Status measure_signal_alone() {
    tw::TilewiseDesign d;
    OVERLAPSIM_TRY(d.initialize(&env_.ctx->comm, coll_, shape_.m, shape_.n, shape_.k, case_.dtype,
                                options_for(Candidate{})));
    OVERLAPSIM_TRY(prepare_sets(d));
    Timing t;
    OVERLAPSIM_TRY(time_iterations(
        *env_.ctx, case_.warmup, case_.iterations,
        [&](int i) {
          const PairBuffers b = io_.set(i);
          return d.run_gemm_only(b.a, b.b, p_.data(), compute());
        },
        &t));
    BenchRow r = row("gemm", "own_signal", 0, t);
    r.flops = compute_flops(op_, shape_);
    env_.emit(r);
    return Status::success();
  }

  // One collective call on the first `elems` elements of P (nccl-tests bytes = elems·2).
  Status enqueue_collective(CommHandle& comm, std::int64_t elems, cudaStream_t stream) {
    const auto count = static_cast<std::size_t>(elems);
    const std::size_t per_rank = count / static_cast<std::size_t>(env_.world());
    switch (coll_) {
      case CollectiveOp::AllReduce:
        return all_reduce(comm, p_.data(), p_.data(), count, case_.dtype, stream);
      case CollectiveOp::ReduceScatter:
        return reduce_scatter(comm, p_.data(), r_.data(), per_rank, case_.dtype, stream);
      case CollectiveOp::AllToAll:
        return all_to_all(comm, p_.data(), per_rank, r_.data(), per_rank, per_rank, case_.dtype,
                          stream);
      case CollectiveOp::AllGather: break;
    }
    return Status::failure("tilewise: unsupported collective");
  }

  // Wave time (GEMM with signalling on SMs − sms, alone) and the NCCL curve at the sizes
  // of 1, 2, 4, ... waves and of the whole output.
  Status measure_inputs(int sms, CommHandle* comm, tw::PredictorInputs* in) {
    Candidate per_wave{sms, tw::WaitMode::Kernel, {}, 0, 0};
    tw::TilewiseDesign d;
    OVERLAPSIM_TRY(d.initialize(comm, coll_, shape_.m, shape_.n, shape_.k, case_.dtype,
                                options_for(per_wave)));
    OVERLAPSIM_TRY(prepare_sets(d));
    Timing t;
    OVERLAPSIM_TRY(time_iterations(
        *env_.ctx, case_.warmup, case_.iterations,
        [&](int i) {
          const PairBuffers b = io_.set(i);
          return d.run_gemm_only(b.a, b.b, p_.data(), compute());
        },
        &t));
    t_signal_s_[sms] = t.median_s;
    BenchRow r = row("gemm", "own_signal", sms, t);
    r.flops = compute_flops(op_, shape_);
    env_.emit(r);

    const tw::RemapPlan& plan = d.plan();
    const int waves = d.grid().waves();
    const int blocks = coll_ == CollectiveOp::AllReduce ? 1 : env_.world();
    in->wave_time_s = t.median_s / waves;
    in->wave_bytes.clear();
    for (int g = 0; g < plan.groups(); ++g)
      in->wave_bytes.push_back(2.0 * blocks * plan.group_block_elems[static_cast<std::size_t>(g)]);
    std::vector<int> sizes;
    for (int w = 1; w < waves; w *= 2) sizes.push_back(w);
    sizes.push_back(waves);
    for (int w : sizes) {
      std::int64_t elems = 0;
      for (int g = 0; g < w; ++g) elems += blocks * plan.group_block_elems[static_cast<std::size_t>(g)];
      if (elems == 0) continue;
      Timing ct;
      OVERLAPSIM_TRY(time_iterations(*env_.ctx, 3, std::max(8, case_.iterations / 2),
                                     [&](int) { return enqueue_collective(*comm, elems, compute()); },
                                     &ct));
      in->comm.add_point(2.0 * elems, ct.median_s);
      BenchRow cr = row(to_string(coll_), "nccl_tilewise", sms, ct);
      cr.bytes = static_cast<std::uint64_t>(2 * elems);
      cr.busbw_factor = busbw_factor(coll_, env_.world());
      env_.emit(cr);
    }
    return Status::success();
  }

  Status time_design(const Candidate& cand, CommHandle* comm, int warmup, int iterations,
                     Timing* t) {
    tw::TilewiseDesign d;
    OVERLAPSIM_TRY(d.initialize(comm, coll_, shape_.m, shape_.n, shape_.k, case_.dtype,
                                options_for(cand)));
    OVERLAPSIM_TRY(prepare_sets(d));
    OVERLAPSIM_TRY(time_iterations(
        *env_.ctx, warmup, iterations,
        [&](int i) {
          const PairBuffers b = io_.set(i);
          return d.run(b.a, b.b, p_.data(), r_.data(), compute(), comm_stream());
        },
        t));
    return d.check_waits();
  }

  Status measure_final(Candidate best, const std::string& search) {
    CommHandle* comm = nullptr;
    OVERLAPSIM_TRY(comm_for(best.comm_sms, &comm));
    tw::TilewiseDesign d;
    OVERLAPSIM_TRY(d.initialize(comm, coll_, shape_.m, shape_.n, shape_.k, case_.dtype,
                                options_for(best)));
    OVERLAPSIM_TRY(prepare_sets(d));
    Timing t;
    OVERLAPSIM_TRY(time_iterations(
        *env_.ctx, case_.warmup, case_.iterations,
        [&](int i) {
          const PairBuffers b = io_.set(i);
          return d.run(b.a, b.b, p_.data(), r_.data(), compute(), comm_stream());
        },
        &t));
    best.measured_s = t.median_s;

    // Correctness: reference and sequential (through the harness), then bit for bit
    // against our own GEMM followed by the same NCCL collective.
    const PairBuffers set0 = io_.set(0);
    void* result = const_cast<void*>(set0.result(op_));
    std::uint64_t wrong = 0;
    OVERLAPSIM_TRY(io_.run_and_check(
        [&]() -> Status {
          OVERLAPSIM_TRY(poison(p_.data(), static_cast<std::size_t>(shape_.m * shape_.n), compute()));
          if (r_.bytes()) OVERLAPSIM_TRY(poison(r_.data(), r_.bytes() / 2, compute()));
          OVERLAPSIM_TRY(d.run(set0.a, set0.b, p_.data(), r_.data(), compute(), comm_stream()));
          return d.unpermute(p_.data(), r_.data(), result, compute());
        },
        &wrong));
    OVERLAPSIM_TRY(d.check_waits());
    const std::size_t out_elems = static_cast<std::size_t>(d.plan().out_rows * shape_.n);
    OVERLAPSIM_TRY(own_set0_->run(compute()));
    const std::int64_t mn = shape_.m * shape_.n;
    void* own_result = natural_.data();
    {
      const auto count = static_cast<std::size_t>(mn);
      const std::size_t per_rank = count / static_cast<std::size_t>(env_.world());
      CommHandle& parent = env_.ctx->comm;
      if (coll_ == CollectiveOp::AllReduce) {
        OVERLAPSIM_TRY(all_reduce(parent, natural_.data(), natural_.data(), count, case_.dtype, compute()));
      } else if (coll_ == CollectiveOp::ReduceScatter) {
        OVERLAPSIM_TRY(reduce_scatter(parent, natural_.data(), natural_out_.data(), per_rank,
                                      case_.dtype, compute()));
        own_result = natural_out_.data();
      } else {
        OVERLAPSIM_TRY(all_to_all(parent, natural_.data(), per_rank, natural_out_.data(), per_rank,
                                  per_rank, case_.dtype, compute()));
        own_result = natural_out_.data();
      }
    }
    OVERLAPSIM_TRY(wait_stream(env_.ctx->comm, compute(), "tilewise bitwise check"));
    std::uint64_t bit_mismatches = 0;
    OVERLAPSIM_TRY(count_mismatches(result, own_result, out_elems, case_.dtype, 0.0, 0.0,
                                    compute(), &bit_mismatches));
    OVERLAPSIM_TRY(sum_over_ranks(env_, &bit_mismatches));
    if (bit_mismatches != 0 && env_.rank() == 0)
      std::fprintf(stderr, "overlap-bench: tilewise %s %lldx%lldx%lld: %llu elements differ from own GEMM + NCCL\n",
                   to_string(op_), static_cast<long long>(shape_.m),
                   static_cast<long long>(shape_.n), static_cast<long long>(shape_.k),
                   static_cast<unsigned long long>(bit_mismatches));

    BenchRow r = row(to_string(op_), "tilewise", static_cast<int>(best.partition.size()), t);
    r.flops = compute_flops(op_, shape_);
    r.bytes = collective_bytes(op_, shape_, env_.world(), case_.dtype);
    r.busbw_factor = busbw_factor(coll_, env_.world());
    r.wrong = wrong;
    env_.emit(r);

    std::uint64_t fused_mismatches = 0;
    OVERLAPSIM_TRY(measure_layout_ops(d, result, &fused_mismatches));
    detail("final", best, search, static_cast<long long>(bit_mismatches),
           static_cast<long long>(fused_mismatches));

    tw::TuningEntry entry;
    entry.key = {tags_.gpu, to_string(case_.dtype), shape_.m, shape_.n, shape_.k, env_.world(),
                 to_string(coll_)};
    entry.partition = best.partition;
    entry.comm_sms = best.comm_sms;
    entry.wait = tw::to_string(best.wait);
    entry.time_s = best.measured_s;
    entry.predicted_s = best.predicted_s;
    entry.search = search;
    t_cache->put(entry);
    if (env_.rank() == 0 && !settings_.cache_path.empty())
      OVERLAPSIM_TRY(t_cache->save(settings_.cache_path));
    return Status::success();
  }

  // Un-permute alone; residual + RMSNorm on the natural result and fused through the
  // remap table (which must agree bit for bit).
  Status measure_layout_ops(tw::TilewiseDesign& d, void* natural_result,
                            std::uint64_t* fused_mismatches) {
    const std::int64_t rows = d.plan().out_rows;
    const auto elems = static_cast<std::size_t>(rows * shape_.n);
    DeviceBuffer residual, weight, out_natural, out_fused;
    OVERLAPSIM_TRY(residual.allocate(elems * 2));
    OVERLAPSIM_TRY(weight.allocate(static_cast<std::size_t>(shape_.n) * 2));
    OVERLAPSIM_TRY(out_natural.allocate(elems * 2));
    OVERLAPSIM_TRY(out_fused.allocate(elems * 2));
    OVERLAPSIM_TRY(fill_random(residual.data(), elems, case_.dtype, env_.seed ^ 0x5E5Du, compute()));
    OVERLAPSIM_TRY(fill_random(weight.data(), static_cast<std::size_t>(shape_.n), case_.dtype,
                               env_.seed ^ 0x3E16u, compute()));
    void* scratch = natural_.data();
    Timing t;
    OVERLAPSIM_TRY(time_iterations(*env_.ctx, case_.warmup, case_.iterations,
                                   [&](int) { return d.unpermute(p_.data(), r_.data(), scratch, compute()); },
                                   &t));
    BenchRow u = row("unpermute", "tilewise", 1, t);
    u.bytes = static_cast<std::uint64_t>(elems) * 4;  // read + write
    env_.emit(u);

    const tw::TileView natural_view{natural_result, nullptr, rows, shape_.n};
    const tw::TileView fused_view = d.result_view(p_.data(), r_.data());
    constexpr float kEps = 1e-6f;
    for (const bool fused : {false, true}) {
      Timing rt;
      OVERLAPSIM_TRY(time_iterations(
          *env_.ctx, case_.warmup, case_.iterations,
          [&](int) {
            return tw::residual_rmsnorm(fused ? fused_view : natural_view, residual.data(),
                                        weight.data(), kEps,
                                        fused ? out_fused.data() : out_natural.data(),
                                        case_.dtype, compute());
          },
          &rt));
      BenchRow rr = row("residual_rmsnorm", fused ? "tilewise_fused" : "natural", 1, rt);
      rr.bytes = static_cast<std::uint64_t>(elems) * 6;  // x, residual read; out written
      env_.emit(rr);
    }
    OVERLAPSIM_TRY(wait_stream(env_.ctx->comm, compute(), "tilewise layout ops"));
    OVERLAPSIM_TRY(count_mismatches(out_natural.data(), out_fused.data(), elems, case_.dtype, 0.0,
                                    0.0, compute(), fused_mismatches));
    return sum_over_ranks(env_, fused_mismatches);
  }

  void detail(const char* record, const Candidate& cand, const std::string& search,
              long long bit_mismatches, long long fused_mismatches) {
    if (env_.rank() != 0) return;
    const double error =
        cand.measured_s > 0 ? (cand.predicted_s - cand.measured_s) / cand.measured_s : 0;
    const auto signal = t_signal_s_.find(cand.comm_sms);
    std::string line = std::string(record) + "," + tags_.gpu + "," + tags_.driver + "," +
                       tags_.cuda + "," + tags_.nccl + "," + to_string(case_.dtype) + "," +
                       to_string(op_) + "," + std::to_string(shape_.m) + "," +
                       std::to_string(shape_.n) + "," + std::to_string(shape_.k) + "," +
                       std::to_string(env_.world()) + "," + std::to_string(cand.comm_sms) + "," +
                       tw::to_string(cand.wait) + "," + tw::partition_string(cand.partition) + "," +
                       std::to_string(cand.partition.size()) + "," + fmt_double(cand.predicted_s) +
                       "," + fmt_double(cand.measured_s) + "," + fmt_double(error) + "," + search +
                       "," + (bit_mismatches < 0 ? "" : std::to_string(bit_mismatches)) + "," +
                       (fused_mismatches < 0 ? "" : std::to_string(fused_mismatches)) + "," +
                       fmt_double(t_own_s_) + "," +
                       (signal == t_signal_s_.end() ? "" : fmt_double(signal->second));
    std::lock_guard<std::mutex> lock(g_detail_mutex);
    g_detail_lines.push_back(line);
  }

  Status write_detail() {
    if (settings_.detail_path.empty()) return Status::success();
    std::string text = std::string(kDetailHeader) + "\n";
    {
      std::lock_guard<std::mutex> lock(g_detail_mutex);
      for (const auto& l : g_detail_lines) text += l + "\n";
    }
    try {
      config::write_file_atomic(settings_.detail_path, text);
    } catch (const std::exception& e) {
      return Status::failure(e.what());
    }
    return Status::success();
  }

  BenchEnv& env_;
  const BenchCase& case_;
  PairOp op_;
  CollectiveOp coll_;
  PairShape shape_;
  const TilewiseCaseIo& io_;
  const TilewiseSettings& settings_;
  DeviceTags tags_;
  DeviceBuffer p_, r_, natural_, natural_out_;
  std::unique_ptr<gemm::OwnGemm> own_set0_;
  double t_own_s_ = 0;
  std::map<int, double> t_signal_s_;
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
                   to_string(op), static_cast<long long>(shape.m),
                   static_cast<long long>(shape.n), static_cast<long long>(shape.k), why.c_str());
    return Status::success();
  };
  if (!tilewise_supports(op)) return skip("not a GEMM followed by its collective");
  if (auto e = tilewise::shape_error(pair_collective(op), shape.m, shape.n, env.world())) return skip(*e);
  TilewiseSettings settings;
  OVERLAPSIM_TRY(read_settings(&settings));
  TilewiseShapeRunner runner(env, c, op, shape, io, settings);
  return runner.run();
}

}  // namespace overlapsim::kernels::bench
