#include "kernels/bench/interference_runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "kernels/bench/collective_call.hpp"
#include "kernels/bench/timing.hpp"
#include "kernels/bench/verify.hpp"
#include "kernels/harness/fill.hpp"
#include "kernels/ops/gemm_cublaslt.hpp"
#include "kernels/tilewise/tilewise_design.hpp"

namespace overlapsim::kernels::bench {
namespace {

// A round times each burst for about this long (fewer rounds, same drift exposure).
constexpr double kBurstWindowS = 2e-3;
constexpr int kMinBurst = 3;
constexpr int kMaxBurst = 2000;
// The other stream's work is sized for the victim's burst running this much slower than
// alone; samples past its end are dropped anyway.
constexpr double kCoverMargin = 2.0;
constexpr double kMaxCoverS = 0.5;
// Rounds per point, at most; and after kGiveUpRounds a measurement still without a single
// covered sample ends the point (its row is left out, with a message). Counted, not timed,
// so every rank stops after the same round.
constexpr int kMaxRounds = 60;
constexpr int kGiveUpRounds = 10;

struct GemmInputs {
  DeviceBuffer a, b;
};

// One GEMM shape: rotating input sets (more than L2, like the compute runner), one output.
struct GemmUnderTest {
  PairShape shape;
  std::vector<GemmInputs> sets;
  DeviceBuffer out;
  CublasLtGemm gemm;
  Status run(int i, cudaStream_t stream) const {
    const GemmInputs& in = sets[static_cast<std::size_t>(i) % sets.size()];
    return gemm.run(in.a.data(), in.b.data(), out.data(), stream);
  }
};

class Event {
 public:
  Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() {
    if (event_) cudaEventDestroy(event_);
  }
  Status create() {
    CUDA_CHECK(cudaEventCreate(&event_));
    return Status::success();
  }
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

Status create_events(std::vector<Event>* events, int count) {
  *events = std::vector<Event>(static_cast<std::size_t>(count));
  for (Event& e : *events) OVERLAPSIM_TRY(e.create());
  return Status::success();
}

Status elapsed_s(const Event& from, const Event& to, double* seconds) {
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, from.get(), to.get()));
  *seconds = ms * 1e-3;
  return Status::success();
}

// The four measurements of one point, as max-over-rank samples.
enum Variant { kGemmAlone = 0, kGemmBeside = 1, kCollAlone = 2, kCollBeside = 3, kVariants = 4 };

class InterferencePoint {
 public:
  InterferencePoint(BenchEnv& env, const BenchCase& c, CommHandle& comm, const GemmUnderTest& g,
                    CollectiveOp op, const CollectiveCounts& counts, const DeviceBuffer& send,
                    DeviceBuffer& recv, int ctas)
      : env_(env),
        case_(c),
        comm_(comm),
        gemm_(g),
        op_(op),
        counts_(counts),
        send_(send),
        recv_(recv),
        ctas_(ctas) {}

  Status run() {
    OVERLAPSIM_TRY(size_bursts());
    int next = 0;
    OVERLAPSIM_TRY(run_for(
        *env_.ctx, compute(), timing_policy().warmup_s, gemm_index_,
        [&](int i) { return gemm_.run(i, compute()); }, &next));
    gemm_index_ = next;
    std::vector<std::vector<double>> samples(kVariants);
    OVERLAPSIM_TRY(round(0, nullptr));  // untimed: every path once at this size
    for (int r = 1; r <= kMaxRounds && more_needed(samples); ++r) {
      OVERLAPSIM_TRY(round(r, &samples));
      bool empty = false;
      for (const auto& v : samples) empty = empty || v.empty();
      if (empty && r >= kGiveUpRounds) break;
    }
    OVERLAPSIM_TRY(check());
    return emit(samples);
  }

 private:
  cudaStream_t compute() const { return env_.ctx->compute_stream; }
  cudaStream_t comm_stream() const { return env_.ctx->comm_stream; }
  Status collective(cudaStream_t stream) {
    return enqueue_collective(comm_, op_, send_.data(), recv_.data(), counts_, case_.dtype, stream);
  }

