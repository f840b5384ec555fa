#include "kernels/bench/tilewise_runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
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
#include "kernels/tilewise/owner_design.hpp"
#include "kernels/tilewise/owner_predictor.hpp"
#include "kernels/tilewise/signal_wait.hpp"
#include "kernels/tilewise/tail_exchange.hpp"
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
  std::string timeline_path;  // OVERLAPSIM_TILEWISE_TIMELINE: the chosen copy-engine call's steps
  bool nccl = true;           // transport nccl (tilewise_design.hpp)
  bool copy_engine = true;    // transport copy_engine (owner_design.hpp)
  std::vector<int> ce_groups;
  // All-reduce phase 2 modes of the copy-engine transport the tuner may time
  // (OwnerOptions::phase2; the epilogue's needs 2 ranks).
  std::vector<tw::OwnerPhase2> phase2_modes;
};

// `var` (default "a,b"): a comma list of a and/or b; sets *chose_a and *chose_b. Any
// other value, or neither, is an input error naming the variable.
Status read_either_or_both(const char* var, const std::string& a, const std::string& b,
                           const std::string& value_noun, const std::string& none_noun,
                           bool* chose_a, bool* chose_b) {
  *chose_a = *chose_b = false;
  for (const std::string& v : split_commas(env_or(var, a + "," + b))) {
    if (v == a) {
      *chose_a = true;
    } else if (v == b) {
      *chose_b = true;
    } else {
      return Status::failure(std::string(var) + ": '" + v + "' is not a " + value_noun +
                             " (expected " + a + " and/or " + b + ")");
    }
  }
  if (!*chose_a && !*chose_b)
    return Status::failure(std::string(var) + " needs at least one " + none_noun);
  return Status::success();
}

Status read_settings(TilewiseSettings* s) {
  for (const std::string& v : split_commas(env_or("OVERLAPSIM_TILEWISE_COMM_SMS", "16"))) {
    char* end = nullptr;
    const long sms = std::strtol(v.c_str(), &end, 10);
    if (*end != '\0' || sms < 0 || sms > 64)
      return Status::failure("OVERLAPSIM_TILEWISE_COMM_SMS: '" + v +
                             "' is not an SM count in 0..64 (expected e.g. 8,16)");
    s->comm_sms.push_back(static_cast<int>(sms));
  }
  for (const std::string& v :
       split_commas(env_or("OVERLAPSIM_TILEWISE_WAIT", "kernel,stream_memop"))) {
    auto mode = tw::parse_wait_mode(v);
    if (!mode)
      return Status::failure("OVERLAPSIM_TILEWISE_WAIT: '" + v +
                             "' is not a wait mode (expected kernel and/or stream_memop)");
    s->waits.push_back(*mode);
  }
  if (s->comm_sms.empty() || s->waits.empty())
    return Status::failure("OVERLAPSIM_TILEWISE_COMM_SMS and _WAIT need at least one value");
  s->keep = std::max(1, std::atoi(env_or("OVERLAPSIM_TILEWISE_KEEP", "6").c_str()));
  s->exhaustive_limit =
      std::max(1, std::atoi(env_or("OVERLAPSIM_TILEWISE_EXHAUSTIVE", "16").c_str()));
  OVERLAPSIM_TRY(read_either_or_both("OVERLAPSIM_TILEWISE_TRANSPORT", "nccl", "copy_engine",
                                     "transport", "transport", &s->nccl, &s->copy_engine));
  for (const std::string& v : split_commas(env_or("OVERLAPSIM_TILEWISE_CE_GROUPS", "2,4,8,16"))) {
    char* end = nullptr;
    const long g = std::strtol(v.c_str(), &end, 10);
    if (*end != '\0' || g < 1 || g > 1024)
      return Status::failure("OVERLAPSIM_TILEWISE_CE_GROUPS: '" + v +
                             "' is not a group count in 1..1024 (expected e.g. 1,2,4)");
    s->ce_groups.push_back(static_cast<int>(g));
  }
  for (const std::string& v :
       split_commas(env_or("OVERLAPSIM_TILEWISE_CE_PHASE2", "copy_engine,epilogue,tail_kernel"))) {
    const auto mode = tw::parse_owner_phase2(v);
    if (!mode)
      return Status::failure("OVERLAPSIM_TILEWISE_CE_PHASE2: '" + v +
                             "' is not a phase-2 mode (expected copy_engine, epilogue and/or "
                             "tail_kernel)");
    if (std::find(s->phase2_modes.begin(), s->phase2_modes.end(), *mode) == s->phase2_modes.end())
      s->phase2_modes.push_back(*mode);
  }
  if (s->phase2_modes.empty())
    return Status::failure("OVERLAPSIM_TILEWISE_CE_PHASE2 needs at least one mode");
  s->cache_path = env_or("OVERLAPSIM_TILEWISE_CACHE", "");
  s->detail_path = env_or("OVERLAPSIM_TILEWISE_DETAIL", "");
  s->timeline_path = env_or("OVERLAPSIM_TILEWISE_TIMELINE", "");
  return Status::success();
}

// One tuning cache per rank thread, loaded once and updated identically on every rank
// (each rank's decisions must match, or the ranks would issue different NCCL calls).
thread_local std::optional<tw::TuningCache> t_cache;

// The peer-copy curve of this rank thread (copy bytes -> seconds), measured once.
thread_local std::optional<tw::CommCurve> t_copy_curve;
// What each group's stream operations add to a copy on the comm stream (measured with it).
thread_local double t_stream_ops_s = 0;
// The tail kernel's exchange time against bytes (every rank at once), measured on first use.
thread_local std::optional<tw::CommCurve> t_tail_curve;

// Limited communicators of this rank thread (see comm_for).
thread_local std::map<int, CommHandle>* t_comms = nullptr;

// Timeline CSV rows of every rank (OwnerDesign::timeline of the chosen copy-engine
// configuration), rewritten atomically as they come.
std::mutex g_timeline_mutex;
std::vector<std::string> g_timeline_lines;

