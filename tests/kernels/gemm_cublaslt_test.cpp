// cuBLASLt GEMM against a float64 host reference: fresh random inputs, poisoned output,
// irregular shapes, batching over row blocks (the decomposed design's chunks).
#include "kernels/ops/gemm_cublaslt.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/fill.hpp"
#include "kernels/harness/random_values.hpp"
#include "tests/kernels/gpu_test_support.hpp"

namespace overlapsim::kernels {
namespace {

using testing::fresh_seed;
using testing::to_host;

class CublasLtGemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OVERLAPSIM_REQUIRE_GPUS(1);
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cublasLtCreate(&lt_), CUBLAS_STATUS_SUCCESS);
    ASSERT_TRUE(workspace_.allocate(32 << 20).ok);
  }
  void TearDown() override {
    if (lt_) cublasLtDestroy(lt_);
  }

  // Runs C = A * B^T (batched when asked) and returns ||C - ref|| / ||ref|| over all
  // elements, after checking every element was written and is within tolerance.
  double run_and_compare(GemmShape shape, DType dtype, GemmBatching batching = {},
                         bool block_scales = false) {
    const std::uint64_t seed_a = fresh_seed();
    const std::uint64_t seed_b = fresh_seed();
    const std::int64_t batches = batching.count;
    const std::int64_t a_rows =
        batches > 1 ? batching.stride_a_elems / shape.k * (batches - 1) + shape.m : shape.m;
    const std::int64_t c_rows =
        batches > 1 ? batching.stride_c_elems / shape.n * (batches - 1) + shape.m : shape.m;
    const std::int64_t in_bytes = static_cast<std::int64_t>(dtype_bytes(dtype));
    const DType out_dtype = output_dtype(dtype);  // fp8 inputs write bf16
    DeviceBuffer a, b, c;
    EXPECT_TRUE(a.allocate(a_rows * shape.k * in_bytes).ok);
    EXPECT_TRUE(b.allocate(shape.n * shape.k * in_bytes).ok);
    EXPECT_TRUE(c.allocate(c_rows * shape.n * 2).ok);
    EXPECT_TRUE(fill_random(a.data(), a_rows * shape.k, dtype, seed_a, nullptr).ok);
    EXPECT_TRUE(fill_random(b.data(), shape.n * shape.k, dtype, seed_b, nullptr).ok);
    EXPECT_TRUE(poison(c.data(), c_rows * shape.n, nullptr).ok);
    // Block scaling with unit scales: the same values as per-tensor scaling.
    DeviceBuffer a_scales, b_scales;
    Fp8BlockScales scales;
    if (block_scales) {
      const std::int64_t runs = (shape.k + 127) / 128;
      const std::vector<float> ones(static_cast<std::size_t>(shape.m * runs), 1.0f);
      EXPECT_TRUE(a_scales.allocate(ones.size() * sizeof(float)).ok);
      EXPECT_TRUE(b_scales.allocate(ones.size() * sizeof(float)).ok);  // M x runs >= ceil(N / 128) x runs here
      EXPECT_EQ(cudaMemcpy(a_scales.data(), ones.data(), ones.size() * 4, cudaMemcpyHostToDevice),
                cudaSuccess);
      EXPECT_EQ(cudaMemcpy(b_scales.data(), ones.data(), ones.size() * 4, cudaMemcpyHostToDevice),
                cudaSuccess);
      scales = {a_scales.as<float>(), b_scales.as<float>()};
    }
    CublasLtGemm gemm;
    const Status init = gemm.initialize(lt_, shape, dtype, batching, 256, workspace_.data(),
                                        workspace_.bytes(), scales);
    EXPECT_TRUE(init.ok) << init.message;
    const Status run = gemm.run(a.data(), b.data(), c.data(), nullptr);
    EXPECT_TRUE(run.ok) << run.message;
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<double> out = to_host(c.data(), c_rows * shape.n, out_dtype);
    // Host copies of the inputs (regenerated, not read back), then the float64 reference
    // in parallel over output rows.
    std::vector<double> host_a(a_rows * shape.k), host_b(shape.n * shape.k);
    for (std::size_t i = 0; i < host_a.size(); ++i) host_a[i] = random_value(dtype, seed_a, i);
    for (std::size_t i = 0; i < host_b.size(); ++i) host_b[i] = random_value(dtype, seed_b, i);
    const double eps = out_dtype == DType::BF16 ? 0x1p-8 : 0x1p-11;
    const std::int64_t rows = batches * shape.m;
    const int workers =
        static_cast<int>(std::max(1u, std::min(16u, std::thread::hardware_concurrency())));
    std::vector<double> diff_part(workers, 0.0), ref_part(workers, 0.0);
    std::vector<std::int64_t> outside_part(workers, 0);
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; ++w) {
      threads.emplace_back([&, w] {
        for (std::int64_t r = w; r < rows; r += workers) {
          const std::int64_t batch = r / shape.m, i = r % shape.m;
          const std::int64_t a_row =
              batch * (batches > 1 ? batching.stride_a_elems / shape.k : 0) + i;
          const std::int64_t c_row =
              batch * (batches > 1 ? batching.stride_c_elems / shape.n : 0) + i;
          const double* a_ptr = &host_a[a_row * shape.k];
          for (std::int64_t j = 0; j < shape.n; ++j) {
            const double* b_ptr = &host_b[j * shape.k];
            double ref = 0, rms = 0;
            for (std::int64_t kk = 0; kk < shape.k; ++kk) {
              const double p = a_ptr[kk] * b_ptr[kk];
              ref += p;
              rms += p * p;
            }
            const double got = out[c_row * shape.n + j];
            const double tol = 4 * eps * (std::fabs(ref) + std::sqrt(rms));
            if (!(std::fabs(got - ref) <= tol)) ++outside_part[w];
            diff_part[w] += (got - ref) * (got - ref);
            ref_part[w] += ref * ref;
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    double diff_sq = 0, ref_sq = 0;
    std::int64_t outside = 0;
    for (int w = 0; w < workers; ++w) {
      diff_sq += diff_part[w];
      ref_sq += ref_part[w];
      outside += outside_part[w];
    }
    EXPECT_EQ(outside, 0) << "elements outside tolerance (or unwritten)";
    return std::sqrt(diff_sq / ref_sq);
  }

  cublasLtHandle_t lt_ = nullptr;
  DeviceBuffer workspace_;
};

TEST_F(CublasLtGemmTest, IrregularShapeMatchesFloat64Reference) {
  const double error = run_and_compare({1000, 3000, 777}, DType::BF16);
  EXPECT_LT(error, 1e-2);  // bf16 output rounding: ~2e-3 expected
  EXPECT_GT(error, 0.0);   // a bf16 result equal to float64 everywhere would be suspicious
}

TEST_F(CublasLtGemmTest, Fp16AndTinyShapes) {
  EXPECT_LT(run_and_compare({129, 257, 72}, DType::FP16), 2e-3);
  EXPECT_LT(run_and_compare({1, 1, 8}, DType::BF16), 1e-2);
  EXPECT_LT(run_and_compare({1, 4096, 512}, DType::BF16), 1e-2);  // the GEMV path
}

// FP8 (E4M3) inputs, bf16 output: the products of 3-bit mantissas are exact, so the error
// is the bf16 rounding of the result (and the accumulation cuBLASLt uses by default).
TEST_F(CublasLtGemmTest, Fp8InputsMatchFloat64Reference) {
  const double error = run_and_compare({1000, 3000, 784}, DType::FP8_E4M3);
  EXPECT_LT(error, 1e-2);
  EXPECT_GT(error, 0.0);
  EXPECT_LT(run_and_compare({512, 1024, 2048}, DType::FP8_E4M3), 1e-2);
}

// DeepSeek-V3's block scaling (1 x 128 activation runs, 128 x 128 weight blocks), unit
// scales: the same result as per-tensor scaling, within the same tolerance.
TEST_F(CublasLtGemmTest, Fp8BlockScaledMatchesFloat64Reference) {
  EXPECT_LT(run_and_compare({1024, 2048, 1024}, DType::FP8_E4M3, {}, true), 1e-2);
}

TEST_F(CublasLtGemmTest, BatchedRowBlocksMatchReference) {
  // Two row blocks 256 rows apart in A and 384 apart in C (the decomposed layouts).
  GemmBatching batching{2, 256 * 320, 384 * 192};
  EXPECT_LT(run_and_compare({128, 192, 320}, DType::BF16, batching), 1e-2);
}

TEST_F(CublasLtGemmTest, RejectsMisalignedPointersAndBadShapes) {
  EXPECT_FALSE(CublasLtGemm::can_implement({0, 8, 8}, DType::BF16).ok);
  CublasLtGemm gemm;
  ASSERT_TRUE(gemm.initialize(lt_, {64, 64, 64}, DType::BF16, {}, 256, workspace_.data(),
                              workspace_.bytes())
                  .ok);
  DeviceBuffer buffer;
  ASSERT_TRUE(buffer.allocate(1 << 20).ok);
  const char* base = buffer.as<char>();
  const Status status = gemm.run(base + 2, base, buffer.as<char>() + 4096, nullptr);
  EXPECT_FALSE(status.ok);
  EXPECT_NE(status.message.find("aligned"), std::string::npos) << status.message;
}

// The heuristic's algorithm reads back with a defined tile, with and without an SM target
// (the shaped design's plans), and without split-K where the caller forbade it.
TEST_F(CublasLtGemmTest, AlgoInfoReportsTheChosenTile) {
  for (int target : {0, 100}) {
    GemmRunOptions options;
    options.sm_count_target = target;
    options.no_split_k = true;
    CublasLtGemm gemm;
    ASSERT_TRUE(gemm.initialize(lt_, {4096, 4096, 2048}, DType::BF16, {}, 256, workspace_.data(),
                                workspace_.bytes(), {}, options)
                    .ok);
    CublasLtAlgoInfo info;
    ASSERT_TRUE(gemm.algo_info(&info).ok);
    EXPECT_GT(info.tile_m(), 0) << "tile id " << info.tile_id;
    EXPECT_GT(info.tile_n(), 0) << "tile id " << info.tile_id;
    EXPECT_EQ(info.splitk_num, 1);
    EXPECT_GE(info.waves, 0.0f);
  }
  CublasLtGemm unset;
  CublasLtAlgoInfo info;
  EXPECT_FALSE(unset.algo_info(&info).ok);
}

// No GPU needed: the enumerators' extents and the transpose to the project's m x n.
TEST(CublasLtAlgoDims, TilesAndClustersDecode) {
  const CublasLtDims t = cublaslt_tile_dims(CUBLASLT_MATMUL_TILE_128x256);
  EXPECT_EQ(t.rows, 128);
  EXPECT_EQ(t.cols, 256);
  EXPECT_EQ(cublaslt_tile_dims(CUBLASLT_MATMUL_TILE_256x128).rows, 256);
  EXPECT_EQ(cublaslt_tile_dims(CUBLASLT_MATMUL_TILE_UNDEFINED).rows, 0);
  EXPECT_EQ(cublaslt_tile_dims(1 << 20).cols, 0);
  // Every named tile decodes to non-zero extents that are multiples of 8.
  for (int id = 1; id < CUBLASLT_MATMUL_TILE_END; ++id) {
    const CublasLtDims d = cublaslt_tile_dims(id);
    EXPECT_TRUE(d.rows > 0 && d.cols > 0 && d.rows % 8 == 0 && d.cols % 8 == 0) << "tile " << id;
  }
  for (int id = CUBLASLT_CLUSTER_SHAPE_1x1x1; id < CUBLASLT_CLUSTER_SHAPE_END; ++id) {
    const CublasLtDims d = cublaslt_cluster_dims(id);
    EXPECT_TRUE(d.rows >= 1 && d.cols >= 1) << "cluster " << id;
  }
  EXPECT_EQ(cublaslt_cluster_dims(CUBLASLT_CLUSTER_SHAPE_AUTO).rows, 0);
  // cuBLASLt computes C^T: its M x N tile 128x256 is our m x n 256x128.
  CublasLtAlgoInfo info;
  info.tile = t;
  info.cluster = cublaslt_cluster_dims(CUBLASLT_CLUSTER_SHAPE_2x1x1);
  EXPECT_EQ(info.tile_m(), 256);
  EXPECT_EQ(info.tile_n(), 128);
  EXPECT_EQ(info.cluster_m(), 1);
  EXPECT_EQ(info.cluster_n(), 2);
  EXPECT_EQ(tile_text(info), "256x128");
}

// No GPU needed: shape rules only.
TEST(CublasLtGemmShapes, Fp8NeedsKMultipleOf16) {
  EXPECT_TRUE(CublasLtGemm::can_implement({8, 8, 777}, DType::BF16).ok);
  const Status fp8 = CublasLtGemm::can_implement({8, 8, 777}, DType::FP8_E4M3);
  EXPECT_FALSE(fp8.ok);
  EXPECT_NE(fp8.message.find("multiple of 16"), std::string::npos) << fp8.message;
  EXPECT_TRUE(CublasLtGemm::can_implement({8, 8, 784}, DType::FP8_E4M3).ok);
}

}  // namespace
}  // namespace overlapsim::kernels
