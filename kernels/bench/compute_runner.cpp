// Compute ops alone: gemm (cublas | own), gemv (cublas), embedding (own). Inputs rotate
// through enough sets to exceed L2; one output buffer.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "kernels/bench/bench_env.hpp"
#include "kernels/bench/timing.hpp"
#include "kernels/bench/verify.hpp"
#include "kernels/gemm/own_gemm.hpp"
#include "kernels/harness/fill.hpp"
#include "kernels/ops/embedding_bag.hpp"
#include "kernels/ops/gemm_cublaslt.hpp"

namespace overlapsim::kernels::bench {
namespace {

struct InputSet {
  DeviceBuffer a;        // A, x or the table
  DeviceBuffer b;        // B or W
  DeviceBuffer indices;  // embedding
};

PairOp reference_pair(const std::string& op) {
  if (op == "gemv") return PairOp::GemvAllReduce;
  if (op == "embedding") return PairOp::EmbeddingAllToAll;
  return PairOp::GemmAllReduce;
}

gemm::DType own_dtype(DType dtype) {
  return dtype == DType::BF16 ? gemm::DType::kBf16 : gemm::DType::kFp16;
}

// `count` floats of 1.0 in `buffer` (allocated here).
Status fill_ones(DeviceBuffer* buffer, std::size_t count, cudaStream_t stream) {
  OVERLAPSIM_TRY(buffer->allocate(count * sizeof(float)));
  const std::vector<float> ones(count, 1.0f);
  CUDA_CHECK(cudaMemcpyAsync(buffer->data(), ones.data(), count * sizeof(float),
                             cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return Status::success();
}

}  // namespace

std::string single_op_key(const std::string& op, const std::string& design, DType dtype,
                          const PairShape& s) {
  return op + "|" + design + "|" + to_string(dtype) + "|" + std::to_string(s.m) + "x" +
         std::to_string(s.n) + "x" + std::to_string(s.k) + "|" + std::to_string(s.table_rows);
}

Status run_compute_case(BenchEnv& env, const BenchCase& c) {
  const PairOp ref_op = reference_pair(c.op);
  const bool embedding = c.op == "embedding";
  const std::size_t elem = dtype_bytes(c.dtype);  // inputs
  const DType out_dtype = output_dtype(c.dtype);  // fp8 GEMMs write bf16
  const std::size_t out_elem = dtype_bytes(out_dtype);
  cudaStream_t stream = env.ctx->compute_stream;
  for (const PairShape& shape : c.shapes) {
    const PairSizes sizes = pair_sizes(ref_op, shape, 1);
    const std::size_t input_bytes = (sizes.a + sizes.b) * elem + sizes.indices * 4;
    // Fences around allocation and free (harness quiesce): no cudaMalloc/cudaFree while a
    // peer's NCCL kernel (the max-over-ranks reductions) waits for this rank.
    OVERLAPSIM_TRY(quiesce(*env.ctx, "compute: before allocating"));
    const int sets = env.rotation_sets(input_bytes);
    std::vector<InputSet> inputs(static_cast<std::size_t>(sets));
    DeviceBuffer out;
    OVERLAPSIM_TRY(out.allocate(sizes.c * out_elem));
    for (int s = 0; s < sets; ++s) {
      InputSet& in = inputs[static_cast<std::size_t>(s)];
      OVERLAPSIM_TRY(in.a.allocate(sizes.a * elem));
      OVERLAPSIM_TRY(fill_random(in.a.data(), sizes.a, c.dtype,
                                 input_seed(env.seed, env.rank(), s, kBufferA), stream));
      OVERLAPSIM_TRY(in.b.allocate(sizes.b * elem));
      OVERLAPSIM_TRY(fill_random(in.b.data(), sizes.b, c.dtype,
                                 input_seed(env.seed, env.rank(), s, kBufferB), stream));
      OVERLAPSIM_TRY(in.indices.allocate(sizes.indices * sizeof(std::int32_t)));
      OVERLAPSIM_TRY(
          fill_indices(in.indices.as<std::int32_t>(), sizes.indices,
                       static_cast<std::int32_t>(std::max<std::int64_t>(shape.table_rows, 1)),
                       input_seed(env.seed, env.rank(), s, kBufferIndices), stream));
    }
    OVERLAPSIM_TRY(quiesce(*env.ctx, "compute: after allocating"));
    for (const std::string& design : c.designs) {
      const std::string key = single_op_key(c.op, design, c.dtype, shape);
      if (env.measured.count(key)) continue;
      env.measured.insert(key);

      // One runner per input set: the own GEMM binds its pointers at initialize().
      std::vector<std::function<Status()>> run_set;
      CublasLtGemm cublas;
      DeviceBuffer a_scales, b_scales;  // cublas_block128
      std::vector<std::unique_ptr<gemm::OwnGemm>> own;
      if (embedding) {
        const EmbeddingBagShape e{shape.table_rows, shape.n, shape.m, shape.k};
        for (InputSet& in : inputs) {
          const InputSet* set = &in;
          run_set.push_back([set, e, &out, &c, stream] {
            return embedding_bag_sum(set->a.data(), set->indices.as<std::int32_t>(), out.data(), e,
                                     {0, e.bags, 1, 0}, c.dtype, stream);
          });
        }
      } else if (design == "own") {
        // OwnGemm::initialize may allocate a padding workspace.
        OVERLAPSIM_TRY(quiesce(*env.ctx, "own GEMM: before initializing"));
        for (auto& in : inputs) {
          gemm::GemmArgs args;
          args.m = shape.m;
          args.n = shape.n;
          args.k = shape.k;
          args.dtype = own_dtype(c.dtype);
          args.a = in.a.data();
          args.b = in.b.data();
          args.c = out.data();
          Status can = gemm::OwnGemm::can_implement(args);
          if (!can.ok) {  // e.g. not a Hopper GPU: no row, say why
            if (env.rank() == 0)
              std::fprintf(stderr, "overlap-bench: skipping own GEMM: %s\n", can.message.c_str());
            run_set.clear();
            break;
          }
          own.push_back(std::make_unique<gemm::OwnGemm>());
          OVERLAPSIM_TRY(own.back()->initialize(args));
          gemm::OwnGemm* g = own.back().get();
          run_set.push_back([g, stream] { return g->run(stream); });
        }
        OVERLAPSIM_TRY(quiesce(*env.ctx, "own GEMM: after initializing"));
      } else {
        Fp8BlockScales block;
        if (design == "cublas_block128") {
          // Unit scales (the values, and so the reference, are those of per-tensor scaling);
          // what is timed is the block-scaled kernel's extra work.
          OVERLAPSIM_TRY(quiesce(*env.ctx, "block scales: before allocating"));
          const std::int64_t runs = (shape.k + 127) / 128;
          OVERLAPSIM_TRY(fill_ones(&a_scales, static_cast<std::size_t>(shape.m * runs), stream));
          OVERLAPSIM_TRY(
              fill_ones(&b_scales, static_cast<std::size_t>((shape.n + 127) / 128 * runs), stream));
          OVERLAPSIM_TRY(quiesce(*env.ctx, "block scales: after allocating"));
          block = {a_scales.as<float>(), b_scales.as<float>()};
        }
        OVERLAPSIM_TRY(cublas.initialize(env.lt, {shape.m, shape.n, shape.k}, c.dtype, {}, 256,
                                         env.workspace.data(), env.workspace.bytes(), block));
        for (InputSet& in : inputs) {
          const InputSet* set = &in;
          run_set.push_back([set, &cublas, &out, stream] {
            return cublas.run(set->a.data(), set->b.data(), out.data(), stream);
          });
        }
      }

      if (run_set.empty()) continue;
      Timing timing;
      OVERLAPSIM_TRY(time_iterations(
          *env.ctx, c.warmup, c.iterations, [&](int i) { return run_set[i % sets](); }, &timing));
      OVERLAPSIM_TRY(poison(out.data(), sizes.c, stream));
      OVERLAPSIM_TRY(run_set[0]());
      OVERLAPSIM_TRY(wait_stream(env.ctx->comm, stream, "compute check"));
      const PairReference reference(ref_op, shape, c.dtype, env.world(), env.seed, 0);
      CheckInput check;
      check.result = out.data();
      check.rows = shape.m;
      check.cols = shape.n;
      check.dtype = out_dtype;
      check.samples = sample_positions(shape.m, shape.n, sample_count(shape.k),
                                       env.seed ^ (0xC0u + env.rank()));
      check.expected = [&](const Sample& s) {
        return reference.op_output(env.rank(), s.row, s.col);
      };
      std::uint64_t wrong = 0;
      OVERLAPSIM_TRY(check_result(env, check, &wrong));
      OVERLAPSIM_TRY(sum_over_ranks(env, &wrong));

      env.emit(RowBuilder(c.op, design, to_string(c.dtype))
                   .shape(shape)
                   .time(timing)
                   .flops(compute_flops(ref_op, shape))
                   .wrong(wrong)
                   .row());
      OVERLAPSIM_TRY(quiesce(*env.ctx, "compute: before freeing the design"));
    }
    OVERLAPSIM_TRY(quiesce(*env.ctx, "compute: before freeing"));
  }
  return Status::success();
}

}  // namespace overlapsim::kernels::bench
