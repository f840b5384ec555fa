// Own Hopper GEMM: argument checks and the host tile order run everywhere; everything that
// launches the kernel skips without an sm_90 GPU. Inputs are fresh random values every
// run (seed printed), outputs are poisoned with 0xFFFF (NaN in bf16/fp16) before each run.
#include "kernels/gemm/own_gemm.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/gemm/cublaslt_gemm.hpp"
#include "kernels/gemm/signal_probe.hpp"

namespace overlapsim::kernels::gemm {
namespace {

constexpr uint16_t kPoison = 0xFFFF;

#define ASSERT_STATUS(expr)                          \
  do {                                               \
    const ::overlapsim::kernels::Status s_ = (expr); \
    ASSERT_TRUE(s_.ok) << s_.message;                \
  } while (0)
#define ASSERT_CUDA(expr)                                                  \
  do {                                                                     \
    const cudaError_t e_ = (expr);                                         \
    ASSERT_EQ(e_, cudaSuccess) << #expr << ": " << cudaGetErrorString(e_); \
  } while (0)

// Skips the test unless device 0 is an sm_90 GPU.
#define SKIP_WITHOUT_HOPPER()                        \
  do {                                               \
    std::string why_;                                \
    if (!hopper_present(why_)) GTEST_SKIP() << why_; \
  } while (0)

bool hopper_present(std::string& why) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    why = "no CUDA GPU present";
    return false;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    why = "cannot read device 0's properties";
    return false;
  }
  if (prop.major != 9 || prop.minor != 0) {
    why = std::string("the own GEMM needs sm_90, device 0 is ") + prop.name;
    return false;
  }
  return true;
}

uint16_t to_bits(float v, DType t) {
  if (t == DType::kBf16) return static_cast<__nv_bfloat16_raw>(__float2bfloat16(v)).x;
  return static_cast<__half_raw>(__float2half(v)).x;
}

double from_bits(uint16_t bits, DType t) {
  if (t == DType::kBf16) {
    __nv_bfloat16_raw raw;
    raw.x = bits;
    return __bfloat162float(__nv_bfloat16(raw));
  }
  __half_raw raw;
  raw.x = bits;
  return __half2float(__half(raw));
}

struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(size_t bytes) {
    if (cudaMalloc(&ptr, std::max<size_t>(bytes, 16)) != cudaSuccess) ptr = nullptr;
  }
  ~DeviceBuffer() {
    if (ptr) cudaFree(ptr);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
};

uint64_t fresh_seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

std::vector<uint16_t> random_matrix(int64_t count, DType t, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<uint16_t> out(static_cast<size_t>(count));
  for (auto& v : out) {
    float x = dist(rng);
    if (x == 0.0f) x = 0.5f;
    v = to_bits(x, t);
  }
  return out;
}

// C[i][j] = Σ_k A[i][k]·B[j][k] in float64 on the bf16/fp16-rounded inputs, rows split
// across threads.
std::vector<double> reference_gemm(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b,
                                   int64_t m, int64_t n, int64_t k, DType t) {
  std::vector<double> ad(a.size()), bd(b.size()), c(static_cast<size_t>(m * n));
  for (size_t i = 0; i < a.size(); ++i) ad[i] = from_bits(a[i], t);
  for (size_t i = 0; i < b.size(); ++i) bd[i] = from_bits(b[i], t);
  const int workers =
      static_cast<int>(std::max(1u, std::min(16u, std::thread::hardware_concurrency())));
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w) {
    pool.emplace_back([&, w] {
      for (int64_t i = w; i < m; i += workers)
        for (int64_t j = 0; j < n; ++j) {
          const double* ar = &ad[i * k];
          const double* br = &bd[j * k];
          double s = 0;
          for (int64_t p = 0; p < k; ++p) s += ar[p] * br[p];
          c[i * n + j] = s;
        }
    });
  }
  for (auto& th : pool) th.join();
  return c;
}

struct Problem {
  int64_t m, n, k;
  DType dtype;
  std::vector<uint16_t> a, b;
  std::unique_ptr<DeviceBuffer> a_dev, b_dev, c_dev;
};

std::unique_ptr<Problem> make_problem(int64_t m, int64_t n, int64_t k, DType t, uint64_t seed) {
  auto p = std::make_unique<Problem>();
  p->m = m;
  p->n = n;
  p->k = k;
  p->dtype = t;
  std::mt19937_64 rng(seed);
  p->a = random_matrix(m * k, t, rng);
  p->b = random_matrix(n * k, t, rng);
  p->a_dev = std::make_unique<DeviceBuffer>(p->a.size() * 2);
  p->b_dev = std::make_unique<DeviceBuffer>(p->b.size() * 2);
  p->c_dev = std::make_unique<DeviceBuffer>(static_cast<size_t>(m * n) * 2);
  if (!p->a_dev->ptr || !p->b_dev->ptr || !p->c_dev->ptr) return nullptr;
  if (cudaMemcpy(p->a_dev->ptr, p->a.data(), p->a.size() * 2, cudaMemcpyHostToDevice) !=
          cudaSuccess ||
      cudaMemcpy(p->b_dev->ptr, p->b.data(), p->b.size() * 2, cudaMemcpyHostToDevice) !=
          cudaSuccess)
    return nullptr;
  return p;
}

GemmArgs args_of(const Problem& p, void* c) {
  return {p.m, p.n, p.k, p.dtype, p.a_dev->ptr, p.b_dev->ptr, c};
}

// Runs the own GEMM on a poisoned C and returns C's bits.
std::vector<uint16_t> run_own(const Problem& p, const SchedulerOptions& sched, std::string& error) {
  std::vector<uint16_t> c(static_cast<size_t>(p.m * p.n));
  cudaMemset(p.c_dev->ptr, 0xFF, c.size() * 2);
  OwnGemm gemm;
  Status s = gemm.initialize(args_of(p, p.c_dev->ptr), {}, sched);
  if (s.ok) s = gemm.run(nullptr);
  if (!s.ok) {
    error = s.message;
    return {};
  }
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    error = cudaGetErrorString(e);
    return {};
  }
  cudaMemcpy(c.data(), p.c_dev->ptr, c.size() * 2, cudaMemcpyDeviceToHost);
  return c;
}

struct Comparison {
  double rel_err = 0;
  int64_t unwritten = 0;  // still the poison pattern
  int64_t non_finite = 0;
};

template <class Ref>
Comparison compare(const std::vector<uint16_t>& c, const Ref& ref, DType t) {
  Comparison out;
  double num = 0, den = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i] == kPoison) ++out.unwritten;
    const double v = from_bits(c[i], t);
    if (!std::isfinite(v)) {
      ++out.non_finite;
      continue;
    }
    const double r = ref(i);
    num += (v - r) * (v - r);
    den += r * r;
  }
  out.rel_err = std::sqrt(num / den);
  return out;
}

