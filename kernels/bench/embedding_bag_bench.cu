// embedding-bag-bench: our embedding-bag sum (kernels/ops/embedding_bag.hpp) against the
// memory it gathers from. One CSV row per case and a device-to-device copy row, all on one
// GPU: bytes = rows gathered (bags * pooling * dim * element) + indices (bags * pooling * 4)
// + output (bags * dim * element); achieved_Bps = bytes / median time; fractions of the
// datasheet HBM bandwidth and of the measured copy bandwidth (cudaMemcpy device to device
// of a 4 GiB buffer, counting bytes read plus written). Shapes: DLRM-DCNv2 (dim 128, the
// MLPerf Criteo multi-hot pooling factors 1, 3, 12, 27, 100), a 40M-row table as its large
// tables, per-GPU batches 2112, 8192, 65536. `wrong`: elements of a sample of bags off an
// fp64 host sum by more than 4*2^-8*(|ref| + rms); `out_hash`: FNV-1a of the whole output's
// bits, so two builds of the kernel can be compared bit for bit. Two floor rows give the
// shortest call a case can take: `empty_kernel` (a launch that does nothing) and
// `ours_1bag` (one bag of pooling 1); a case whose bytes at the datasheet rate take less
// than that floor cannot reach the bandwidth bar. With --case-copies each case is followed
// by a `cudaMemcpy_d2d_case` row: a device-to-device copy moving the case's bytes (half
// read, half written), timed the same way, the most any lookup of those bytes can show
// (the copy streams where the lookup gathers, through the same launch). Built standalone
// with nvcc as well:
//   nvcc -O3 -std=c++17 -arch=sm_90 -I. kernels/bench/embedding_bag_bench.cu \
//     kernels/harness/dtype.cpp \
//     kernels/ops/embedding_bag.cu -o embedding-bag-bench
//   embedding-bag-bench [--output FILE] [--smoke] [--case-copies]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/harness/random_values.hpp"
#include "kernels/ops/embedding_bag.hpp"

namespace overlapsim::kernels {
namespace {

// HBM bandwidth on the datasheets: H100 SXM5 80 GB 3.35 TB/s (NVIDIA H100 Tensor Core GPU
// datasheet), H200 SXM 4.8 TB/s (NVIDIA H200 Tensor Core GPU datasheet). 0 when unknown.
double datasheet_Bps(const std::string& gpu) {
  if (gpu.find("H200") != std::string::npos) return 4.8e12;
  if (gpu.find("H100") != std::string::npos && gpu.find("HBM3") != std::string::npos)
    return 3.35e12;
  return 0.0;
}

#define BENCH_CHECK(call)                                                            \
  do {                                                                               \
    cudaError_t e_ = (call);                                                         \
    if (e_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,             \
                   cudaGetErrorString(e_));                                          \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

__global__ void empty_kernel() {}

std::uint64_t fnv1a(const std::vector<std::uint16_t>& v) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::uint16_t x : v) {
    h = (h ^ (x & 0xff)) * 1099511628211ull;
    h = (h ^ (x >> 8)) * 1099511628211ull;
  }
  return h;
}

__global__ void fill_table(std::uint16_t* data, std::size_t count, DType dtype,
                           std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x)
    data[i] = random_bits(dtype, seed, i);
}

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median and minimum milliseconds of `iterations` timed calls after `warmup` calls.
template <typename F>
std::pair<float, float> time_ms(F&& call, int warmup, int iterations) {
  cudaEvent_t start, stop;
  BENCH_CHECK(cudaEventCreate(&start));
  BENCH_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < warmup; ++i) call();
  std::vector<float> ms;
  for (int i = 0; i < iterations; ++i) {
    BENCH_CHECK(cudaEventRecord(start));
    call();
    BENCH_CHECK(cudaEventRecord(stop));
    BENCH_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    BENCH_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  BENCH_CHECK(cudaEventDestroy(start));
  BENCH_CHECK(cudaEventDestroy(stop));
  return {median(ms), *std::min_element(ms.begin(), ms.end())};
}