  // Alone times of one GEMM and one collective (median of 3, max over ranks) set the burst
  // lengths and how much of the other kernel covers a burst. Ranks agree: reduced times.
  Status size_bursts() {
    std::vector<Event> ev;
    OVERLAPSIM_TRY(create_events(&ev, 12));
    for (int i = 0; i < 3; ++i) {
      CUDA_CHECK(cudaEventRecord(ev[2 * i].get(), compute()));
      OVERLAPSIM_TRY(gemm_.run(gemm_index_++, compute()));
      CUDA_CHECK(cudaEventRecord(ev[2 * i + 1].get(), compute()));
    }
    // The collectives after the GEMMs, not beside them: these are alone times (and every
    // kernel of the point runs once alone before anything overlaps).
    Event after_gemms;
    OVERLAPSIM_TRY(after_gemms.create());
    OVERLAPSIM_TRY(join(comm_stream(), compute(), after_gemms));
    for (int i = 3; i < 6; ++i) {
      CUDA_CHECK(cudaEventRecord(ev[2 * i].get(), comm_stream()));
      OVERLAPSIM_TRY(collective(comm_stream()));
      CUDA_CHECK(cudaEventRecord(ev[2 * i + 1].get(), comm_stream()));
    }
    OVERLAPSIM_TRY(wait_stream(comm_, comm_stream(), "interference: sizing collectives"));
    OVERLAPSIM_TRY(wait_stream(comm_, compute(), "interference: sizing GEMMs"));
    std::vector<double> t(6);
    for (int i = 0; i < 6; ++i)
      OVERLAPSIM_TRY(elapsed_s(ev[2 * i], ev[2 * i + 1], &t[static_cast<std::size_t>(i)]));
    OVERLAPSIM_TRY(allreduce_host(env_.ctx->comm, compute(), t, ncclMax));
    gemm_s_ = std::max(summarize({t[0], t[1], t[2]}).median_s, 1e-7);
    coll_s_ = std::max(summarize({t[3], t[4], t[5]}).median_s, 1e-7);
    gemm_burst_ =
        std::clamp(static_cast<int>(std::ceil(kBurstWindowS / gemm_s_)), kMinBurst, kMaxBurst);
    coll_burst_ =
        std::clamp(static_cast<int>(std::ceil(kBurstWindowS / coll_s_)), kMinBurst, kMaxBurst);
    // +2: the leading one (finished before the victim starts) and one spare.
    colls_beside_ = static_cast<int>(std::ceil(kCoverMargin * gemm_burst_ * gemm_s_ / coll_s_)) + 2;
    gemms_beside_ = static_cast<int>(std::ceil(kCoverMargin * coll_burst_ * coll_s_ / gemm_s_)) + 2;
    // At most about kMaxCoverS of cover work per burst.
    max_colls_beside_ = std::max(colls_beside_, static_cast<int>(std::ceil(kMaxCoverS / coll_s_)));
    max_gemms_beside_ = std::max(gemms_beside_, static_cast<int>(std::ceil(kMaxCoverS / gemm_s_)));
    return Status::success();
  }

  bool more_needed(const std::vector<std::vector<double>>& samples) const {
    for (const auto& s : samples) {
      double total = 0;
      for (double x : s) total += x;
      if (static_cast<int>(s.size()) < case_.iterations || total < timing_policy().min_time_s)
        return true;
    }
    return false;
  }

  // Burst of `count` victim kernels on `stream`, each between its own events.
  template <class Enqueue>
  Status timed_burst(cudaStream_t stream, std::vector<Event>& ev, int count, Enqueue enqueue) {
    for (int i = 0; i < count; ++i) {
      CUDA_CHECK(cudaEventRecord(ev[2 * i].get(), stream));
      OVERLAPSIM_TRY(enqueue());
      CUDA_CHECK(cudaEventRecord(ev[2 * i + 1].get(), stream));
    }
    return Status::success();
  }