TEST(OwnGemmArgs, RejectsEmptyShapesAndNullPointers) {
  int dummy = 0;
  const Status zero_m = OwnGemm::can_implement({0, 8, 8, DType::kBf16, &dummy, &dummy, &dummy});
  EXPECT_FALSE(zero_m.ok);
  EXPECT_NE(zero_m.message.find("m=0"), std::string::npos) << zero_m.message;
  const Status null_c = OwnGemm::can_implement({8, 8, 8, DType::kBf16, &dummy, &dummy, nullptr});
  EXPECT_FALSE(null_c.ok);
  SchedulerOptions bad;
  bad.group_m = 0;
  EXPECT_FALSE(OwnGemm::can_implement({8, 8, 8, DType::kBf16, &dummy, &dummy, &dummy}, bad).ok);
  OwnGemm gemm;
  EXPECT_FALSE(gemm.run(nullptr).ok);  // run before initialize
}

TEST(OwnGemmArgs, RejectsRotationsTheScheduleCannotHonour) {
  int dummy = 0;
  const GemmArgs args{1024, 512, 64, DType::kBf16, &dummy, &dummy, &dummy};  // 8 tile rows
  SchedulerOptions s;
  s.rotate_world = 3;  // 8 rows do not split into 3 parts
  EXPECT_FALSE(OwnGemm::can_implement(args, s).ok);
  s.rotate_world = 2;
  s.rotate_rank = 2;  // no such rank
  EXPECT_FALSE(OwnGemm::can_implement(args, s).ok);
  s.rotate_rank = 1;
  s.group_m = 3;  // does not divide the 4 rows per part
  const Status bad_group = OwnGemm::can_implement(args, s);
  EXPECT_FALSE(bad_group.ok);
  EXPECT_NE(bad_group.message.find("group_m"), std::string::npos) << bad_group.message;
  s.group_m = 4;
  s.row_blocks = 2;  // rotation and row blocks do not combine
  EXPECT_FALSE(OwnGemm::can_implement(args, s).ok);
}

TEST(TileOrder, RankRotationVisitsTheOtherRanksPartsFirstAndItsOwnLast) {
  struct Case {
    int64_t m, n;
    int world, group_m;
  };
  for (const Case c : {Case{2048, 1000, 2, 8}, Case{4096, 4096, 4, 8}, Case{768, 300, 3, 2},
                       Case{1024, 256, 2, 4}}) {
    const int32_t tiles_m = static_cast<int32_t>(c.m / 128);
    const int32_t tiles_n = static_cast<int32_t>((c.n + 255) / 256);
    const int32_t rows = tiles_m / c.world;
    const int32_t part_tiles = rows * tiles_n;
    std::vector<TileCoord> relative_of_rank0;
    for (int rank = 0; rank < c.world; ++rank) {
      SchedulerOptions s;
      s.group_m = c.group_m;
      s.rotate_world = c.world;
      s.rotate_rank = rank;
      const auto order = tile_order(c.m, c.n, s);
      ASSERT_EQ(order.size(), static_cast<size_t>(tiles_m) * tiles_n);
      std::vector<int> seen(order.size(), 0);
      std::vector<TileCoord> relative;
      for (size_t item = 0; item < order.size(); ++item) {
        const TileCoord t = order[item];
        ++seen[static_cast<size_t>(t.tile_m) * tiles_n + t.tile_n];
        // Item i lies in part (rank + 1 + i / part_tiles) mod world: own part last.
        const int position = static_cast<int>(item / part_tiles);
        EXPECT_EQ(t.tile_m / rows, (rank + 1 + position) % c.world)
            << "rank " << rank << " item " << item;
        relative.push_back({t.tile_m % rows, t.tile_n});
      }
      for (int v : seen) EXPECT_EQ(v, 1);
      // Inside a part the order is the same on every rank (part-relative coordinates).
      for (size_t item = 0; item < relative.size(); ++item) {
        EXPECT_EQ(relative[item].tile_m, relative[item % part_tiles].tile_m);
        EXPECT_EQ(relative[item].tile_n, relative[item % part_tiles].tile_n);
      }
      if (rank == 0) relative_of_rank0 = relative;
      for (size_t item = 0; item < relative.size(); ++item)
        EXPECT_EQ(relative[item].tile_m, relative_of_rank0[item].tile_m);
    }
  }
  // No rotation: the plain schedule, identical to the older overload.
  SchedulerOptions plain;
  const auto a = tile_order(2048, 1000, plain);
  const auto b = tile_order(2048, 1000, 132);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(a[i].tile_m * 100 + a[i].tile_n, b[i].tile_m * 100 + b[i].tile_n);
}

// v3's cluster pairs: when they apply (effective_cluster_m), items 2q and 2q+1 are tile
// rows 2p and 2p+1 of one column (they share the multicast B tile), every tile comes once,
// and the pair order is the v2 order of double-height rows; otherwise the v2 order itself.
TEST(TileOrder, ClusterPairsShareAColumnAndFallBackWhereTheyCannot) {
  struct Case {
    int64_t m, n;
    int num_ctas, group_m, row_blocks, rotate_world, expected_cluster;
  };
  for (const Case c : {Case{8192, 8192, 132, 8, 1, 1, 2}, Case{1000, 3000, 0, 8, 1, 1, 2},
                       Case{129, 257, 0, 8, 1, 1, 2}, Case{384, 512, 0, 8, 1, 1, 1},
                       Case{4096, 4096, 37, 8, 1, 1, 1}, Case{4096, 4096, 132, 3, 1, 1, 1},
                       Case{2048, 1000, 116, 8, 2, 1, 2}, Case{1536, 1000, 116, 8, 4, 1, 1},
                       Case{4096, 1000, 132, 8, 1, 2, 2}, Case{768, 300, 0, 2, 1, 3, 2},
                       Case{1152, 300, 0, 1, 1, 3, 1}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + " ctas " +
                 std::to_string(c.num_ctas) + " group_m " + std::to_string(c.group_m));
    SchedulerOptions s;
    s.num_ctas = c.num_ctas;
    s.group_m = c.group_m;
    s.row_blocks = c.row_blocks;
    s.rotate_world = c.rotate_world;
    s.rotate_rank = c.rotate_world - 1;
    s.cluster_m = 2;
    EXPECT_EQ(effective_cluster_m(c.m, c.n, s), c.expected_cluster);
    const auto order = tile_order(c.m, c.n, s);
    const int32_t tiles_m = static_cast<int32_t>((c.m + 127) / 128);
    const int32_t tiles_n = static_cast<int32_t>((c.n + 255) / 256);
    ASSERT_EQ(order.size(), static_cast<size_t>(tiles_m) * tiles_n);
    std::vector<int> seen(order.size(), 0);
    for (const TileCoord t : order) ++seen[static_cast<size_t>(t.tile_m) * tiles_n + t.tile_n];
    for (int v : seen) EXPECT_EQ(v, 1);
    SchedulerOptions v2 = s;
    v2.cluster_m = 1;
    const auto v2_order = tile_order(c.m, c.n, v2);
    if (c.expected_cluster == 1) {
      for (size_t i = 0; i < order.size(); ++i)
        EXPECT_EQ(order[i].tile_m * 100000 + order[i].tile_n,
                  v2_order[i].tile_m * 100000 + v2_order[i].tile_n);
      continue;
    }
    for (size_t i = 0; i + 1 < order.size(); i += 2) {
      EXPECT_EQ(order[i].tile_m % 2, 0) << "item " << i;
      EXPECT_EQ(order[i + 1].tile_m, order[i].tile_m + 1) << "item " << i;
      EXPECT_EQ(order[i + 1].tile_n, order[i].tile_n) << "item " << i;
    }
    // Rotation: parts are still visited whole, the own part last.
    if (c.rotate_world > 1) {
      const int32_t rows = tiles_m / c.rotate_world;
      const size_t part_tiles = static_cast<size_t>(rows) * tiles_n;
      for (size_t i = 0; i < order.size(); ++i)
        EXPECT_EQ(order[i].tile_m / rows,
                  (s.rotate_rank + 1 + static_cast<int>(i / part_tiles)) % c.rotate_world);
    }
  }
}