struct Row {
  std::string design, dtype, index_dist;
  std::int64_t table_rows = 0, dim = 0, bags = 0, pooling = 0;
  double bytes = 0, median_ms = 0, min_ms = 0;
  std::int64_t wrong = 0;
  std::uint64_t out_hash = 0;
};

void print_header(FILE* f) {
  std::fprintf(f,
               "gpu,op,design,dtype,index_dist,table_rows,dim,bags,pooling,bytes,time_us,"
               "min_time_us,achieved_Bps,datasheet_Bps,copy_Bps,fraction_datasheet,"
               "fraction_copy,wrong,out_hash\n");
}

void print_row(FILE* f, const std::string& gpu, const Row& r, double sheet_Bps, double copy_Bps) {
  const double achieved = r.bytes / (r.median_ms * 1e-3);
  std::fprintf(f, "%s,%s,%s,%s,%s,%lld,%lld,%lld,%lld,%.0f,%.3f,%.3f,%.4e,%.4e,%.4e,%.4f,%.4f,%lld,%016llx\n",
               gpu.c_str(), r.design.rfind("cudaMemcpy", 0) == 0 ? "copy" : "embedding_bag",
               r.design.c_str(), r.dtype.c_str(), r.index_dist.c_str(),
               static_cast<long long>(r.table_rows), static_cast<long long>(r.dim),
               static_cast<long long>(r.bags), static_cast<long long>(r.pooling), r.bytes,
               r.median_ms * 1e3, r.min_ms * 1e3, achieved, sheet_Bps, copy_Bps,
               sheet_Bps > 0 ? achieved / sheet_Bps : 0.0, copy_Bps > 0 ? achieved / copy_Bps : 0.0,
               static_cast<long long>(r.wrong), static_cast<unsigned long long>(r.out_hash));
  std::fflush(f);
}

// Indices of `count` lookups: uniform over the rows, or a power law (row = rows * u^4, u
// uniform: a quarter of the lookups land in the first 1/256 of the rows), a hot-row case.
std::vector<std::int32_t> make_indices(std::size_t count, std::int32_t rows, bool power_law,
                                       std::uint64_t seed) {
  std::vector<std::int32_t> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (!power_law) {
      out[i] = random_index(seed, i, rows);
    } else {
      const double u = static_cast<double>(random_word(seed, i) >> 11) * 0x1p-53;
      out[i] = std::min<std::int32_t>(rows - 1, static_cast<std::int32_t>(rows * u * u * u * u));
    }
  }
  return out;
}

}  // namespace
}  // namespace overlapsim::kernels