  // `stream` waits for everything enqueued so far on `other`.
  Status join(cudaStream_t stream, cudaStream_t other, const Event& marker) {
    CUDA_CHECK(cudaEventRecord(marker.get(), other));
    CUDA_CHECK(cudaStreamWaitEvent(stream, marker.get(), 0));
    return Status::success();
  }

  // One round: the four measurements, in an order that rotates with the round. With
  // `samples` null nothing is recorded.
  Status round(int r, std::vector<std::vector<double>>* samples) {
    std::vector<Event> gemm_alone, gemm_beside, coll_alone, coll_beside, marks;
    OVERLAPSIM_TRY(create_events(&gemm_alone, 2 * gemm_burst_));
    OVERLAPSIM_TRY(create_events(&gemm_beside, 2 * gemm_burst_));
    OVERLAPSIM_TRY(create_events(&coll_alone, 2 * coll_burst_));
    OVERLAPSIM_TRY(create_events(&coll_beside, 2 * coll_burst_));
    // 0: comm lead, 1: comm end, 2: compute lead, 3: compute end, 4..8: joins
    OVERLAPSIM_TRY(create_events(&marks, 9));
    const auto gemm_on = [&](cudaStream_t s) {
      return [this, s] { return gemm_.run(gemm_index_++, s); };
    };
    const auto coll_on = [&](cudaStream_t s) { return [this, s] { return collective(s); }; };
    for (int step = 0; step < kVariants; ++step) {
      switch ((r + step) % kVariants) {
        case kGemmAlone:
          OVERLAPSIM_TRY(timed_burst(compute(), gemm_alone, gemm_burst_, gemm_on(compute())));
          break;
        case kGemmBeside:
          // The comm stream starts after the compute stream's earlier work (no overlap with
          // a previous variant), runs one collective, marks the lead, then the rest.
          OVERLAPSIM_TRY(join(comm_stream(), compute(), marks[4]));
          OVERLAPSIM_TRY(collective(comm_stream()));
          CUDA_CHECK(cudaEventRecord(marks[0].get(), comm_stream()));
          for (int i = 1; i < colls_beside_; ++i) OVERLAPSIM_TRY(collective(comm_stream()));
          CUDA_CHECK(cudaEventRecord(marks[1].get(), comm_stream()));
          CUDA_CHECK(cudaStreamWaitEvent(compute(), marks[0].get(), 0));
          OVERLAPSIM_TRY(timed_burst(compute(), gemm_beside, gemm_burst_, gemm_on(compute())));
          OVERLAPSIM_TRY(join(compute(), comm_stream(), marks[5]));
          break;
        case kCollAlone:
          OVERLAPSIM_TRY(join(comm_stream(), compute(), marks[6]));
          // Untimed first call: it absorbs the ranks' skew, so no sample waits for a peer.
          OVERLAPSIM_TRY(collective(comm_stream()));
          OVERLAPSIM_TRY(
              timed_burst(comm_stream(), coll_alone, coll_burst_, coll_on(comm_stream())));
          OVERLAPSIM_TRY(join(compute(), comm_stream(), marks[7]));
          break;
        case kCollBeside:
          // GEMMs first on the compute stream (after its earlier work, which includes every
          // join of the comm stream), the collectives wait for the first one to finish.
          OVERLAPSIM_TRY(gemm_.run(gemm_index_++, compute()));
          CUDA_CHECK(cudaEventRecord(marks[2].get(), compute()));
          for (int i = 1; i < gemms_beside_; ++i)
            OVERLAPSIM_TRY(gemm_.run(gemm_index_++, compute()));
          CUDA_CHECK(cudaEventRecord(marks[3].get(), compute()));
          CUDA_CHECK(cudaStreamWaitEvent(comm_stream(), marks[2].get(), 0));
          OVERLAPSIM_TRY(collective(comm_stream()));  // untimed: absorbs the ranks' skew
          OVERLAPSIM_TRY(
              timed_burst(comm_stream(), coll_beside, coll_burst_, coll_on(comm_stream())));
          OVERLAPSIM_TRY(join(compute(), comm_stream(), marks[8]));
          break;
      }
    }
    OVERLAPSIM_TRY(wait_stream(comm_, compute(), "interference: round"));
    OVERLAPSIM_TRY(wait_stream(comm_, comm_stream(), "interference: round"));
    if (samples == nullptr) return Status::success();

    // Times, then per beside sample 1 when its kernel ended after the other stream's work
    // (not covered), both reduced over ranks with max in one call.
    const int n = 2 * gemm_burst_ + 2 * coll_burst_;
    std::vector<double> values(static_cast<std::size_t>(2 * n), 0.0);
    std::size_t at = 0;
    const auto put = [&](std::vector<Event>& ev, int count, const Event* other_end) -> Status {
      for (int i = 0; i < count; ++i, ++at) {
        OVERLAPSIM_TRY(elapsed_s(ev[2 * i], ev[2 * i + 1], &values[at]));
        if (other_end != nullptr) {
          double margin = 0;
          OVERLAPSIM_TRY(elapsed_s(ev[2 * i + 1], *other_end, &margin));
          values[static_cast<std::size_t>(n) + at] = margin < 0 ? 1.0 : 0.0;
        }
      }
      return Status::success();
    };
    OVERLAPSIM_TRY(put(gemm_alone, gemm_burst_, nullptr));
    OVERLAPSIM_TRY(put(gemm_beside, gemm_burst_, &marks[1]));
    OVERLAPSIM_TRY(put(coll_alone, coll_burst_, nullptr));
    OVERLAPSIM_TRY(put(coll_beside, coll_burst_, &marks[3]));
    OVERLAPSIM_TRY(allreduce_host(env_.ctx->comm, compute(), values, ncclMax));
    const int counts[kVariants] = {gemm_burst_, gemm_burst_, coll_burst_, coll_burst_};
    bool short_cover[kVariants] = {false, false, false, false};
    at = 0;
    for (int v = 0; v < kVariants; ++v)
      for (int i = 0; i < counts[v]; ++i, ++at) {
        if (values[static_cast<std::size_t>(n) + at] > 0) {
          ++uncovered_[v];
          short_cover[v] = true;
          continue;
        }
        (*samples)[static_cast<std::size_t>(v)].push_back(values[at]);
      }
    // The victim ran slower than the margin allowed: give later rounds twice the cover
    // (every rank sees the same reduced flags, so all change alike).
    if (short_cover[kGemmBeside]) colls_beside_ = std::min(2 * colls_beside_, max_colls_beside_);
    if (short_cover[kCollBeside]) gemms_beside_ = std::min(2 * gemms_beside_, max_gemms_beside_);
    return Status::success();
  }