// Detail CSV rows of rank 0, rewritten atomically after every shape.
std::mutex g_detail_mutex;
std::vector<std::string> g_detail_lines;

const char* kDetailHeader =
    "record,gpu,driver,cuda,nccl,dtype,op,m,n,k,world,comm_sms,wait,partition,groups,predicted_s,"
    "measured_s,"
    "pred_error,search,bit_mismatches,fused_mismatches,t_own_s,t_own_signal_s,transport,t_own_"
    "signal_ce_s,signal_scope";

// Header and lines to `path` at once (temp file + rename).
Status write_csv_atomic(const std::string& path, const std::string& header,
                        const std::vector<std::string>& lines) {
  std::string text = header + "\n";
  for (const auto& l : lines) text += l + "\n";
  try {
    config::write_file_atomic(path, text);
  } catch (const std::exception& e) {
    return Status::failure(e.what());
  }
  return Status::success();
}

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
  int ce_groups = 0;  // > 0: transport copy_engine with this many groups a part
  tw::OwnerPhase2 phase2 = tw::OwnerPhase2::CopyEngine;  // copy_engine all-reduce
};

// Per all-reduce phase-2 mode: the detail CSV's and tuning cache's `wait` of a copy-engine
// candidate, and its pair rows' design. Each mode other than the copy engines' has its own
// design name, so validate predicts every row with the mode it measured and fit reads the
// copy engines' rows only.
struct Phase2Names {
  tw::OwnerPhase2 mode;
  const char* wait;
  const char* design;
};
constexpr Phase2Names kPhase2Names[] = {
    {tw::OwnerPhase2::CopyEngine, "copy_engine", "tilewise_ce"},
    {tw::OwnerPhase2::Epilogue, "epilogue_phase2", "tilewise_ce_ep"},
    {tw::OwnerPhase2::TailKernel, "tail_kernel", "tilewise_ce_tk"}};

const Phase2Names& phase2_names(tw::OwnerPhase2 mode) {
  for (const Phase2Names& n : kPhase2Names)
    if (n.mode == mode) return n;
  return kPhase2Names[0];
}
const char* copy_engine_mode(const Candidate& c) { return phase2_names(c.phase2).wait; }
const char* copy_engine_design(const Candidate& c) { return phase2_names(c.phase2).design; }

class TilewiseShapeRunner {
 public:
  TilewiseShapeRunner(BenchEnv& env, const BenchCase& c, PairOp op, const PairShape& shape,
                      const TilewiseCaseIo& io, const TilewiseSettings& settings)
      : env_(env),
        case_(c),
        op_(op),
        coll_(pair_collective(op)),
        shape_(shape),
        io_(io),
        settings_(settings),
        tags_(read_device_tags(env.world())) {}

