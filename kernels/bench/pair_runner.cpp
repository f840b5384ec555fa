// Pairs: per shape, the op alone (cublas; embedding: own) and the collective alone (nccl),
// both on the compute stream, then the designs: sequential, and decomposed for every
// chunk count that splits the shape. When both the parts and sequential are asked for,
// the three are timed interleaved in one loop (time_interleaved), so "sequential against
// the sum of its parts" compares runs under the same clock and power state. Every variant is
// checked after its timing: outputs poisoned, one run, unwritten elements + host-reference samples
// + (after sequential) the element-wise difference from the sequential result.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/bench/allgather_tilewise_runner.hpp"
#include "kernels/bench/bench_env.hpp"
#include "kernels/bench/shaped_runner.hpp"
#include "kernels/bench/tilewise_runner.hpp"
#include "kernels/bench/timing.hpp"
#include "kernels/bench/verify.hpp"
#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/designs/decomposed.hpp"
#include "kernels/designs/sequential.hpp"
#include "kernels/harness/fill.hpp"

namespace overlapsim::kernels::bench {
namespace {

struct PairSet {
  DeviceBuffer a, b, indices, staging, c, out;
  PairBuffers view() const {
    PairBuffers v;
    v.a = a.data();
    v.b = b.data();
    v.indices = indices.as<std::int32_t>();
    v.staging = staging.data();
    v.c = c.data();
    v.out = out.data();
    return v;
  }
};

Status allocate_set(BenchEnv& env, const BenchCase& c, const PairShape& shape, PairOp op, int set,
                    PairSet* s) {
  const PairSizes sizes = pair_sizes(op, shape, env.world());
  const std::size_t elem = dtype_bytes(c.dtype);
  cudaStream_t stream = env.ctx->compute_stream;
  OVERLAPSIM_TRY(s->a.allocate(sizes.a * elem));
  OVERLAPSIM_TRY(s->b.allocate(sizes.b * elem));
  OVERLAPSIM_TRY(s->indices.allocate(sizes.indices * sizeof(std::int32_t)));
  OVERLAPSIM_TRY(s->staging.allocate(sizes.staging * elem));
  OVERLAPSIM_TRY(s->c.allocate(sizes.c * elem));
  OVERLAPSIM_TRY(s->out.allocate(sizes.out * elem));
  OVERLAPSIM_TRY(fill_random(s->a.data(), sizes.a, c.dtype,
                             input_seed(env.seed, env.rank(), set, kBufferA), stream));
  OVERLAPSIM_TRY(fill_random(s->b.data(), sizes.b, c.dtype,
                             input_seed(env.seed, env.rank(), set, kBufferB), stream));
  if (sizes.indices > 0)
    OVERLAPSIM_TRY(fill_indices(s->indices.as<std::int32_t>(), sizes.indices,
                                static_cast<std::int32_t>(shape.table_rows),
                                input_seed(env.seed, env.rank(), set, kBufferIndices), stream));
  // Outputs hold finite data from the start (the op-alone timing of allgather+gemm reads
  // the staging buffer before any gather has filled it).
  OVERLAPSIM_TRY(fill_random(s->staging.data(), sizes.staging, c.dtype, 7, stream));
  OVERLAPSIM_TRY(fill_random(s->c.data(), sizes.c, c.dtype, 8, stream));
  OVERLAPSIM_TRY(fill_random(s->out.data(), sizes.out, c.dtype, 9, stream));
  return Status::success();
}

class PairCaseRunner {
 public:
  PairCaseRunner(BenchEnv& env, const BenchCase& c, PairOp op, const PairShape& shape)
      : env_(env),
        case_(c),
        op_(op),
        shape_(shape),
        reference_(op, shape, c.dtype, env.world(), env.seed, 0) {}