  // One more run of each victim beside the other kernel, its output checked.
  Status check() {
    const PairReference gemm_ref(PairOp::GemmAllReduce, gemm_.shape, case_.dtype, env_.world(),
                                 env_.seed, 0);
    OVERLAPSIM_TRY(poison(gemm_.out.data(), static_cast<std::size_t>(gemm_.shape.m * gemm_.shape.n),
                          compute()));
    OVERLAPSIM_TRY(poison(recv_.data(), counts_.recv, compute()));
    Event lead;
    OVERLAPSIM_TRY(lead.create());
    OVERLAPSIM_TRY(join(comm_stream(), compute(), lead));
    OVERLAPSIM_TRY(collective(comm_stream()));
    OVERLAPSIM_TRY(gemm_.run(0, compute()));  // set 0: the reference's inputs
    OVERLAPSIM_TRY(wait_stream(comm_, comm_stream(), "interference check"));
    OVERLAPSIM_TRY(wait_stream(comm_, compute(), "interference check"));

    CheckInput g;
    g.result = gemm_.out.data();
    g.rows = gemm_.shape.m;
    g.cols = gemm_.shape.n;
    g.dtype = case_.dtype;
    g.samples = sample_positions(g.rows, g.cols, sample_count(gemm_.shape.k),
                                 env_.seed ^ (0x1F7u + static_cast<unsigned>(env_.rank())));
    g.expected = [&](const Sample& s) { return gemm_ref.op_output(env_.rank(), s.row, s.col); };
    gemm_wrong_ = 0;
    OVERLAPSIM_TRY(check_result(env_, g, &gemm_wrong_));
    OVERLAPSIM_TRY(sum_over_ranks(env_, &gemm_wrong_));

    const CollectiveReference coll_ref(op_, counts_.send, case_.dtype, env_.world(), env_.seed, 0);
    return check_collective_result(env_, coll_ref, recv_.data(), counts_.recv, case_.dtype,
                                   env_.seed ^ (0x1F8u + env_.rank()), &coll_wrong_);
  }