TEST(TileOrder, VisitsEveryTileOnceInGroupedRaster) {
  struct Case {
    int64_t m, n;
    int group_m;
  };
  for (const Case c : {Case{1000, 3000, 8}, Case{8192, 8192, 8}, Case{129, 257, 3}, Case{1, 1, 8},
                       Case{4096, 12288, 16}}) {
    const auto order = tile_order(c.m, c.n, 132, c.group_m);
    const int32_t tiles_m = static_cast<int32_t>((c.m + 127) / 128);
    const int32_t tiles_n = static_cast<int32_t>((c.n + 255) / 256);
    ASSERT_EQ(order.size(), static_cast<size_t>(tiles_m) * tiles_n);
    std::vector<int> seen(order.size(), 0);
    for (size_t item = 0; item < order.size(); ++item) {
      const TileCoord t = order[item];
      ASSERT_GE(t.tile_m, 0);
      ASSERT_LT(t.tile_m, tiles_m);
      ASSERT_GE(t.tile_n, 0);
      ASSERT_LT(t.tile_n, tiles_n);
      ++seen[static_cast<size_t>(t.tile_m) * tiles_n + t.tile_n];
      // Grouped raster: item i lies in row-group i / (group_m·tiles_n).
      EXPECT_EQ(t.tile_m / c.group_m, static_cast<int32_t>(item / (c.group_m * tiles_n)));
    }
    for (int s : seen) EXPECT_EQ(s, 1);
    // Item-order compact offsets: contiguous, in item order, M·N elements in all.
    const auto offsets = compact_offsets_in_item_order(c.m, c.n, 132, c.group_m);
    int64_t next = 0;
    for (const TileCoord t : order) {
      const int64_t tile = int64_t{t.tile_m} * tiles_n + t.tile_n;
      EXPECT_EQ(offsets[tile], next);
      next += std::min<int64_t>(128, c.m - t.tile_m * 128) *
              std::min<int64_t>(256, c.n - t.tile_n * 256);
    }
    EXPECT_EQ(next, c.m * c.n);
  }
}

TEST(OwnGemm, UnsupportedGpuIsReportedClearly) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    GTEST_SKIP() << "no CUDA GPU present";
  cudaDeviceProp prop{};
  ASSERT_CUDA(cudaGetDeviceProperties(&prop, 0));
  if (prop.major == 9 && prop.minor == 0) GTEST_SKIP() << "device 0 is sm_90: nothing to refuse";
  DeviceBuffer buf(1024);
  const Status s = OwnGemm::can_implement({8, 8, 8, DType::kBf16, buf.ptr, buf.ptr, buf.ptr});
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("unsupported GPU (needs sm_90)"), std::string::npos) << s.message;
}

TEST(OwnGemm, SmallAndIrregularShapesMatchFloat64) {
  SKIP_WITHOUT_HOPPER();
  struct Case {
    int64_t m, n, k;
    DType t;
  };
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (const Case c : {Case{1000, 3000, 777, DType::kBf16}, Case{129, 257, 72, DType::kBf16},
                       Case{64, 8, 16, DType::kBf16}, Case{1, 1, 8, DType::kBf16},
                       Case{300, 513, 1000, DType::kBf16}, Case{257, 255, 131, DType::kFp16},
                       Case{1000, 3000, 777, DType::kFp16}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
                 (c.t == DType::kBf16 ? " bf16" : " fp16"));
    auto p = make_problem(c.m, c.n, c.k, c.t, seed + c.m * 31 + c.k);
    ASSERT_TRUE(p) << "allocation failed";
    std::string error;
    const auto out = run_own(*p, {}, error);
    ASSERT_TRUE(error.empty()) << error;
    const auto ref = reference_gemm(p->a, p->b, c.m, c.n, c.k, c.t);
    const Comparison cmp = compare(
        out, [&](size_t i) { return ref[i]; }, c.t);
    EXPECT_EQ(cmp.unwritten, 0);
    EXPECT_EQ(cmp.non_finite, 0);
    EXPECT_LT(cmp.rel_err, 1e-2);
    std::printf("[own gemm] %ldx%ldx%ld %s rel err vs float64 %.3e\n", c.m, c.n, c.k,
                c.t == DType::kBf16 ? "bf16" : "fp16", cmp.rel_err);
  }
}