  Status run() {
    const std::size_t mn = static_cast<std::size_t>(shape_.m * shape_.n);
    OVERLAPSIM_TRY(p_.allocate(mn * 2));
    OVERLAPSIM_TRY(r_.allocate(coll_ == CollectiveOp::AllReduce ? 0 : mn * 2));
    OVERLAPSIM_TRY(natural_.allocate(mn * 2));
    OVERLAPSIM_TRY(natural_out_.allocate(coll_ == CollectiveOp::AllReduce ? 0 : mn * 2));
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "tilewise: after allocating"));
    OVERLAPSIM_TRY(measure_own_alone());
    ce_ok_ = settings_.copy_engine &&
             !tw::owner_shape_error(coll_, shape_.m, shape_.n, env_.world()).has_value();
    if (settings_.copy_engine && !ce_ok_ && env_.rank() == 0)
      std::fprintf(stderr, "overlap-bench: %s %lldx%lldx%lld: no copy_engine transport: %s\n",
                   to_string(op_), static_cast<long long>(shape_.m),
                   static_cast<long long>(shape_.n), static_cast<long long>(shape_.k),
                   tw::owner_shape_error(coll_, shape_.m, shape_.n, env_.world())->c_str());

    if (!t_cache) {
      t_cache.emplace();
      if (!settings_.cache_path.empty()) OVERLAPSIM_TRY(t_cache->load(settings_.cache_path));
    }
    // Acceptance 3: remapped stores + signals alone, every SM, interleaved with the plain GEMM.
    OVERLAPSIM_TRY(measure_signal_interleaved());

    std::optional<Candidate> best_nccl, best_ce;
    std::string search_nccl = "cached", search_ce = "cached";
    if (settings_.nccl) OVERLAPSIM_TRY(search_nccl_transport(&best_nccl, &search_nccl));
    if (ce_ok_) OVERLAPSIM_TRY(search_copy_engine(&best_ce, &search_ce));
    OVERLAPSIM_TRY(final_round(best_nccl, search_nccl, best_ce, search_ce));
    if (env_.rank() == 0) OVERLAPSIM_TRY(write_detail());
    return Status::success();
  }

  tw::TuningKey cache_key(bool copy_engine) const {
    return tw::TuningKey{tags_.gpu,
                         to_string(case_.dtype),
                         shape_.m,
                         shape_.n,
                         shape_.k,
                         env_.world(),
                         std::string(to_string(coll_)) + (copy_engine ? "_ce" : "")};
  }

  Status search_nccl_transport(std::optional<Candidate>* best, std::string* search) {
    const std::optional<tw::TuningEntry> cached = t_cache->find(cache_key(false));
    std::vector<int> sms_list = settings_.comm_sms;
    if (cached) sms_list = {cached->comm_sms};
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
        *search = exhaustive ? "exhaustive" : "predictive";
      }
      for (tw::WaitMode wait : waits) {
        for (const auto& partition : partitions) {
          Candidate cand{sms, wait, partition, tw::predict_time_s(inputs, partition), 0};
          Timing t;
          OVERLAPSIM_TRY(time_design(cand, comm, std::max(3, case_.warmup / 2),
                                     std::max(8, case_.iterations / 2), &t));
          cand.measured_s = t.median_s;
          detail("candidate", cand, *search, -1, -1);
          if (!*best || cand.measured_s < (*best)->measured_s) *best = cand;
        }
      }
    }
    return Status::success();
  }

  // Transport copy_engine: every groups_per_part candidate timed, predicted from the
  // interleaved GEMM-with-signals time and the peer-copy curve.
  Status search_copy_engine(std::optional<Candidate>* best, std::string* search) {
    OVERLAPSIM_TRY(measure_copy_curve());
    const std::optional<tw::TuningEntry> cached = t_cache->find(cache_key(true));
    std::vector<int> groups = settings_.ce_groups;
    // The all-reduce phase-2 modes the design can do here (the copy engines' always).
    std::vector<tw::OwnerPhase2> modes;
    for (const tw::OwnerPhase2 mode : settings_.phase2_modes) {
      Candidate probe;
      probe.ce_groups = 1;
      probe.phase2 = mode;
      if (tw::OwnerDesign::can_implement(coll_, shape_.m, shape_.n, shape_.k, env_.world(),
                                         owner_options(probe))
              .ok)
        modes.push_back(mode);
    }
    if (modes.empty()) modes.push_back(tw::OwnerPhase2::CopyEngine);
    if (std::find(modes.begin(), modes.end(), tw::OwnerPhase2::TailKernel) != modes.end())
      OVERLAPSIM_TRY(measure_tail_curve());
    if (cached && !cached->partition.empty()) {
      groups = {cached->partition.front()};
      tw::OwnerPhase2 mode = tw::OwnerPhase2::CopyEngine;
      for (const Phase2Names& names : kPhase2Names)
        if (cached->wait == names.wait) mode = names.mode;
      modes = {std::find(modes.begin(), modes.end(), mode) != modes.end()
                   ? mode
                   : tw::OwnerPhase2::CopyEngine};
    } else {
      *search = "exhaustive";
    }
    const std::int32_t part_tiles = tw::owner_part_tiles(shape_.m, shape_.n, env_.world());
    for (int g : groups) {
      if (g > part_tiles) continue;
      for (const tw::OwnerPhase2 mode : modes) {
        Candidate cand;
        cand.ce_groups = g;
        cand.partition = {g};
        cand.phase2 = mode;
        tw::OwnerDesign d;
        OVERLAPSIM_TRY(d.initialize(&env_.ctx->comm, coll_, shape_.m, shape_.n, shape_.k,
                                    case_.dtype, owner_options(cand)));
        OVERLAPSIM_TRY(prepare_sets(d));
        OVERLAPSIM_TRY(quiesce(*env_.ctx, "tilewise: copy-engine candidate ready"));
        cand.predicted_s = tw::predict_owner_time_s(
            d.plan(), t_signal_ce_s_, *t_copy_curve, 2, mode, t_stream_ops_s,
            mode == tw::OwnerPhase2::TailKernel ? &*t_tail_curve : nullptr);
        Timing t;
        OVERLAPSIM_TRY(time_iterations(
            *env_.ctx, std::max(3, case_.warmup / 2), std::max(8, case_.iterations / 2),
            [&](int i) {
              const PairBuffers b = io_.set(i);
              return d.run(b.a, b.b, p_.data(), compute(), comm_stream());
            },
            &t));
        OVERLAPSIM_TRY(d.check_waits());
        cand.measured_s = t.median_s;
        detail("candidate", cand, *search, -1, -1);
        if (!*best || cand.measured_s < (*best)->measured_s) *best = cand;
      }
    }
    return Status::success();
  }

  tw::OwnerOptions owner_options(int groups) const {
    tw::OwnerOptions o;
    o.groups_per_part = groups;
    o.system_scope_signal = ce_system_scope_;
    o.wait_timeout_s = env_.ctx->comm.timeout_s;
    return o;
  }
  tw::OwnerOptions owner_options(const Candidate& c) const {
    tw::OwnerOptions o = owner_options(c.ce_groups);
    o.phase2 = c.phase2;
    return o;
  }

  // cudaMemcpyAsync of `bytes` to the next rank, every rank at once (as the transport
  // does), at sizes spanning one group to one part.
  Status measure_copy_curve() {
    if (t_copy_curve) return Status::success();
    constexpr std::size_t kMiB = std::size_t{1} << 20;
    const std::vector<std::size_t> sizes = {kMiB / 4,  kMiB,      4 * kMiB,
                                            16 * kMiB, 64 * kMiB, 256 * kMiB};
    DeviceBuffer src, dst;
    OVERLAPSIM_TRY(src.allocate(sizes.back()));
    OVERLAPSIM_TRY(dst.allocate(sizes.back()));
    OVERLAPSIM_TRY(
        fill_random(src.data(), sizes.back() / 2, case_.dtype, env_.seed ^ 0xC0B1u, compute()));
    // The copies go where the transport's go: a peer pointer, or across processes (MPI
    // mode) the peer's buffer mapped here by IPC.
    tw::PeerLinks links;
    OVERLAPSIM_TRY(tw::comm_peer_links(env_.ctx->comm, &links));
    tw::PeerMemory peers(std::move(links));
    std::vector<std::vector<void*>> all;
    OVERLAPSIM_TRY(peers.share({dst.data()}, &all));
    void* to = all[static_cast<std::size_t>((env_.rank() + 1) % env_.world())][0];
    tw::CommCurve curve;
    for (std::size_t bytes : sizes) {
      OVERLAPSIM_TRY(time_peer_copy("copy_engine", bytes, &curve, [&]() -> Status {
        CUDA_CHECK(cudaMemcpyAsync(to, src.data(), bytes, cudaMemcpyDeviceToDevice, compute()));
        return Status::success();
      }));
    }
    // A group's copy as the transport issues it: the copy, the flag write into the peer,
    // the next group's counter wait (here satisfied) and reset. Less the copy alone at the
    // same size, that is what the predictor adds per group (owner_predictor.hpp).
    {
      constexpr std::size_t kOpsBytes = kMiB;
      DeviceBuffer word;
      OVERLAPSIM_TRY(word.allocate(sizeof(std::uint32_t)));
      CUDA_CHECK(cudaMemsetAsync(word.data(), 0, sizeof(std::uint32_t), compute()));
      auto* peer_word = static_cast<std::uint32_t*>(to);
      auto* local_word = word.as<std::uint32_t>();
      // A driver that refuses stream writes to peer memory (the design then sends its
      // flags by copy) leaves the cost unmeasured and 0 on every rank alike.
      std::vector<double> refused{tw::enqueue_write_value(peer_word, 0, compute()).ok ? 0.0 : 1.0};
      OVERLAPSIM_TRY(allreduce_host(env_.ctx->comm, compute(), refused, ncclMax));
      if (refused[0] != 0) {
        std::fprintf(stderr,
                     "overlap-bench: stream writes to peer memory refused; the predictor's "
                     "per-group stream cost is left at 0\n");
      } else {
        Timing t;
        OVERLAPSIM_TRY(time_iterations(
            *env_.ctx, 3, std::max(8, case_.iterations / 2),
            [&](int i) -> Status {
              CUDA_CHECK(
                  cudaMemcpyAsync(to, src.data(), kOpsBytes, cudaMemcpyDeviceToDevice, compute()));
              OVERLAPSIM_TRY(
                  tw::enqueue_write_value(peer_word, static_cast<std::uint32_t>(i), compute()));
              OVERLAPSIM_TRY(tw::enqueue_wait_geq(local_word, 0, compute()));
              return tw::enqueue_write_value(local_word, 0, compute());
            },
            &t));
        t_stream_ops_s = std::max(0.0, t.median_s - curve.time_s(static_cast<double>(kOpsBytes)));
        BenchRow r = row("peer_copy", "copy_engine_with_stream_ops", 1, t);
        r.bytes = kOpsBytes;
        r.m = r.n = r.k = 0;
        env_.emit(r);
      }
    }
    // Every rank's copies into the others' dst are done before any dst goes away (across
    // processes quiesce() only drains this rank).
    OVERLAPSIM_TRY(peers.barrier());
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "tilewise: copy curve done"));
    t_copy_curve = curve;
    return Status::success();
  }

  // One point of a peer-copy curve: `issue` (every rank at once) timed like the transport's
  // calls, added to `curve` and emitted as a peer_copy row of `design`.
  Status time_peer_copy(const char* design, std::size_t bytes, tw::CommCurve* curve,
                        const std::function<Status()>& issue) {
    Timing t;
    OVERLAPSIM_TRY(time_iterations(
        *env_.ctx, 3, std::max(8, case_.iterations / 2), [&](int) { return issue(); }, &t));
    curve->add_point(static_cast<double>(bytes), t.median_s);
    BenchRow r = row("peer_copy", design, 1, t);
    r.bytes = bytes;
    r.m = r.n = r.k = 0;
    env_.emit(r);
    return Status::success();
  }

  // The tail kernel (tail_exchange.hpp) exchanging `bytes` with every peer, every rank at
  // once and each from its GEMM's end as in the design: what the predictor charges for the
  // last own group in phase-2 mode tail_kernel. Rows peer_copy/tail_kernel.
  Status measure_tail_curve() {
    if (t_tail_curve) return Status::success();
    constexpr std::size_t kMiB = std::size_t{1} << 20;
    const std::vector<std::size_t> sizes = {kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB};
    const int world = env_.world(), rank = env_.rank();
    if (world < 2 || world - 1 > tw::kTailMaxPeers)
      return Status::failure("tilewise: the tail kernel's curve needs 2.." +
                             std::to_string(tw::kTailMaxPeers + 1) + " ranks");
    DeviceBuffer src, dst, flags;
    OVERLAPSIM_TRY(src.allocate(sizes.back()));
    OVERLAPSIM_TRY(dst.allocate(sizes.back() * static_cast<std::size_t>(world)));
    OVERLAPSIM_TRY(
        flags.allocate(static_cast<std::size_t>(world) * tw::kTailSlices * sizeof(std::uint32_t)));
    CUDA_CHECK(cudaMemsetAsync(flags.data(), 0, flags.bytes(), compute()));
    OVERLAPSIM_TRY(
        fill_random(src.data(), sizes.back() / 2, case_.dtype, env_.seed ^ 0x7A11u, compute()));
    CUDA_CHECK(cudaStreamSynchronize(compute()));
    tw::PeerLinks links;
    OVERLAPSIM_TRY(tw::comm_peer_links(env_.ctx->comm, &links));
    tw::PeerMemory peers(std::move(links));
    std::vector<std::vector<void*>> all;
    OVERLAPSIM_TRY(peers.share({dst.data(), flags.data()}, &all));
    int sms = 0, device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    DeviceBuffer timed_out;
    OVERLAPSIM_TRY(timed_out.allocate(sizeof(int)));
    CUDA_CHECK(cudaMemsetAsync(timed_out.data(), 0, sizeof(int), compute()));
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
      t.timeout_s = env_.ctx->comm.timeout_s;
      t.timed_out = timed_out.as<int>();
      OVERLAPSIM_TRY(time_peer_copy("tail_kernel", bytes, &curve, [&]() -> Status {
        t.epoch = ++epoch;
        return tw::launch_tail_exchange(t, compute());
      }));
    }
    int flag = 0;
    CUDA_CHECK(cudaMemcpy(&flag, timed_out.data(), sizeof flag, cudaMemcpyDeviceToHost));
    if (flag != 0) return Status::failure("tilewise: the tail kernel's curve timed out waiting");
    // Every rank's stores into the others' buffers are done before any buffer goes away.
    OVERLAPSIM_TRY(peers.barrier());
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "tilewise: tail curve done"));
    t_tail_curve = curve;
    return Status::success();
  }

  cudaStream_t compute() const { return env_.ctx->compute_stream; }
  cudaStream_t comm_stream() const { return env_.ctx->comm_stream; }

  BenchRow row(const std::string& op, const std::string& design, int chunks,
               const Timing& t) const {
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

  template <class Design>
  Status prepare_sets(Design& d) {
    for (int s = 0; s < io_.sets; ++s) {
      const PairBuffers b = io_.set(s);
      OVERLAPSIM_TRY(d.prepare(b.a, b.b, p_.data()));
    }
    return Status::success();
  }

  // One own GEMM per input set, natural stores into natural_, with `sched`.
  Status natural_gemms(const gemm::SchedulerOptions& sched,
                       std::vector<std::unique_ptr<gemm::OwnGemm>>* out) {
    for (int s = 0; s < io_.sets; ++s) {
      const PairBuffers b = io_.set(s);
      gemm::GemmArgs args;
      args.m = shape_.m;
      args.n = shape_.n;
      args.k = shape_.k;
      args.dtype = case_.dtype == DType::BF16 ? gemm::DType::kBf16 : gemm::DType::kFp16;
      args.a = b.a;
      args.b = b.b;
      args.c = natural_.data();
      auto g = std::make_unique<gemm::OwnGemm>();
      OVERLAPSIM_TRY(g->initialize(args, {}, sched));
      out->push_back(std::move(g));
    }
    return Status::success();
  }

  // Own GEMM alone, natural stores on every SM: the GEMM the tile-wise design builds on.
  Status measure_own_alone() {
    std::vector<std::unique_ptr<gemm::OwnGemm>> gemms;
    OVERLAPSIM_TRY(natural_gemms({}, &gemms));
    Timing t;
    OVERLAPSIM_TRY(time_iterations(
        *env_.ctx, case_.warmup, case_.iterations,
        [&](int i) { return gemms[static_cast<std::size_t>(i % io_.sets)]->run(compute()); }, &t));
    t_own_s_ = t.median_s;
    own_gemms_ = std::move(gemms);
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

  // The plain own GEMM, the NCCL transport's GEMM (remapped stores + signals, every SM) and
  // the copy-engine transport's (rotated order, remapped stores, signals, own part placed
  // without waiting) in ONE interleaved loop: acceptance 3 compares them under one clock.
  // Also in the loop: the previous own GEMM version (v2: 4-byte epilogue stores, no
  // cluster; own_v2_interleaved) and the copy-engine GEMM with a GPU-scope signal beside the
  // system-scope one (own_signal_ce_gpu, own_signal_ce), so the version gain and the signal
  // scope's cost are measured under the same clock as the rest; the faster scope is the one
  // the copy-engine candidates then use. (Helper gemm3's runs had the GPU scope as default
  // and the system scope as own_signal_ce_sys.)
  Status measure_signal_interleaved() {
    tw::TilewiseDesign d;
    tw::OwnerDesign ce;
    tw::OwnerDesign ce_gpu;
    std::vector<EnqueueIteration> variants{
        [&](int i) { return own_gemms_[static_cast<std::size_t>(i % io_.sets)]->run(compute()); }};
    std::vector<std::string> names{"own_interleaved"};
    std::vector<std::unique_ptr<gemm::OwnGemm>> v2;
    {
      gemm::SchedulerOptions sched;
      sched.cluster_m = 1;
      sched.vector_stores = false;
      OVERLAPSIM_TRY(natural_gemms(sched, &v2));
      variants.push_back(
          [&](int i) { return v2[static_cast<std::size_t>(i % io_.sets)]->run(compute()); });
      names.push_back("own_v2_interleaved");
    }
    if (settings_.nccl) {
      OVERLAPSIM_TRY(d.initialize(&env_.ctx->comm, coll_, shape_.m, shape_.n, shape_.k, case_.dtype,
                                  options_for(Candidate{})));
      OVERLAPSIM_TRY(prepare_sets(d));
      variants.push_back([&](int i) {
        const PairBuffers b = io_.set(i);
        return d.run_gemm_only(b.a, b.b, p_.data(), compute());
      });
      names.push_back("own_signal");
    }
    if (ce_ok_) {
      tw::OwnerOptions system_scope = owner_options(1);
      system_scope.system_scope_signal = true;
      OVERLAPSIM_TRY(ce.initialize(&env_.ctx->comm, coll_, shape_.m, shape_.n, shape_.k,
                                   case_.dtype, system_scope));
      variants.push_back([&](int i) {
        const PairBuffers b = io_.set(i);
        return ce.run_gemm_only(b.a, b.b, p_.data(), compute());
      });
      names.push_back("own_signal_ce");
      tw::OwnerOptions gpu_scope = owner_options(1);
      gpu_scope.system_scope_signal = false;
      OVERLAPSIM_TRY(ce_gpu.initialize(&env_.ctx->comm, coll_, shape_.m, shape_.n, shape_.k,
                                       case_.dtype, gpu_scope));
      variants.push_back([&](int i) {
        const PairBuffers b = io_.set(i);
        return ce_gpu.run_gemm_only(b.a, b.b, p_.data(), compute());
      });
      names.push_back("own_signal_ce_gpu");
    }
    std::vector<Timing> timings;
    OVERLAPSIM_TRY(time_interleaved(*env_.ctx, case_.warmup, case_.iterations, variants,
                                    EnqueueIteration{}, &timings));
    double t_signal_ce_gpu_s = 0;
    for (std::size_t v = 0; v < variants.size(); ++v) {
      BenchRow r = row("gemm", names[v], 0, timings[v]);
      r.flops = compute_flops(op_, shape_);
      env_.emit(r);
      if (names[v] == "own_signal") t_signal_s_[0] = timings[v].median_s;
      if (names[v] == "own_signal_ce") t_signal_ce_s_ = timings[v].median_s;
      if (names[v] == "own_signal_ce_gpu") t_signal_ce_gpu_s = timings[v].median_s;
    }
    // The copy-engine layout's signal scope for this shape: the faster of the two in this
    // loop (both are correct here: kernels/NOTES.md "Signal scope"; which is cheaper differs
    // by chip, 4096³ measured +1.2 % system / +3.1 % GPU on H200, +5.3 % / +1.6 % on H100).
    // Every rank decides alike: the timings are the max over ranks.
    ce_system_scope_ = !(t_signal_ce_gpu_s > 0 && t_signal_ce_gpu_s < t_signal_ce_s_);
    if (!ce_system_scope_) t_signal_ce_s_ = t_signal_ce_gpu_s;
    return quiesce(*env_.ctx, "tilewise: signal loop done");
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
      case CollectiveOp::AllGather:
        break;
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
      for (int g = 0; g < w; ++g)
        elems += blocks * plan.group_block_elems[static_cast<std::size_t>(g)];
      if (elems == 0) continue;
      Timing ct;
      OVERLAPSIM_TRY(time_iterations(
          *env_.ctx, 3, std::max(8, case_.iterations / 2),
          [&](int) { return enqueue_collective(*comm, elems, compute()); }, &ct));
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
    OVERLAPSIM_TRY(
        d.initialize(comm, coll_, shape_.m, shape_.n, shape_.k, case_.dtype, options_for(cand)));
    OVERLAPSIM_TRY(prepare_sets(d));
    // Nobody's collectives start while a peer still allocates (free_queue.hpp).
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "tilewise: candidate ready"));
    OVERLAPSIM_TRY(time_iterations(
        *env_.ctx, warmup, iterations,
        [&](int i) {
          const PairBuffers b = io_.set(i);
          return d.run(b.a, b.b, p_.data(), r_.data(), compute(), comm_stream());
        },
        t));
    return d.check_waits();
  }

  // The chosen configurations of both transports and the sequential pair, re-timed in
  // one interleaved loop, then checked.
  Status final_round(std::optional<Candidate> nccl, const std::string& search_nccl,
                     std::optional<Candidate> ce, const std::string& search_ce) {
    std::unique_ptr<tw::TilewiseDesign> dn;
    std::unique_ptr<tw::OwnerDesign> dc;
    std::vector<EnqueueIteration> variants;
    std::vector<std::string> names;
    if (io_.sequential) {
      variants.push_back(io_.sequential);
      names.push_back("sequential");
    }
    if (io_.op_alone) {
      variants.push_back(io_.op_alone);
      names.push_back("op_alone");
    }
    if (io_.collective_alone) {
      variants.push_back(io_.collective_alone);
      names.push_back("collective_alone");
    }
    if (nccl) {
      CommHandle* comm = nullptr;
      OVERLAPSIM_TRY(comm_for(nccl->comm_sms, &comm));
      dn = std::make_unique<tw::TilewiseDesign>();
      OVERLAPSIM_TRY(dn->initialize(comm, coll_, shape_.m, shape_.n, shape_.k, case_.dtype,
                                    options_for(*nccl)));
      OVERLAPSIM_TRY(prepare_sets(*dn));
      variants.push_back([&](int i) {
        const PairBuffers b = io_.set(i);
        return dn->run(b.a, b.b, p_.data(), r_.data(), compute(), comm_stream());
      });
      names.push_back("tilewise");
    }
    if (ce) {
      dc = std::make_unique<tw::OwnerDesign>();
      OVERLAPSIM_TRY(dc->initialize(&env_.ctx->comm, coll_, shape_.m, shape_.n, shape_.k,
                                    case_.dtype, owner_options(*ce)));
      OVERLAPSIM_TRY(prepare_sets(*dc));
      variants.push_back([&](int i) {
        const PairBuffers b = io_.set(i);
        return dc->run(b.a, b.b, p_.data(), compute(), comm_stream());
      });
      names.push_back("tilewise_ce");
      // The same GEMM (chosen groups, rotated order, remapped stores, signals) without its
      // transport, in this loop: the GEMM's share of tilewise_ce under the loop's clock
      // (the signal loop runs GEMMs only, hotter; there the AR tail could not be told
      // from a slower GEMM).
      variants.push_back([&](int i) {
        const PairBuffers b = io_.set(i);
        return dc->run_gemm_only(b.a, b.b, p_.data(), compute());
      });
      names.push_back("own_signal_ce");
    }
    if (variants.empty()) return Status::success();
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "tilewise: final designs ready"));
    std::vector<Timing> timings;
    OVERLAPSIM_TRY(time_interleaved(*env_.ctx, case_.warmup, case_.iterations, variants,
                                    io_.align ? io_.align : EnqueueIteration{}, &timings));
    for (std::size_t v = 0; v < names.size(); ++v) {
      if (names[v] == "sequential" || names[v] == "op_alone" || names[v] == "collective_alone") {
        BenchRow r = row(to_string(op_), names[v] + "_tw_loop", 1, timings[v]);
        if (names[v] != "collective_alone") r.flops = compute_flops(op_, shape_);
        if (names[v] != "op_alone") {
          r.bytes = collective_bytes(op_, shape_, env_.world(), case_.dtype);
          r.busbw_factor = busbw_factor(coll_, env_.world());
        }
        env_.emit(r);
      } else if (names[v] == "own_signal_ce") {
        BenchRow r = row(to_string(op_), "own_signal_ce_tw_loop", ce->ce_groups, timings[v]);
        r.flops = compute_flops(op_, shape_);
        env_.emit(r);
      } else if (names[v] == "tilewise") {
        OVERLAPSIM_TRY(measure_final(*dn, *nccl, search_nccl, timings[v]));
      } else {
        OVERLAPSIM_TRY(finish_copy_engine(*dc, *ce, search_ce, timings[v]));
      }
    }
    if (dc) OVERLAPSIM_TRY(dc->check_waits());
    return quiesce(*env_.ctx, "tilewise: final round done");
  }

  // Own GEMM on set 0 followed by the same NCCL collective on the parent communicator;
  // *own_result: where that result is (natural layout).
  Status own_then_nccl(void** own_result) {
    OVERLAPSIM_TRY(own_gemms_.front()->run(compute()));
    const auto count = static_cast<std::size_t>(shape_.m * shape_.n);
    const std::size_t per_rank = count / static_cast<std::size_t>(env_.world());
    CommHandle& parent = env_.ctx->comm;
    *own_result = natural_.data();
    if (coll_ == CollectiveOp::AllReduce) {
      OVERLAPSIM_TRY(
          all_reduce(parent, natural_.data(), natural_.data(), count, case_.dtype, compute()));
    } else if (coll_ == CollectiveOp::ReduceScatter) {
      OVERLAPSIM_TRY(reduce_scatter(parent, natural_.data(), natural_out_.data(), per_rank,
                                    case_.dtype, compute()));
      *own_result = natural_out_.data();
    } else {
      OVERLAPSIM_TRY(all_to_all(parent, natural_.data(), per_rank, natural_out_.data(), per_rank,
                                per_rank, case_.dtype, compute()));
      *own_result = natural_out_.data();
    }
    return wait_stream(env_.ctx->comm, compute(), "tilewise own + NCCL");
  }

  Status bitwise_against_own(const void* result, std::size_t out_elems, std::uint64_t* mismatches) {
    void* own_result = nullptr;
    OVERLAPSIM_TRY(own_then_nccl(&own_result));
    *mismatches = 0;
    OVERLAPSIM_TRY(count_mismatches(result, own_result, out_elems, case_.dtype, 0.0, 0.0, compute(),
                                    mismatches));
    OVERLAPSIM_TRY(sum_over_ranks(env_, mismatches));
    if (*mismatches != 0 && env_.rank() == 0)
      std::fprintf(
          stderr,
          "overlap-bench: tilewise %s %lldx%lldx%lld: %llu elements differ from own GEMM + NCCL\n",
          to_string(op_), static_cast<long long>(shape_.m), static_cast<long long>(shape_.n),
          static_cast<long long>(shape_.k), static_cast<unsigned long long>(*mismatches));
    return Status::success();
  }

  // The pair row of a tile-wise transport's final configuration.
  void emit_pair_row(const char* design, int chunks, const Timing& t, std::uint64_t wrong) {
    BenchRow r = row(to_string(op_), design, chunks, t);
    r.flops = compute_flops(op_, shape_);
    r.bytes = collective_bytes(op_, shape_, env_.world(), case_.dtype);
    r.busbw_factor = busbw_factor(coll_, env_.world());
    r.wrong = wrong;
    env_.emit(r);
  }

  // Into the tuning cache, saved by rank 0 when a cache file was asked for.
  Status remember(const tw::TuningEntry& entry) {
    t_cache->put(entry);
    if (env_.rank() == 0 && !settings_.cache_path.empty())
      OVERLAPSIM_TRY(t_cache->save(settings_.cache_path));
    return Status::success();
  }

  Status finish_copy_engine(tw::OwnerDesign& d, Candidate best, const std::string& search,
                            const Timing& t) {
    best.measured_s = t.median_s;
    const PairBuffers set0 = io_.set(0);
    void* result = const_cast<void*>(set0.result(op_));
    std::uint64_t wrong = 0;
    OVERLAPSIM_TRY(io_.run_and_check(
        [&]() -> Status {
          OVERLAPSIM_TRY(
              poison(p_.data(), static_cast<std::size_t>(shape_.m * shape_.n), compute()));
          OVERLAPSIM_TRY(d.run(set0.a, set0.b, p_.data(), compute(), comm_stream()));
          return d.unpermute(p_.data(), result, compute());
        },
        &wrong));
    OVERLAPSIM_TRY(d.check_waits());
    std::uint64_t bit_mismatches = 0;
    OVERLAPSIM_TRY(bitwise_against_own(
        result, static_cast<std::size_t>(d.plan().out_rows * shape_.n), &bit_mismatches));
    emit_pair_row(copy_engine_design(best), best.ce_groups, t, wrong);
    detail("final", best, search, static_cast<long long>(bit_mismatches), -1);
    OVERLAPSIM_TRY(record_timeline(d, best));
    tw::TuningEntry entry;
    entry.key = cache_key(true);
    entry.partition = {best.ce_groups};
    entry.comm_sms = 0;
    entry.wait = copy_engine_mode(best);
    entry.time_s = best.measured_s;
    entry.predicted_s = best.predicted_s;
    entry.search = search;
    return remember(entry);
  }

  Status measure_final(tw::TilewiseDesign& d, Candidate best, const std::string& search,
                       const Timing& t) {
    best.measured_s = t.median_s;

    // Correctness: reference and sequential (through the harness), then bit for bit
    // against our own GEMM followed by the same NCCL collective.
    const PairBuffers set0 = io_.set(0);
    void* result = const_cast<void*>(set0.result(op_));
    std::uint64_t wrong = 0;
    OVERLAPSIM_TRY(io_.run_and_check(
        [&]() -> Status {
          OVERLAPSIM_TRY(
              poison(p_.data(), static_cast<std::size_t>(shape_.m * shape_.n), compute()));
          if (r_.bytes()) OVERLAPSIM_TRY(poison(r_.data(), r_.bytes() / 2, compute()));
          OVERLAPSIM_TRY(d.run(set0.a, set0.b, p_.data(), r_.data(), compute(), comm_stream()));
          return d.unpermute(p_.data(), r_.data(), result, compute());
        },
        &wrong));
    OVERLAPSIM_TRY(d.check_waits());
    const std::size_t out_elems = static_cast<std::size_t>(d.plan().out_rows * shape_.n);
    std::uint64_t bit_mismatches = 0;
    OVERLAPSIM_TRY(bitwise_against_own(result, out_elems, &bit_mismatches));

    emit_pair_row("tilewise", static_cast<int>(best.partition.size()), t, wrong);

    std::uint64_t fused_mismatches = 0;
    OVERLAPSIM_TRY(measure_layout_ops(d, result, &fused_mismatches));
    detail("final", best, search, static_cast<long long>(bit_mismatches),
           static_cast<long long>(fused_mismatches));

    tw::TuningEntry entry;
    entry.key = cache_key(false);
    entry.partition = best.partition;
    entry.comm_sms = best.comm_sms;
    entry.wait = tw::to_string(best.wait);
    entry.time_s = best.measured_s;
    entry.predicted_s = best.predicted_s;
    entry.search = search;
    return remember(entry);
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
    OVERLAPSIM_TRY(
        fill_random(residual.data(), elems, case_.dtype, env_.seed ^ 0x5E5Du, compute()));
    OVERLAPSIM_TRY(fill_random(weight.data(), static_cast<std::size_t>(shape_.n), case_.dtype,
                               env_.seed ^ 0x3E16u, compute()));
    void* scratch = natural_.data();
    Timing t;
    OVERLAPSIM_TRY(time_iterations(
        *env_.ctx, case_.warmup, case_.iterations,
        [&](int) { return d.unpermute(p_.data(), r_.data(), scratch, compute()); }, &t));
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
            return tw::residual_rmsnorm(
                fused ? fused_view : natural_view, residual.data(), weight.data(), kEps,
                fused ? out_fused.data() : out_natural.data(), case_.dtype, compute());
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
    std::string line =
        std::string(record) + "," + tags_.gpu + "," + tags_.driver + "," + tags_.cuda + "," +
        tags_.nccl + "," + to_string(case_.dtype) + "," + to_string(op_) + "," +
        std::to_string(shape_.m) + "," + std::to_string(shape_.n) + "," + std::to_string(shape_.k) +
        "," + std::to_string(env_.world()) + "," + std::to_string(cand.comm_sms) + "," +
        (cand.ce_groups > 0 ? copy_engine_mode(cand) : tw::to_string(cand.wait)) + "," +
        tw::partition_string(cand.partition) + "," +
        std::to_string(cand.ce_groups > 0 ? cand.ce_groups
                                          : static_cast<int>(cand.partition.size())) +
        "," + fmt_double(cand.predicted_s) + "," + fmt_double(cand.measured_s) + "," +
        fmt_double(error) + "," + search + "," +
        (bit_mismatches < 0 ? "" : std::to_string(bit_mismatches)) + "," +
        (fused_mismatches < 0 ? "" : std::to_string(fused_mismatches)) + "," +
        fmt_double(t_own_s_) + "," +
        (signal == t_signal_s_.end() || cand.ce_groups > 0 ? "" : fmt_double(signal->second)) +
        "," + (cand.ce_groups > 0 ? "copy_engine" : "nccl") + "," +
        (t_signal_ce_s_ > 0 ? fmt_double(t_signal_ce_s_) : "") + "," +
        (cand.ce_groups > 0 ? (ce_system_scope_ ? "system" : "gpu") : "");
    std::lock_guard<std::mutex> lock(g_detail_mutex);
    g_detail_lines.push_back(line);
  }

  // Five untimed calls of the chosen configuration with OwnerDesign's timeline on; one row
  // per step: where the call's time after the GEMM goes.
  Status record_timeline(tw::OwnerDesign& d, const Candidate& best) {
    if (settings_.timeline_path.empty()) return Status::success();
    const PairBuffers set0 = io_.set(0);
    std::vector<std::string> lines;
    d.set_timeline(true);
    for (int call = 0; call < 5; ++call) {
      std::vector<std::pair<std::string, double>> steps;
      const Status ran = d.run(set0.a, set0.b, p_.data(), compute(), comm_stream());
      const Status waited =
          ran.ok ? wait_stream(env_.ctx->comm, compute(), "tilewise timeline") : ran;
      const Status got = waited.ok ? d.timeline(&steps) : waited;
      if (!got.ok) {
        d.set_timeline(false);
        return got;
      }
      for (const auto& [step, t_us] : steps)
        lines.push_back(std::string(to_string(coll_)) + "," + std::to_string(shape_.m) + "," +
                        std::to_string(shape_.n) + "," + std::to_string(shape_.k) + "," +
                        std::to_string(best.ce_groups) + "," + copy_engine_mode(best) + "," +
                        std::to_string(call) + "," + std::to_string(env_.rank()) + "," + step +
                        "," + fmt_double(t_us));
    }
    d.set_timeline(false);
    OVERLAPSIM_TRY(d.check_waits());
    std::lock_guard<std::mutex> lock(g_timeline_mutex);
    g_timeline_lines.insert(g_timeline_lines.end(), lines.begin(), lines.end());
    return write_csv_atomic(settings_.timeline_path, "op,m,n,k,groups,wait,call,rank,step,t_us",
                            g_timeline_lines);
  }

  Status write_detail() {
    if (settings_.detail_path.empty()) return Status::success();
    std::lock_guard<std::mutex> lock(g_detail_mutex);
    return write_csv_atomic(settings_.detail_path, kDetailHeader, g_detail_lines);
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
  std::vector<std::unique_ptr<gemm::OwnGemm>> own_gemms_;  // natural stores, per input set
  bool ce_ok_ = false;
  double t_signal_ce_s_ = 0;     // the copy-engine GEMM with signals of the chosen scope
  bool ce_system_scope_ = true;  // the copy-engine layout's signal scope (signal loop)
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
                   to_string(op), static_cast<long long>(shape.m), static_cast<long long>(shape.n),
                   static_cast<long long>(shape.k), why.c_str());
    return Status::success();
  };
  if (!tilewise_supports(op)) return skip("not a GEMM followed by its collective");
  if (auto e = tilewise::shape_error(pair_collective(op), shape.m, shape.n, env.world()))
    return skip(*e);
  TilewiseSettings settings;
  OVERLAPSIM_TRY(read_settings(&settings));
  TilewiseShapeRunner runner(env, c, op, shape, io, settings);
  return runner.run();
}

}  // namespace overlapsim::kernels::bench