  Status emit(const std::vector<std::vector<double>>& samples) {
    const std::string coll = to_string(op_);
    for (int v = 0; v < kVariants; ++v) {
      const auto& s = samples[static_cast<std::size_t>(v)];
      const bool gemm_victim = v == kGemmAlone || v == kGemmBeside;
      const bool beside = v == kGemmBeside || v == kCollBeside;
      if (uncovered_[v] > 0 && env_.rank() == 0)
        std::fprintf(
            stderr,
            "overlap-bench: interference %lldx%lldx%lld %s %llu B ctas %d: %d %s sample(s) "
            "not covered by the other stream, dropped\n",
            static_cast<long long>(gemm_.shape.m), static_cast<long long>(gemm_.shape.n),
            static_cast<long long>(gemm_.shape.k), coll.c_str(),
            static_cast<unsigned long long>(counts_.bytes), ctas_, uncovered_[v],
            gemm_victim ? "GEMM" : "collective");
      if (s.empty()) {
        if (env_.rank() == 0)
          std::fprintf(stderr, "overlap-bench: interference: no covered sample, no row\n");
        continue;
      }
      const Timing t = summarize(s);
      RowBuilder row("interference",
                     gemm_victim ? interference_design("gemm", coll, beside)
                                 : interference_design(coll, "gemm", beside),
                     to_string(case_.dtype));
      row.shape(gemm_.shape).bytes(counts_.bytes).chunks(ctas_).time(t);
      if (gemm_victim) {
        row.flops(2.0 * static_cast<double>(gemm_.shape.m) * gemm_.shape.n * gemm_.shape.k);
      } else {
        row.busbw_factor(busbw_factor(op_, env_.world()));
      }
      env_.emit(row.wrong(gemm_victim ? gemm_wrong_ : coll_wrong_).row());
    }
    return Status::success();
  }