TEST(OwnGemm, LargeShapesMatchCublasLt) {
  SKIP_WITHOUT_HOPPER();
  struct Case {
    int64_t m, n, k;
    int num_ctas;
  };
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (const Case c :
       {Case{4096, 4096, 4096, 0}, Case{8192, 8192, 2048, 0}, Case{2048, 6144, 3000, 100}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
    auto p = make_problem(c.m, c.n, c.k, DType::kBf16, seed + c.n);
    ASSERT_TRUE(p);
    SchedulerOptions sched;
    sched.num_ctas = c.num_ctas;
    std::string error;
    const auto out = run_own(*p, sched, error);
    ASSERT_TRUE(error.empty()) << error;
    DeviceBuffer ref_dev(static_cast<size_t>(c.m * c.n) * 2);
    CublasLtGemm lt;
    ASSERT_STATUS(lt.initialize(args_of(*p, ref_dev.ptr)));
    ASSERT_STATUS(lt.run(nullptr));
    ASSERT_CUDA(cudaDeviceSynchronize());
    std::vector<uint16_t> ref(out.size());
    ASSERT_CUDA(cudaMemcpy(ref.data(), ref_dev.ptr, ref.size() * 2, cudaMemcpyDeviceToHost));
    const Comparison cmp = compare(
        out, [&](size_t i) { return from_bits(ref[i], DType::kBf16); }, DType::kBf16);
    EXPECT_EQ(cmp.unwritten, 0);
    EXPECT_EQ(cmp.non_finite, 0);
    EXPECT_LT(cmp.rel_err, 1e-2);
    std::printf("[own gemm] %ldx%ldx%ld rel err vs cuBLASLt %.3e\n", c.m, c.n, c.k, cmp.rel_err);
  }
}

// Groups of `waves_per_group` consecutive waves; returns the group of each tile.
std::vector<int32_t> wave_groups(int64_t m, int64_t n, int num_ctas, int waves_per_group,
                                 int32_t& groups) {
  const auto order = tile_order(m, n, num_ctas);
  const int32_t tiles_n = static_cast<int32_t>((n + 255) / 256);
  std::vector<int32_t> group(order.size());
  groups = 0;
  for (size_t item = 0; item < order.size(); ++item) {
    const int32_t g = static_cast<int32_t>(item / num_ctas / waves_per_group);
    group[static_cast<size_t>(order[item].tile_m) * tiles_n + order[item].tile_n] = g;
    groups = std::max(groups, g + 1);
  }
  return group;
}

TEST(OwnGemm, RemappedStoresHoldTheSameValuesAndCountersCountTiles) {
  SKIP_WITHOUT_HOPPER();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  struct Case {
    int64_t m, n, k;
  };
  for (const Case c : {Case{1000, 3000, 777}, Case{2048, 2048, 512}, Case{333, 4097, 64}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
    auto p = make_problem(c.m, c.n, c.k, DType::kBf16, seed + c.n);
    ASSERT_TRUE(p);
    std::string error;
    const auto natural = run_own(*p, {}, error);
    ASSERT_TRUE(error.empty()) << error;

    OwnGemm probe_size;
    ASSERT_STATUS(probe_size.initialize(args_of(*p, p->c_dev->ptr)));
    const int num_ctas = probe_size.num_ctas();
    const auto offsets = compact_offsets_in_item_order(c.m, c.n, num_ctas);
    int32_t groups = 0;
    const auto tile_group = wave_groups(c.m, c.n, num_ctas, 2, groups);
    DeviceBuffer offsets_dev(offsets.size() * 8), group_dev(tile_group.size() * 4),
        counters_dev(static_cast<size_t>(groups) * 4), region(natural.size() * 2);
    ASSERT_CUDA(
        cudaMemcpy(offsets_dev.ptr, offsets.data(), offsets.size() * 8, cudaMemcpyHostToDevice));
    ASSERT_CUDA(cudaMemcpy(group_dev.ptr, tile_group.data(), tile_group.size() * 4,
                           cudaMemcpyHostToDevice));
    // Every epilogue store shape: whole, spread over 8 k-blocks, 16-byte vector stores.
    for (const int shape : {0, 1, 2}) {
      SCOPED_TRACE("store shape " + std::to_string(shape));
      SchedulerOptions sched;
      sched.store_steps = shape == 0 ? 1 : 8;
      sched.vector_stores = shape == 2;
      ASSERT_CUDA(cudaMemset(counters_dev.ptr, 0, static_cast<size_t>(groups) * 4));
      ASSERT_CUDA(cudaMemset(region.ptr, 0xFF, natural.size() * 2));
      EpilogueArgs epi;
      epi.tile_offset_elems = offsets_dev.as<int64_t>();
      epi.group_counters = counters_dev.as<uint32_t>();
      epi.tile_group = group_dev.as<int32_t>();
      OwnGemm gemm;
      ASSERT_STATUS(gemm.initialize(args_of(*p, region.ptr), epi, sched));
      ASSERT_STATUS(gemm.run(nullptr));
      ASSERT_CUDA(cudaDeviceSynchronize());
      std::vector<uint16_t> remapped(natural.size());
      ASSERT_CUDA(
          cudaMemcpy(remapped.data(), region.ptr, remapped.size() * 2, cudaMemcpyDeviceToHost));
      std::vector<uint32_t> counters(groups);
      ASSERT_CUDA(cudaMemcpy(counters.data(), counters_dev.ptr, counters.size() * 4,
                             cudaMemcpyDeviceToHost));

      const int32_t tiles_n = gemm.tiles_n();
      int64_t mismatches = 0;
      std::vector<uint32_t> expected(groups, 0);
      for (int32_t tm = 0; tm < gemm.tiles_m(); ++tm)
        for (int32_t tn = 0; tn < tiles_n; ++tn) {
          const int64_t tile = int64_t{tm} * tiles_n + tn;
          ++expected[tile_group[tile]];
          const int64_t rows = std::min<int64_t>(128, c.m - tm * 128);
          const int64_t cols = std::min<int64_t>(256, c.n - tn * 256);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t col = 0; col < cols; ++col) {
              const uint16_t want = natural[(tm * 128 + r) * c.n + tn * 256 + col];
              const uint16_t got = remapped[offsets[tile] + r * cols + col];
              if (want != got || got == kPoison) ++mismatches;
            }
        }
      EXPECT_EQ(mismatches, 0) << "remapped tiles differ from the natural store";
      for (int32_t g = 0; g < groups; ++g) EXPECT_EQ(counters[g], expected[g]) << "group " << g;
    }
  }
}

TEST(OwnGemm, SignalNeverPrecedesItsData) {
  SKIP_WITHOUT_HOPPER();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t m = 4096, n = 8192, k = 2048;
  auto p = make_problem(m, n, k, DType::kBf16, seed);
  ASSERT_TRUE(p);
  int sms = 0;
  ASSERT_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  // The probe occupies one SM; a persistent GEMM needing it would wait on the probe forever.
  SchedulerOptions sched;
  sched.num_ctas = sms - 2;
  for (const bool defer : {true, false}) {
    SCOPED_TRACE(defer ? "deferred stores" : "immediate stores");
    sched.defer_stores = defer;
    const auto offsets = compact_offsets_in_item_order(m, n, sched.num_ctas);
    int32_t groups = 0;
    const auto tile_group = wave_groups(m, n, sched.num_ctas, 1, groups);
    // Each group's region: the item-order offsets make it [begin, end).
    std::vector<int64_t> begin(groups, INT64_MAX), end(groups, 0);
    std::vector<int32_t> tiles(groups, 0);
    const int32_t tiles_n = static_cast<int32_t>((n + 255) / 256);
    for (size_t tile = 0; tile < offsets.size(); ++tile) {
      const int32_t g = tile_group[tile];
      const int64_t tm = static_cast<int64_t>(tile) / tiles_n,
                    tn = static_cast<int64_t>(tile) % tiles_n;
      const int64_t size =
          std::min<int64_t>(128, m - tm * 128) * std::min<int64_t>(256, n - tn * 256);
      begin[g] = std::min(begin[g], offsets[tile]);
      end[g] = std::max(end[g], offsets[tile] + size);
      ++tiles[g];
    }
    DeviceBuffer offsets_dev(offsets.size() * 8), group_dev(tile_group.size() * 4),
        counters_dev(groups * 4), tiles_dev(groups * 4), begin_dev(groups * 8), end_dev(groups * 8),
        result_dev(3 * 4), region(static_cast<size_t>(m * n) * 2);
    ASSERT_CUDA(
        cudaMemcpy(offsets_dev.ptr, offsets.data(), offsets.size() * 8, cudaMemcpyHostToDevice));
    ASSERT_CUDA(cudaMemcpy(group_dev.ptr, tile_group.data(), tile_group.size() * 4,
                           cudaMemcpyHostToDevice));
    ASSERT_CUDA(cudaMemcpy(tiles_dev.ptr, tiles.data(), groups * 4, cudaMemcpyHostToDevice));
    ASSERT_CUDA(cudaMemcpy(begin_dev.ptr, begin.data(), groups * 8, cudaMemcpyHostToDevice));
    ASSERT_CUDA(cudaMemcpy(end_dev.ptr, end.data(), groups * 8, cudaMemcpyHostToDevice));

    EpilogueArgs epi;
    epi.tile_offset_elems = offsets_dev.as<int64_t>();
    epi.group_counters = counters_dev.as<uint32_t>();
    epi.tile_group = group_dev.as<int32_t>();
    OwnGemm gemm;
    // initialize() loads the GEMM's module; the probe's is loaded here, before any wait.
    ASSERT_STATUS(gemm.initialize(args_of(*p, region.ptr), epi, sched));
    ASSERT_STATUS(preload_signal_probe());
    int lowest = 0, highest = 0;
    ASSERT_CUDA(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
    cudaStream_t compute, watch;
    ASSERT_CUDA(cudaStreamCreateWithPriority(&compute, cudaStreamNonBlocking, lowest));
    ASSERT_CUDA(cudaStreamCreateWithPriority(&watch, cudaStreamNonBlocking, highest));

    SignalProbeArgs probe;
    probe.group_counters = counters_dev.as<uint32_t>();
    probe.group_tiles = tiles_dev.as<int32_t>();
    probe.region_begin = begin_dev.as<int64_t>();
    probe.region_end = end_dev.as<int64_t>();
    probe.groups = groups;
    probe.data = region.as<uint16_t>();
    probe.poison = kPoison;
    probe.result = result_dev.as<int32_t>();
    int32_t waited_total = 0;
    for (int rep = 0; rep < 5; ++rep) {
      ASSERT_CUDA(cudaMemset(counters_dev.ptr, 0, groups * 4));
      ASSERT_CUDA(cudaMemset(result_dev.ptr, 0, 3 * 4));
      ASSERT_CUDA(cudaMemset(region.ptr, 0xFF, static_cast<size_t>(m * n) * 2));
      ASSERT_CUDA(cudaDeviceSynchronize());
      ASSERT_STATUS(launch_signal_probe(probe, watch));
      ASSERT_STATUS(gemm.run(compute));
      ASSERT_CUDA(cudaDeviceSynchronize());
      int32_t result[3] = {};
      ASSERT_CUDA(cudaMemcpy(result, result_dev.ptr, sizeof(result), cudaMemcpyDeviceToHost));
      EXPECT_EQ(result[0], 0) << "elements still poisoned after their group's signal (rep " << rep
                              << ")";
      EXPECT_EQ(result[2], 0) << "groups never signalled (rep " << rep << ")";
      waited_total += result[1];
    }
    std::printf(
        "[own gemm] signal probe (%s stores): %d groups x 5 runs, %d found incomplete on "
        "first look\n",
        defer ? "deferred" : "immediate", groups, waited_total);
    cudaStreamDestroy(compute);
    cudaStreamDestroy(watch);
  }
}

TEST(OwnGemm, DeferredAndImmediateStoresAgreeBitwise) {
  SKIP_WITHOUT_HOPPER();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  struct Case {
    int64_t m, n, k;
  };
  for (const Case c : {Case{1000, 3000, 777}, Case{4096, 4096, 1024}, Case{129, 257, 72}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
    auto p = make_problem(c.m, c.n, c.k, DType::kBf16, seed + c.k);
    ASSERT_TRUE(p);
    SchedulerOptions deferred, immediate;
    deferred.defer_stores = true;
    immediate.defer_stores = false;
    std::string error;
    const auto a = run_own(*p, deferred, error);
    ASSERT_TRUE(error.empty()) << error;
    const auto b = run_own(*p, immediate, error);
    ASSERT_TRUE(error.empty()) << error;
    ASSERT_EQ(a.size(), b.size());
    EXPECT_TRUE(a == b) << "deferred and immediate stores differ";
    EXPECT_EQ(std::count(a.begin(), a.end(), kPoison), 0);
  }
}

// v3 (clusters of 2, B multicast) and v2 run the same wgmma sequence per tile: the
// results must agree bit for bit, edge tiles (a B slice wholly beyond N: 129x257) and the
// K padding path (777) included; deferred and immediate stores both.
TEST(OwnGemm, ClusterPairsAndSingleCtasAgreeBitwise) {
  SKIP_WITHOUT_HOPPER();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  struct Case {
    int64_t m, n, k;
    int num_ctas;
  };
  for (const Case c : {Case{1000, 3000, 777, 0}, Case{4096, 4096, 1024, 0}, Case{129, 257, 72, 0},
                       Case{2048, 6144, 3000, 100}, Case{8192, 1024, 512, 12}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
    auto p = make_problem(c.m, c.n, c.k, DType::kBf16, seed + c.k);
    ASSERT_TRUE(p);
    for (const bool defer : {true, false}) {
      SchedulerOptions pairs, single;
      pairs.num_ctas = single.num_ctas = c.num_ctas;
      pairs.defer_stores = single.defer_stores = defer;
      pairs.cluster_m = 2;
      single.cluster_m = 1;
      ASSERT_EQ(effective_cluster_m(c.m, c.n, pairs), 2);
      std::string error;
      const auto a = run_own(*p, pairs, error);
      ASSERT_TRUE(error.empty()) << error;
      const auto b = run_own(*p, single, error);
      ASSERT_TRUE(error.empty()) << error;
      ASSERT_EQ(a.size(), b.size());
      size_t differ = 0;
      for (size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
      EXPECT_EQ(differ, 0u) << "elements where clusters of 2 and single CTAs differ (defer "
                            << defer << ")";
      EXPECT_EQ(std::count(a.begin(), a.end(), kPoison), 0);
    }
  }
}

// The epilogue's store shapes (SchedulerOptions::store_steps, vector_stores) move the same
// values: bit for bit equal to the whole scalar store, for both cluster sizes, edge tiles
// and a row stride that rules the 16-byte path out (n = 1028) included.
TEST(OwnGemm, StoreStepsAndVectorStoresAgreeBitwise) {
  SKIP_WITHOUT_HOPPER();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  struct Case {
    int64_t m, n, k;
  };
  for (const Case c :
       {Case{1000, 3000, 777}, Case{4096, 4096, 1024}, Case{512, 1028, 64}, Case{384, 2048, 128}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
    auto p = make_problem(c.m, c.n, c.k, DType::kBf16, seed + c.m);
    ASSERT_TRUE(p);
    for (const int cluster : {1, 2}) {
      SchedulerOptions base;
      base.cluster_m = cluster;
      base.store_steps = 1;
      base.vector_stores = false;
      std::string error;
      const auto want = run_own(*p, base, error);
      ASSERT_TRUE(error.empty()) << error;
      EXPECT_EQ(std::count(want.begin(), want.end(), kPoison), 0);
      for (const int steps : {1, 2, 8}) {
        for (const bool vector : {false, true}) {
          for (const bool defer : {true, false}) {
            SchedulerOptions s = base;
            s.store_steps = steps;
            s.vector_stores = vector;
            s.defer_stores = defer;
            const auto got = run_own(*p, s, error);
            ASSERT_TRUE(error.empty()) << error;
            EXPECT_TRUE(got == want) << "cluster " << cluster << " steps " << steps << " vector "
                                     << vector << " defer " << defer;
          }
        }
      }
    }
  }
}

TEST(OwnGemm, DeviceTileOrderMatchesHostReplica) {
  SKIP_WITHOUT_HOPPER();
  struct Case {
    int64_t m, n, k;
    int num_ctas, group_m;
  };
  const uint64_t seed = fresh_seed();
  for (const Case c : {Case{1000, 3000, 777, 0, 8}, Case{4096, 4096, 256, 37, 3},
                       Case{8192, 2048, 128, 132, 16}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + " ctas " +
                 std::to_string(c.num_ctas));
    auto p = make_problem(c.m, c.n, c.k, DType::kBf16, seed + c.m);
    ASSERT_TRUE(p);
    SchedulerOptions sched;
    sched.num_ctas = c.num_ctas;
    sched.group_m = c.group_m;
    OwnGemm gemm;
    ASSERT_STATUS(gemm.initialize(args_of(*p, p->c_dev->ptr), {}, sched));
    const size_t tiles = static_cast<size_t>(gemm.tiles_m()) * gemm.tiles_n();
    DeviceBuffer record(tiles * 8);
    ASSERT_CUDA(cudaMemset(record.ptr, 0xFF, tiles * 8));
    EpilogueArgs epi;
    epi.order_record = record.as<int32_t>();
    ASSERT_STATUS(gemm.initialize(args_of(*p, p->c_dev->ptr), epi, sched));
    ASSERT_STATUS(gemm.run(nullptr));
    ASSERT_CUDA(cudaDeviceSynchronize());
    std::vector<int32_t> rec(tiles * 2);
    ASSERT_CUDA(cudaMemcpy(rec.data(), record.ptr, tiles * 8, cudaMemcpyDeviceToHost));
    const auto order = tile_order(c.m, c.n, gemm.num_ctas(), c.group_m);
    ASSERT_EQ(order.size(), tiles);
    int64_t wrong = 0;
    for (size_t item = 0; item < order.size(); ++item) {
      const size_t tile =
          static_cast<size_t>(order[item].tile_m) * gemm.tiles_n() + order[item].tile_n;
      if (rec[2 * tile] != static_cast<int32_t>(item) ||
          rec[2 * tile + 1] != static_cast<int32_t>(item % gemm.num_ctas()))
        ++wrong;
    }
    EXPECT_EQ(wrong, 0) << "tiles whose device item/CTA differ from tile_order()";
  }
}

// The rank-rotated order (the tile-wise copy-engine transport) on the device against the host
// replica, for every rank of 2 and 4.
TEST(OwnGemm, DeviceRotatedTileOrderMatchesHostReplica) {
  SKIP_WITHOUT_HOPPER();
  const uint64_t seed = fresh_seed();
  const int64_t m = 4096, n = 1000, k = 128;
  auto p = make_problem(m, n, k, DType::kBf16, seed);
  ASSERT_TRUE(p);
  // 29 CTAs: v2 order (odd, no pairs); 28: v3 pairs.
  for (const int ctas : {29, 28})
    for (int world : {2, 4}) {
      for (int rank = 0; rank < world; ++rank) {
        SCOPED_TRACE("world " + std::to_string(world) + " rank " + std::to_string(rank) + " ctas " +
                     std::to_string(ctas));
        SchedulerOptions sched;
        sched.num_ctas = ctas;
        sched.rotate_world = world;
        sched.rotate_rank = rank;
        sched.cluster_m = 2;
        const size_t tiles = static_cast<size_t>(m / 128) * ((n + 255) / 256);
        DeviceBuffer record(tiles * 8);
        ASSERT_CUDA(cudaMemset(record.ptr, 0xFF, tiles * 8));
        EpilogueArgs epi;
        epi.order_record = record.as<int32_t>();
        OwnGemm gemm;
        ASSERT_STATUS(gemm.initialize(args_of(*p, p->c_dev->ptr), epi, sched));
        EXPECT_EQ(gemm.cluster_m(), ctas % 2 == 0 ? 2 : 1);
        ASSERT_STATUS(gemm.run(nullptr));
        ASSERT_CUDA(cudaDeviceSynchronize());
        std::vector<int32_t> rec(tiles * 2);
        ASSERT_CUDA(cudaMemcpy(rec.data(), record.ptr, tiles * 8, cudaMemcpyDeviceToHost));
        const auto order = tile_order(m, n, sched);
        int64_t wrong = 0;
        for (size_t item = 0; item < order.size(); ++item) {
          const size_t tile =
              static_cast<size_t>(order[item].tile_m) * gemm.tiles_n() + order[item].tile_n;
          if (rec[2 * tile] != static_cast<int32_t>(item) ||
              rec[2 * tile + 1] != static_cast<int32_t>(item % ctas))
            ++wrong;
        }
        EXPECT_EQ(wrong, 0) << "tiles whose device item/CTA differ from tile_order(m, n, sched)";
      }
    }
}

// The split last wave (SchedulerOptions::split_k_tail), host side: every tile's k-blocks are
// covered exactly once, by consecutive items (so by different CTAs of one sub-wave), the tile's
// last part (its finisher, which alone runs the epilogue) comes after all its other parts, and
// only the tail is split.
TEST(TileOrder, SplitTailCoversEveryKBlockOnceWithTheFinisherLast) {
  struct Case {
    int32_t tiles, ctas, split, k_blocks;
  };
  for (const Case c :
       {Case{512, 132, 2, 64}, Case{512, 132, 4, 64}, Case{576, 132, 3, 192}, Case{528, 132, 2, 32},
        Case{100, 132, 2, 16}, Case{7, 3, 8, 9}, Case{512, 132, 4, 3}, Case{1, 132, 2, 2}}) {
    SCOPED_TRACE(std::to_string(c.tiles) + " tiles, " + std::to_string(c.ctas) + " CTAs, split " +
                 std::to_string(c.split) + ", " + std::to_string(c.k_blocks) + " k-blocks");
    const int32_t first = split_tail_first(c.tiles, c.ctas, c.split, c.k_blocks);
    if (c.k_blocks < c.split) {
      EXPECT_EQ(first, c.tiles) << "fewer k-blocks than parts: no split";
      continue;
    }
    const int32_t rest = c.tiles % c.ctas;
    EXPECT_EQ(first, c.tiles - (rest > 0 ? rest : std::min(c.tiles, c.ctas)));
    const int32_t items = split_work_items(c.tiles, first, c.split);
    EXPECT_EQ(items, first + (c.tiles - first) * c.split);
    std::vector<std::vector<int32_t>> covered(c.tiles, std::vector<int32_t>(c.k_blocks, 0));
    std::vector<int32_t> finisher(c.tiles, -1), last_part_item(c.tiles, -1), finals(c.tiles, 0);
    for (int32_t item = 0; item < items; ++item) {
      const WorkUnit u = work_unit(item, c.k_blocks, first, c.split);
      ASSERT_GE(u.tile_item, 0);
      ASSERT_LT(u.tile_item, c.tiles);
      EXPECT_LT(u.kb_begin, u.kb_end) << "an empty part";
      for (int32_t kb = u.kb_begin; kb < u.kb_end; ++kb) ++covered[u.tile_item][kb];
      if (u.tile_item < first) {
        EXPECT_EQ(u.tail, -1);
        EXPECT_TRUE(u.final);
        EXPECT_EQ(item, u.tile_item) << "the untouched items keep their index";
      } else {
        EXPECT_EQ(u.tail, u.tile_item - first);
        EXPECT_EQ(u.final, u.part == c.split - 1);
        // Parts of one tile are consecutive items, so on c.split different CTAs.
        EXPECT_EQ(item, first + u.tail * c.split + u.part);
      }
      last_part_item[u.tile_item] = std::max(last_part_item[u.tile_item], item);
      if (u.final) {
        ++finals[u.tile_item];
        finisher[u.tile_item] = item;
      }
    }
    for (int32_t t = 0; t < c.tiles; ++t) {
      EXPECT_EQ(finals[t], 1) << "tile " << t << " must run its epilogue exactly once";
      EXPECT_EQ(finisher[t], last_part_item[t]) << "tile " << t << ": finisher is not last";
      for (int32_t kb = 0; kb < c.k_blocks; ++kb)
        ASSERT_EQ(covered[t][kb], 1) << "tile " << t << " k-block " << kb;
    }
  }
  EXPECT_EQ(split_tail_first(512, 132, 1, 64), 512) << "split 1 is off";
  EXPECT_EQ(split_work_items(512, 512, 1), 512);
}

TEST(OwnGemmArgs, SplitTailIsCheckedAndRulesOutClusterPairs) {
  int dummy = 0;
  SchedulerOptions bad;
  bad.split_k_tail = 9;
  const Status s =
      OwnGemm::can_implement({256, 256, 256, DType::kBf16, &dummy, &dummy, &dummy}, bad);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("split_k_tail"), std::string::npos) << s.message;
  bad.split_k_tail = 0;
  EXPECT_FALSE(
      OwnGemm::can_implement({256, 256, 256, DType::kBf16, &dummy, &dummy, &dummy}, bad).ok);
  SchedulerOptions pairs;
  pairs.cluster_m = 2;
  EXPECT_EQ(effective_cluster_m(4096, 4096, pairs), 2);
  pairs.split_k_tail = 2;
  EXPECT_EQ(effective_cluster_m(4096, 4096, pairs), 1);
}

// The split last wave on the GPU: within fp32 rounding of the unsplit GEMM (its K sums run in
// another order, so not bit for bit), within bf16 of cuBLASLt, every element written, the same
// bits on every call (the finisher adds the parts in part order) including 200 calls back to
// back (the counters reset themselves), deferred and immediate stores, padded K and edge tiles.
TEST(OwnGemm, SplitTailMatchesUnsplitWithinRoundingAndRepeatsBitwise) {
  SKIP_WITHOUT_HOPPER();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  struct Case {
    int64_t m, n, k;
    int num_ctas;
  };
  for (const Case c :
       {Case{4096, 4096, 4096, 0}, Case{2048, 9216, 1024, 0}, Case{1000, 3000, 777, 0},
        Case{129, 257, 72, 0}, Case{2048, 2048, 512, 37}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
    auto p = make_problem(c.m, c.n, c.k, DType::kBf16, seed + c.k);
    ASSERT_TRUE(p);
    SchedulerOptions plain;
    plain.num_ctas = c.num_ctas;
    std::string error;
    const auto unsplit = run_own(*p, plain, error);
    ASSERT_TRUE(error.empty()) << error;
    for (const int split : {2, 3, 4}) {
      for (const bool defer : {true, false}) {
        SCOPED_TRACE("split " + std::to_string(split) + (defer ? " deferred" : " immediate"));
        SchedulerOptions sched = plain;
        sched.split_k_tail = split;
        sched.defer_stores = defer;
        const auto a = run_own(*p, sched, error);
        ASSERT_TRUE(error.empty()) << error;
        const auto b = run_own(*p, sched, error);
        ASSERT_TRUE(error.empty()) << error;
        EXPECT_TRUE(a == b) << "two calls of the split GEMM differ";
        const Comparison cmp = compare(
            a, [&](size_t i) { return from_bits(unsplit[i], DType::kBf16); }, DType::kBf16);
        EXPECT_EQ(cmp.unwritten, 0);
        EXPECT_EQ(cmp.non_finite, 0);
        EXPECT_LT(cmp.rel_err, 5e-3);
        int64_t differ = 0;
        for (size_t i = 0; i < a.size(); ++i) differ += a[i] != unsplit[i];
        std::printf(
            "[own gemm split] %ldx%ldx%ld split %d %s: rel err vs unsplit %.3e, %ld of %zu "
            "elements differ\n",
            c.m, c.n, c.k, split, defer ? "deferred" : "immediate", cmp.rel_err, differ, a.size());
      }
    }
    // 200 calls back to back on one stream, then the bits of the first call.
    SchedulerOptions sched = plain;
    sched.split_k_tail = 2;
    const auto first = run_own(*p, sched, error);
    ASSERT_TRUE(error.empty()) << error;
    OwnGemm gemm;
    ASSERT_STATUS(gemm.initialize(args_of(*p, p->c_dev->ptr), {}, sched));
    ASSERT_CUDA(cudaMemset(p->c_dev->ptr, 0xFF, first.size() * 2));
    for (int call = 0; call < 200; ++call) ASSERT_STATUS(gemm.run(nullptr));
    ASSERT_CUDA(cudaDeviceSynchronize());
    ASSERT_STATUS(gemm.check_split_wait());
    std::vector<uint16_t> last(first.size());
    ASSERT_CUDA(cudaMemcpy(last.data(), p->c_dev->ptr, last.size() * 2, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(last == first) << "the 200th back-to-back call differs from a single call";
  }
}

// With the split, every tile's counter still moves exactly once (after its whole sum is
// stored), the record shows the tile's finisher (item = the tile's place in tile_order(), CTA
// = the finisher's), and remapped stores hold the natural store's values.
TEST(OwnGemm, SplitTailSignalsEveryTileOnceFromItsFinisher) {
  SKIP_WITHOUT_HOPPER();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t m = 4096, n = 4096, k = 1024;
  auto p = make_problem(m, n, k, DType::kBf16, seed);
  ASSERT_TRUE(p);
  for (const int split : {2, 4}) {
    SCOPED_TRACE("split " + std::to_string(split));
    SchedulerOptions sched;
    sched.split_k_tail = split;
    std::string error;
    const auto natural = run_own(*p, sched, error);
    ASSERT_TRUE(error.empty()) << error;
    OwnGemm gemm;
    ASSERT_STATUS(gemm.initialize(args_of(*p, p->c_dev->ptr), {}, sched));
    const int num_ctas = gemm.num_ctas();
    const size_t tiles = static_cast<size_t>(gemm.tiles_m()) * gemm.tiles_n();
    ASSERT_LT(gemm.split_first(), static_cast<int32_t>(tiles));
    EXPECT_EQ(gemm.split_parts(), split);
    const auto offsets = compact_offsets_in_item_order(m, n, num_ctas);
    std::vector<int32_t> tile_group(tiles);
    for (size_t t = 0; t < tiles; ++t) tile_group[t] = static_cast<int32_t>(t % 7);
    DeviceBuffer offsets_dev(tiles * 8), group_dev(tiles * 4), counters_dev(7 * 4),
        region(natural.size() * 2), record(tiles * 8);
    ASSERT_CUDA(cudaMemcpy(offsets_dev.ptr, offsets.data(), tiles * 8, cudaMemcpyHostToDevice));
    ASSERT_CUDA(cudaMemcpy(group_dev.ptr, tile_group.data(), tiles * 4, cudaMemcpyHostToDevice));
    ASSERT_CUDA(cudaMemset(counters_dev.ptr, 0, 7 * 4));
    ASSERT_CUDA(cudaMemset(region.ptr, 0xFF, natural.size() * 2));
    ASSERT_CUDA(cudaMemset(record.ptr, 0xFF, tiles * 8));
    EpilogueArgs epi;
    epi.tile_offset_elems = offsets_dev.as<int64_t>();
    epi.group_counters = counters_dev.as<uint32_t>();
    epi.tile_group = group_dev.as<int32_t>();
    epi.order_record = record.as<int32_t>();
    OwnGemm signalling;
    ASSERT_STATUS(signalling.initialize(args_of(*p, region.ptr), epi, sched));
    ASSERT_STATUS(signalling.run(nullptr));
    ASSERT_CUDA(cudaDeviceSynchronize());
    std::vector<uint32_t> counters(7);
    ASSERT_CUDA(cudaMemcpy(counters.data(), counters_dev.ptr, 7 * 4, cudaMemcpyDeviceToHost));
    std::vector<uint32_t> expected(7, 0);
    for (size_t t = 0; t < tiles; ++t) ++expected[tile_group[t]];
    for (int g = 0; g < 7; ++g) EXPECT_EQ(counters[g], expected[g]) << "group " << g;
    std::vector<int32_t> rec(tiles * 2);
    ASSERT_CUDA(cudaMemcpy(rec.data(), record.ptr, tiles * 8, cudaMemcpyDeviceToHost));
    const auto order = tile_order(m, n, num_ctas);
    const int32_t first = signalling.split_first();
    int64_t wrong = 0;
    for (size_t item = 0; item < order.size(); ++item) {
      const size_t tile =
          static_cast<size_t>(order[item].tile_m) * gemm.tiles_n() + order[item].tile_n;
      const int32_t i = static_cast<int32_t>(item);
      const int32_t fin = i < first ? i : first + (i - first) * split + split - 1;
      if (rec[2 * tile] != i || rec[2 * tile + 1] != fin % num_ctas) ++wrong;
    }
    EXPECT_EQ(wrong, 0) << "tiles whose recorded item/CTA is not their finisher's";
    std::vector<uint16_t> remapped(natural.size());
    ASSERT_CUDA(
        cudaMemcpy(remapped.data(), region.ptr, remapped.size() * 2, cudaMemcpyDeviceToHost));
    int64_t mismatches = 0;
    const int32_t tiles_n = gemm.tiles_n();
    for (int32_t tm = 0; tm < gemm.tiles_m(); ++tm)
      for (int32_t tn = 0; tn < tiles_n; ++tn) {
        const int64_t tile = int64_t{tm} * tiles_n + tn;
        for (int64_t r = 0; r < 128; ++r)
          for (int64_t col = 0; col < 256; ++col)
            mismatches += natural[(tm * 128 + r) * n + tn * 256 + col] !=
                          remapped[offsets[tile] + r * 256 + col];
      }
    EXPECT_EQ(mismatches, 0) << "remapped split tiles differ from the natural split store";
  }
}

}  // namespace
}  // namespace overlapsim::kernels::gemm