  Status run() {
    const PairSizes sizes = pair_sizes(op_, shape_, env_.world());
    const std::size_t elem = dtype_bytes(case_.dtype);
    // Fences around allocation and free (harness quiesce): no cudaMalloc/cudaFree while a
    // peer's NCCL kernel waits for this rank (one process drives both GPUs; docs/kernels/log.md).
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "pair: before allocating"));
    sets_ = env_.rotation_sets((sizes.a + sizes.b) * elem + sizes.indices * 4);
    buffers_.resize(static_cast<std::size_t>(sets_));
    for (int s = 0; s < sets_; ++s)
      OVERLAPSIM_TRY(allocate_set(env_, case_, shape_, op_, s, &buffers_[s]));
    OVERLAPSIM_TRY(pair_.initialize(&env_.ctx->comm, env_.lt, op_, shape_, case_.dtype,
                                    env_.workspace.data(), env_.workspace.bytes()));
    OVERLAPSIM_TRY(pair_.prepare(1));
    std::vector<int> chunk_counts;
    for (int k : case_.chunks) {
      if (k < 2) continue;
      if (auto why = chunk_error(op_, shape_, env_.world(), k)) {
        if (env_.rank() == 0)
          std::fprintf(stderr, "overlap-bench: %s %lldx%lldx%lld: skipping %d chunks: %s\n",
                       to_string(op_), static_cast<long long>(shape_.m),
                       static_cast<long long>(shape_.n), static_cast<long long>(shape_.k), k,
                       why->c_str());
        continue;
      }
      OVERLAPSIM_TRY(pair_.prepare(k));
      chunk_counts.push_back(k);
    }
    chunk_counts_ = chunk_counts;
    int max_chunks = 1;
    for (int k : chunk_counts) max_chunks = std::max(max_chunks, k);
    OVERLAPSIM_TRY(decomposed_.initialize(max_chunks));
    // Allocated with the rest, before the warm-up: no rank may call cudaMalloc while the
    // other already waits in a NCCL kernel (one process drives both GPUs; see docs/kernels/log.md).
    OVERLAPSIM_TRY(align_.allocate(256));
    OVERLAPSIM_TRY(fill_random(align_.data(), 1, case_.dtype, 10, compute()));
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "pair: after allocating"));
    // Every kernel runs once, alone, before anything overlaps: no lazy module load may
    // happen while a NCCL kernel spins on the other stream (design.md).
    OVERLAPSIM_TRY(run_sequential(pair_, buffers_[0].view(), env_.ctx->compute_stream));
    for (int k : chunk_counts)
      for (int chunk = 0; chunk < k; ++chunk)
        OVERLAPSIM_TRY(pair_.enqueue_op(buffers_[0].view(), k, chunk, env_.ctx->compute_stream));
    OVERLAPSIM_TRY(wait_stream(env_.ctx->comm, env_.ctx->compute_stream, "pair warm-up"));

    const bool interleave_parts =
        case_.parts &&
        std::find(case_.designs.begin(), case_.designs.end(), "sequential") != case_.designs.end();
    if (case_.parts && !interleave_parts) {
      OVERLAPSIM_TRY(measure_op_alone(nullptr));
      OVERLAPSIM_TRY(measure_collective_alone(nullptr));
    }
    for (const std::string& design : case_.designs) {
      if (design == "sequential") {
        if (interleave_parts) {
          OVERLAPSIM_TRY(measure_sequential_with_parts());
        } else {
          OVERLAPSIM_TRY(measure_design(design, 1, nullptr));
        }
      } else if (design == "tilewise" && op_ == PairOp::AllGatherGemm) {
        OVERLAPSIM_TRY(run_allgather_tilewise_rows(env_, case_, shape_, tilewise_io()));
      } else if (design == "tilewise") {
        OVERLAPSIM_TRY(run_tilewise_rows(env_, case_, op_, shape_, tilewise_io()));
      } else if (design == "shaped") {
        OVERLAPSIM_TRY(run_shaped_rows(env_, case_, op_, shape_, tilewise_io()));
      } else {
        for (int k : chunk_counts) OVERLAPSIM_TRY(measure_design(design, k, nullptr));
      }
    }
    return Status::success();
  }

 private:
  cudaStream_t compute() const { return env_.ctx->compute_stream; }
  PairBuffers set(int i) const { return buffers_[static_cast<std::size_t>(i % sets_)].view(); }

  RowBuilder row(const std::string& op, const std::string& design, int chunks,
                 const Timing& t) const {
    return RowBuilder(op, design, to_string(case_.dtype)).shape(shape_).chunks(chunks).time(t);
  }

  Status poison_outputs() {
    const PairSizes sizes = pair_sizes(op_, shape_, env_.world());
    const PairSet& s = buffers_[0];
    OVERLAPSIM_TRY(poison(s.c.data(), sizes.c, compute()));
    if (sizes.out) OVERLAPSIM_TRY(poison(s.out.data(), sizes.out, compute()));
    if (sizes.staging) OVERLAPSIM_TRY(poison(s.staging.data(), sizes.staging, compute()));
    return Status::success();
  }

  Status check(const void* result, std::int64_t rows, bool op_output, const void* same_as,
               std::uint64_t* wrong) {
    CheckInput in;
    in.result = result;
    in.rows = rows;
    in.cols = shape_.n;
    in.dtype = case_.dtype;
    const int terms = op_output ? 1 : env_.world();
    in.samples = sample_positions(rows, shape_.n, sample_count(shape_.k * terms),
                                  env_.seed ^ (0xA11u + static_cast<unsigned>(env_.rank())));
    in.expected = [&](const Sample& s) {
      return op_output ? reference_.op_output(env_.rank(), s.row, s.col)
                       : reference_.result(env_.rank(), s.row, s.col);
    };
    in.same_as = same_as;
    in.same_as_abs_tol = same_as_abs_tol_;
    OVERLAPSIM_TRY(check_result(env_, in, wrong));
    return sum_over_ranks(env_, wrong);
  }

  // The op alone, the collective alone and the sequential pair in one interleaved loop;
  // their rows are emitted in that order (the parts' rows are this pair's own, even when
  // another case already timed the same op alone).
  Status measure_sequential_with_parts() {
    const std::vector<EnqueueIteration> variants{
        [&](int i) { return pair_.enqueue_op(set(i), 1, 0, compute()); },
        [&](int i) { return pair_.enqueue_collective(set(i), 1, 0, compute()); },
        [&](int i) { return run_sequential(pair_, set(i), compute()); }};
    // One element all-reduced between variants: no rank starts a variant's clock while
    // the other is still finishing the previous variant.
    const EnqueueIteration align = [&](int) {
      return all_reduce(env_.ctx->comm, align_.data(), align_.data(), 1, case_.dtype, compute());
    };
    std::vector<Timing> timings;
    OVERLAPSIM_TRY(
        time_interleaved(*env_.ctx, case_.warmup, case_.iterations, variants, align, &timings));
    OVERLAPSIM_TRY(measure_op_alone(&timings[0]));
    OVERLAPSIM_TRY(measure_collective_alone(&timings[1]));
    return measure_design("sequential", 1, &timings[2]);
  }

  // `interleaved`: the time from measure_sequential_with_parts' loop, else timed here.
  Status measure_op_alone(const Timing* interleaved) {
    const char* impl = op_ == PairOp::EmbeddingAllToAll ? "own" : "cublas";
    const PairShape key_shape =
        op_ == PairOp::EmbeddingAllToAll ? shape_ : PairShape{shape_.m, shape_.n, shape_.k, 0};
    const std::string key = single_op_key(compute_name(op_), impl, case_.dtype, key_shape);
    if (interleaved == nullptr && env_.measured.count(key)) return Status::success();
    env_.measured.insert(key);
    Timing t;
    if (interleaved != nullptr) {
      t = *interleaved;
    } else {
      OVERLAPSIM_TRY(time_iterations(
          *env_.ctx, case_.warmup, case_.iterations,
          [&](int i) { return pair_.enqueue_op(set(i), 1, 0, compute()); }, &t));
    }
    OVERLAPSIM_TRY(poison_outputs());
    if (collective_first(op_)) OVERLAPSIM_TRY(pair_.enqueue_collective(set(0), 1, 0, compute()));
    OVERLAPSIM_TRY(pair_.enqueue_op(set(0), 1, 0, compute()));
    OVERLAPSIM_TRY(wait_stream(env_.ctx->comm, compute(), "op check"));
    std::uint64_t wrong = 0;
    OVERLAPSIM_TRY(check(buffers_[0].c.data(), shape_.m, true, nullptr, &wrong));
    env_.emit(
        row(compute_name(op_), impl, 1, t).flops(compute_flops(op_, shape_)).wrong(wrong).row());
    return Status::success();
  }

  Status measure_collective_alone(const Timing* interleaved) {
    Timing t;
    if (interleaved != nullptr) {
      t = *interleaved;
    } else {
      OVERLAPSIM_TRY(time_iterations(
          *env_.ctx, case_.warmup, case_.iterations,
          [&](int i) { return pair_.enqueue_collective(set(i), 1, 0, compute()); }, &t));
    }
    std::uint64_t wrong = 0;
    OVERLAPSIM_TRY(
        run_and_check([&] { return run_sequential(pair_, set(0), compute()); }, nullptr, &wrong));
    const CollectiveOp coll = pair_collective(op_);
    env_.emit(row(to_string(coll), "nccl", 1, t)
                  .bytes(collective_bytes(op_, shape_, env_.world(), case_.dtype))
                  .busbw_factor(busbw_factor(coll, env_.world()))
                  .wrong(wrong)
                  .row());
    return Status::success();
  }

  Status run_and_check(const std::function<Status()>& run_once, const void* same_as,
                       std::uint64_t* wrong) {
    OVERLAPSIM_TRY(poison_outputs());
    OVERLAPSIM_TRY(run_once());
    OVERLAPSIM_TRY(wait_stream(env_.ctx->comm, compute(), "design check"));
    const PairBuffers v = buffers_[0].view();
    return check(v.result(op_), reference_.result_rows(), false, same_as, wrong);
  }

  // What the tile-wise rows (tilewise_runner.hpp) borrow: the input sets and the checks.
  TilewiseCaseIo tilewise_io() {
    TilewiseCaseIo io;
    io.set = [this](int i) { return set(i); };
    io.sets = sets_;
    io.sequential = [this](int i) { return run_sequential(pair_, set(i), compute()); };
    io.op_alone = [this](int i) { return pair_.enqueue_op(set(i), 1, 0, compute()); };
    io.collective_alone = [this](int i) {
      return pair_.enqueue_collective(set(i), 1, 0, compute());
    };
    io.align = [this](int) {
      return all_reduce(env_.ctx->comm, align_.data(), align_.data(), 1, case_.dtype, compute());
    };
    for (int k : chunk_counts_)
      io.decomposed.emplace_back(k, [this, k](int i) {
        return decomposed_.run(pair_, set(i), k, compute(), env_.ctx->comm_stream);
      });
    io.run_and_check = [this](const std::function<Status()>& once, std::uint64_t* wrong) {
      return run_and_check(once, have_sequential_ ? sequential_result_.data() : nullptr, wrong);
    };
    return io;
  }

  Status measure_design(const std::string& design, int chunks, const Timing* interleaved) {
    const auto enqueue = [&](int i) -> Status {
      if (design == "sequential") return run_sequential(pair_, set(i), compute());
      return decomposed_.run(pair_, set(i), chunks, compute(), env_.ctx->comm_stream);
    };
    Timing t;
    if (interleaved != nullptr) {
      t = *interleaved;
    } else {
      OVERLAPSIM_TRY(time_iterations(*env_.ctx, case_.warmup, case_.iterations, enqueue, &t));
    }
    std::uint64_t wrong = 0;
    const bool is_sequential = design == "sequential";
    OVERLAPSIM_TRY(run_and_check(
        [&] { return enqueue(0); },
        is_sequential || !have_sequential_ ? nullptr : sequential_result_.data(), &wrong));
    if (is_sequential) OVERLAPSIM_TRY(keep_sequential_result());
    env_.emit(row(to_string(op_), design, chunks, t)
                  .bytes(collective_bytes(op_, shape_, env_.world(), case_.dtype))
                  .flops(compute_flops(op_, shape_))
                  .busbw_factor(busbw_factor(pair_collective(op_), env_.world()))
                  .wrong(wrong)
                  .row());
    return Status::success();
  }

  // The sequential result (just checked) becomes what every decomposed run must equal;
  // its typical magnitude sets the absolute part of that comparison's tolerance.
  Status keep_sequential_result() {
    const std::size_t count =
        static_cast<std::size_t>(reference_.result_rows() * reference_.result_cols());
    const std::size_t bytes = count * dtype_bytes(case_.dtype);
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "pair: before allocating the sequential result"));
    OVERLAPSIM_TRY(sequential_result_.allocate(bytes));
    OVERLAPSIM_TRY(quiesce(*env_.ctx, "pair: after allocating the sequential result"));
    CUDA_CHECK(cudaMemcpyAsync(sequential_result_.data(), buffers_[0].view().result(op_), bytes,
                               cudaMemcpyDeviceToDevice, compute()));
    OVERLAPSIM_TRY(wait_stream(env_.ctx->comm, compute(), "keep sequential result"));
    const auto samples = sample_positions(reference_.result_rows(), shape_.n, 16, env_.seed);
    double sum_sq = 0;
    for (const Sample& s : samples) {
      const Expected e = reference_.result(env_.rank(), s.row, s.col);
      sum_sq += e.value * e.value;
    }
    same_as_abs_tol_ = 4.0 * unit_roundoff(case_.dtype) * std::sqrt(sum_sq / samples.size());
    have_sequential_ = true;
    return Status::success();
  }

  BenchEnv& env_;
  const BenchCase& case_;
  PairOp op_;
  PairShape shape_;
  PairReference reference_;
  PairKernels pair_;
  DecomposedDesign decomposed_;
  std::vector<PairSet> buffers_;
  std::vector<int> chunk_counts_;  // the decomposed chunk counts this shape allows
  int sets_ = 1;
  DeviceBuffer sequential_result_;
  DeviceBuffer align_;  // one element all-reduced between interleaved variants
  bool have_sequential_ = false;
  double same_as_abs_tol_ = 0;
};

}  // namespace

Status run_pair_case(BenchEnv& env, const BenchCase& c) {
  const PairOp op = *parse_pair_op(c.op);
  for (const PairShape& shape : c.shapes) {
    if (auto error = shape_error(op, shape, env.world()))
      return Status::failure(c.op + ": " + *error);
    PairCaseRunner runner(env, c, op, shape);
    OVERLAPSIM_TRY(runner.run());
    OVERLAPSIM_TRY(quiesce(*env.ctx, "pair: before freeing"));  // runner's buffers go next
  }
  return Status::success();
}

}  // namespace overlapsim::kernels::bench