  BenchEnv& env_;
  const BenchCase& case_;
  CommHandle& comm_;
  const GemmUnderTest& gemm_;
  CollectiveOp op_;
  CollectiveCounts counts_;
  const DeviceBuffer& send_;
  DeviceBuffer& recv_;
  int ctas_;
  int gemm_index_ = 0;
  double gemm_s_ = 0, coll_s_ = 0;
  int gemm_burst_ = kMinBurst, coll_burst_ = kMinBurst;
  int colls_beside_ = 0, gemms_beside_ = 0;
  int max_colls_beside_ = 0, max_gemms_beside_ = 0;
  int uncovered_[kVariants] = {0, 0, 0, 0};
  std::uint64_t gemm_wrong_ = 0, coll_wrong_ = 0;
};

// Every buffer and cuBLASLt plan of the case, made before the first collective.
Status allocate_all(BenchEnv& env, const BenchCase& c,
                    std::vector<std::unique_ptr<GemmUnderTest>>* gemms, DeviceBuffer* send,
                    DeviceBuffer* recv) {
  const std::size_t elem = dtype_bytes(c.dtype);
  cudaStream_t stream = env.ctx->compute_stream;
  for (const PairShape& shape : c.shapes) {
    auto g = std::make_unique<GemmUnderTest>();
    g->shape = shape;
    const std::size_t a = static_cast<std::size_t>(shape.m * shape.k);
    const std::size_t b = static_cast<std::size_t>(shape.n * shape.k);
    const int sets = env.rotation_sets((a + b) * elem);
    g->sets.resize(static_cast<std::size_t>(sets));
    for (int s = 0; s < sets; ++s) {
      GemmInputs& in = g->sets[static_cast<std::size_t>(s)];
      OVERLAPSIM_TRY(in.a.allocate(a * elem));
      OVERLAPSIM_TRY(fill_random(in.a.data(), a, c.dtype,
                                 input_seed(env.seed, env.rank(), s, kBufferA), stream));
      OVERLAPSIM_TRY(in.b.allocate(b * elem));
      OVERLAPSIM_TRY(fill_random(in.b.data(), b, c.dtype,
                                 input_seed(env.seed, env.rank(), s, kBufferB), stream));
    }
    const std::size_t out = static_cast<std::size_t>(shape.m * shape.n);
    OVERLAPSIM_TRY(g->out.allocate(out * elem));
    OVERLAPSIM_TRY(fill_random(g->out.data(), out, c.dtype, 8, stream));
    OVERLAPSIM_TRY(g->gemm.initialize(env.lt, {shape.m, shape.n, shape.k}, c.dtype, {}, 256,
                                      env.workspace.data(), env.workspace.bytes()));
    gemms->push_back(std::move(g));
  }
  std::size_t send_count = 0, recv_count = 0;
  for (const std::string& name : c.collectives)
    for (std::uint64_t bytes : c.bytes) {
      const CollectiveCounts k =
          collective_counts(*parse_collective_op(name), bytes, c.dtype, env.world());
      send_count = std::max(send_count, k.send);
      recv_count = std::max(recv_count, k.recv);
    }
  OVERLAPSIM_TRY(send->allocate(send_count * elem));
  OVERLAPSIM_TRY(fill_random(send->data(), send_count, c.dtype,
                             input_seed(env.seed, env.rank(), 0, kBufferCollective), stream));
  OVERLAPSIM_TRY(recv->allocate(recv_count * elem));
  return fill_random(recv->data(), recv_count, c.dtype, 9, stream);
}

}  // namespace

std::string interference_design(const std::string& victim, const std::string& other, bool beside) {
  return victim + "|" + other + (beside ? ":beside" : ":alone");
}

Status run_interference_case(BenchEnv& env, const BenchCase& c) {
  RankContext& ctx = *env.ctx;
  // Fences around every allocation, split and free (harness quiesce): no cudaMalloc,
  // cudaFree or communicator set-up while a peer's NCCL kernel waits for this rank.
  OVERLAPSIM_TRY(quiesce(ctx, "interference: before allocating"));
  std::vector<std::unique_ptr<GemmUnderTest>> gemms;
  DeviceBuffer send, recv;
  OVERLAPSIM_TRY(allocate_all(env, c, &gemms, &send, &recv));
  OVERLAPSIM_TRY(quiesce(ctx, "interference: after allocating"));

  for (int ctas : c.ctas) {
    CommHandle limited;
    if (ctas > 0) {
      OVERLAPSIM_TRY(quiesce(ctx, "interference: before splitting"));
      OVERLAPSIM_TRY(tilewise::make_limited_comm(ctx.comm, ctas, &limited));
      limited.barrier = ctx.comm.barrier;
      OVERLAPSIM_TRY(quiesce(ctx, "interference: after splitting"));
    }
    CommHandle& comm = ctas > 0 ? limited : ctx.comm;
    for (const auto& g : gemms)
      for (const std::string& name : c.collectives) {
        const CollectiveOp op = *parse_collective_op(name);
        for (std::uint64_t bytes : c.bytes) {
          const CollectiveCounts counts = collective_counts(op, bytes, c.dtype, env.world());
          if (counts.send == 0 || counts.recv == 0) continue;
          InterferencePoint point(env, c, comm, *g, op, counts, send, recv, ctas);
          OVERLAPSIM_TRY(point.run());
        }
      }
    if (ctas > 0) {
      OVERLAPSIM_TRY(quiesce(ctx, "interference: before destroying the split"));
      OVERLAPSIM_TRY(tilewise::destroy_comm(&limited));
      OVERLAPSIM_TRY(quiesce(ctx, "interference: after destroying the split"));
    }
  }
  return quiesce(ctx, "interference: before freeing");
}

}  // namespace overlapsim::kernels::bench