int main(int argc, char** argv) {
  using namespace overlapsim::kernels;
  std::string output;
  bool smoke = false, case_copies = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--output") && i + 1 < argc) output = argv[++i];
    else if (!std::strcmp(argv[i], "--smoke")) smoke = true;
    else if (!std::strcmp(argv[i], "--case-copies")) case_copies = true;
    else {
      std::fprintf(stderr,
                   "usage: embedding-bag-bench [--output FILE] [--smoke] [--case-copies]\n");
      return 2;
    }
  }
  FILE* f = output.empty() ? stdout : std::fopen((output + ".tmp").c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "embedding-bag-bench: cannot write %s.tmp\n", output.c_str());
    return 2;
  }
  cudaDeviceProp prop{};
  BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
  const std::string gpu = prop.name;
  const double sheet = datasheet_Bps(gpu);
  const int warmup = 3, iterations = smoke ? 5 : 20;

  // Copy bandwidth: 4 GiB device to device, bytes read plus written.
  double copy_Bps = 0;
  Row copy_row{"cudaMemcpy_d2d", "bytes", "-", 0, 0, 0, 0};
  {
    const std::size_t n = std::size_t{1} << (smoke ? 28 : 32);
    void *a = nullptr, *b = nullptr;
    BENCH_CHECK(cudaMalloc(&a, n));
    BENCH_CHECK(cudaMalloc(&b, n));
    BENCH_CHECK(cudaMemset(a, 1, n));
    const auto t = time_ms([&] { BENCH_CHECK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice)); },
                           warmup, iterations);
    copy_row.bytes = 2.0 * n;
    copy_row.median_ms = t.first;
    copy_row.min_ms = t.second;
    copy_Bps = copy_row.bytes / (t.first * 1e-3);
    BENCH_CHECK(cudaFree(a));
    BENCH_CHECK(cudaFree(b));
  }
  print_header(f);
  print_row(f, gpu, copy_row, sheet, copy_Bps);

  const std::int64_t rows = smoke ? 1000000 : 40000000;  // MLPerf DLRM-DCNv2's 40M-row tables
  const std::int64_t dim = 128;

  // Floor rows: the event-timed call of a launch that does nothing, and of our kernel on
  // one bag of pooling 1 (a 256-byte row), timed as every case.
  {
    const auto t = time_ms([&] { empty_kernel<<<1, 32>>>(); }, warmup, iterations);
    Row r{"empty_kernel", "-", "-", 0, 0, 0, 0};
    r.median_ms = t.first;
    r.min_ms = t.second;
    print_row(f, gpu, r, sheet, copy_Bps);
    void *tab = nullptr, *idx = nullptr, *o = nullptr;
    BENCH_CHECK(cudaMalloc(&tab, 1024 * dim * 2));
    BENCH_CHECK(cudaMalloc(&idx, 4));
    BENCH_CHECK(cudaMalloc(&o, dim * 2));
    BENCH_CHECK(cudaMemset(tab, 0, 1024 * dim * 2));
    BENCH_CHECK(cudaMemset(idx, 0, 4));
    const EmbeddingBagShape shape{1024, dim, 1, 1};
    const auto t1 = time_ms(
        [&] {
          (void)embedding_bag_sum(tab, static_cast<const std::int32_t*>(idx), o, shape,
                                  BagRange{0, 1, 1, 0}, DType::BF16, nullptr);
        },
        warmup, iterations);
    Row r1{"ours_1bag", "bf16", "-", 1024, dim, 1, 1};
    r1.bytes = dim * 2 + 4 + dim * 2;
    r1.median_ms = t1.first;
    r1.min_ms = t1.second;
    print_row(f, gpu, r1, sheet, copy_Bps);
    BENCH_CHECK(cudaFree(tab));
    BENCH_CHECK(cudaFree(idx));
    BENCH_CHECK(cudaFree(o));
  }
  const std::vector<std::int64_t> batches = smoke ? std::vector<std::int64_t>{8192}
                                                  : std::vector<std::int64_t>{2112, 8192, 65536};
  const std::vector<std::int64_t> poolings = smoke ? std::vector<std::int64_t>{1, 100}
                                                   : std::vector<std::int64_t>{1, 3, 12, 27, 100};
  for (DType dtype : {DType::BF16, DType::FP16}) {
    const std::uint64_t table_seed = buffer_seed(0x5eedull, 0, static_cast<int>(dtype));
    void* table = nullptr;
    BENCH_CHECK(cudaMalloc(&table, rows * dim * 2));
    fill_table<<<1024, 256>>>(static_cast<std::uint16_t*>(table), rows * dim, dtype, table_seed);
    BENCH_CHECK(cudaGetLastError());
    for (bool power_law : {false, true}) {
      if (power_law && dtype != DType::BF16) continue;
      for (std::int64_t bags : batches) {
        for (std::int64_t pooling : poolings) {
          const std::uint64_t index_seed = buffer_seed(0x1dull, static_cast<int>(pooling),
                                                       static_cast<int>(bags));
          const std::vector<std::int32_t> host_indices = make_indices(
              bags * pooling, static_cast<std::int32_t>(rows), power_law, index_seed);
          void *indices = nullptr, *out = nullptr;
          BENCH_CHECK(cudaMalloc(&indices, host_indices.size() * 4));
          BENCH_CHECK(cudaMalloc(&out, bags * dim * 2));
          BENCH_CHECK(cudaMemcpy(indices, host_indices.data(), host_indices.size() * 4,
                                 cudaMemcpyHostToDevice));
          BENCH_CHECK(cudaMemset(out, 0xff, bags * dim * 2));
          const EmbeddingBagShape shape{rows, dim, bags, pooling};
          const BagRange range{0, bags, 1, 0};
          Status status = Status::success();
          const auto t = time_ms(
              [&] {
                if (status.ok)
                  status = embedding_bag_sum(table, static_cast<const std::int32_t*>(indices),
                                             out, shape, range, dtype, nullptr);
              },
              warmup, iterations);
          BENCH_CHECK(cudaDeviceSynchronize());
          Row r{"ours", to_string(dtype), power_law ? "powerlaw_u4" : "uniform", rows, dim,
                bags, pooling};
          r.bytes = double(bags) * pooling * dim * 2 + double(bags) * pooling * 4 +
                    double(bags) * dim * 2;
          r.median_ms = t.first;
          r.min_ms = t.second;
          if (!status.ok) {
            std::fprintf(stderr, "embedding_bag_sum: %s\n", status.message.c_str());
            r.wrong = -1;
          } else {
            std::vector<std::uint16_t> got(bags * dim);
            BENCH_CHECK(cudaMemcpy(got.data(), out, got.size() * 2, cudaMemcpyDeviceToHost));
            r.out_hash = fnv1a(got);
            const std::int64_t step = std::max<std::int64_t>(1, bags / 256);
            for (std::int64_t bag = 0; bag < bags; bag += step) {
              for (std::int64_t d = 0; d < dim; ++d) {
                double ref = 0, sq = 0;
                for (std::int64_t j = 0; j < pooling; ++j) {
                  const double v = random_value(
                      dtype, table_seed, host_indices[bag * pooling + j] * dim + d);
                  ref += v;
                  sq += v * v;
                }
                const double value = bits_to_float(dtype, got[bag * dim + d]);
                const double tol = 4 * 0x1p-8 * (std::fabs(ref) + std::sqrt(sq));
                r.wrong += !(std::fabs(value - ref) <= tol);
              }
            }
          }
          print_row(f, gpu, r, sheet, copy_Bps);
          BENCH_CHECK(cudaFree(indices));
          BENCH_CHECK(cudaFree(out));
          if (case_copies) {
            const std::size_t half = static_cast<std::size_t>(r.bytes / 2);
            void *a = nullptr, *b = nullptr;
            BENCH_CHECK(cudaMalloc(&a, half));
            BENCH_CHECK(cudaMalloc(&b, half));
            BENCH_CHECK(cudaMemset(a, 1, half));
            const auto tc = time_ms(
                [&] { BENCH_CHECK(cudaMemcpyAsync(b, a, half, cudaMemcpyDeviceToDevice)); },
                warmup, iterations);
            Row c{"cudaMemcpy_d2d_case", "bytes", r.index_dist, 0, dim, bags, pooling};
            c.bytes = 2.0 * static_cast<double>(half);
            c.median_ms = tc.first;
            c.min_ms = tc.second;
            print_row(f, gpu, c, sheet, copy_Bps);
            BENCH_CHECK(cudaFree(a));
            BENCH_CHECK(cudaFree(b));
          }
        }
      }
    }
    BENCH_CHECK(cudaFree(table));
  }
  if (f != stdout) {
    std::fclose(f);
    if (std::rename((output + ".tmp").c_str(), output.c_str()) != 0) return 1;
  }
  return 0;
}
