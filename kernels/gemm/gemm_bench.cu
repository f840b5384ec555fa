// own-gemm-bench: own Hopper GEMM against cuBLASLt on the same inputs, in one run, as
// overlap-bench CSV rows (design `own` and `cublas`). Per shape: inputs rotated across
// enough buffer sets to exceed L2 several times, warm-up, CUDA events around each call,
// median/min/max of --iters calls; `wrong` counts own-GEMM elements that differ from
// cuBLASLt by more than 1e-2·(|ref| + rms(ref)) or are not finite.
//
//   own-gemm-bench [--shapes 8192x8192x8192,...] [--dtype bf16|fp16] [--iters 30]
//                  [--warmup 5] [--group-m 8] [--num-ctas 0] [--defer-stores 1]
//                  [--cublas-candidates 8] [--versions 3,2,3s8v,...] [--driver 580.x]
//                  [--sustain-ms 0] [--gaps-us 150,450] [--cublas-algo -1]
// cuBLASLt runs with the fastest of its heuristic's first --cublas-candidates algorithms
// (each timed over 7 calls; --cublas-algo N >= 0: candidate N, untimed, e.g. to profile
// it); the own GEMM versions (design own_v3, own_v2: cluster_m 2 / 1)
// and cuBLAS calls alternate while timed, each checked against cuBLASLt (and the versions
// bit for bit against each other).
// CSV on stdout; a per-shape summary and the geometric mean of own/cuBLAS on stderr.
// --sustain-ms T > 0: after the interleaved timing, every variant also runs ALONE, back to
// back for T / 3 ms untimed and then T ms timed (design <name>_sustained; cuBLAS as
// cublas_sustained with its chosen algorithm and cublas_first_sustained with the
// heuristic's first): under a sustained load the GPU sits at its power limit, where a
// kernel's clock follows its energy per cycle, which interleaving hides (the variants share
// one power state). stderr gets `# phase MxNxK design start_s end_s` (epoch seconds of the
// timed part) so clock and power samples can be matched to it.
// --gaps-us G1,G2,... (with --sustain-ms): then every variant runs the same way once per
// gap, each call followed by G µs of idle GPU (one warp sleeping on the global timer, the
// SMs otherwise idle), and only the GEMM is timed (design <name>_gap<G>us): the duty cycle
// of a sequential GEMM-then-collective loop, where the collective's time lets the GPU come
// off its power limit, against the back-to-back load of an overlapped one.
// bytes = A + B + C once each; algbw_GBps = bytes / time; busbw_GBps = algbw (a single
// op on one GPU has no bus factor); chunks = 1.
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/global_timer.cuh"
#include "kernels/common/status.hpp"
#include "kernels/gemm/cublaslt_gemm.hpp"
#include "kernels/gemm/gemm_bench_flags.hpp"
#include "kernels/gemm/own_gemm.hpp"

namespace {

using overlapsim::kernels::Status;
namespace g = overlapsim::kernels::gemm;

using Shape = g::GemmBenchShape;
using Options = g::GemmBenchOptions;

// Uniform values in [-1, 1) from a per-element hash: fresh for every seed, never zero-filled.
__global__ void fill_random(uint16_t* out, int64_t count, uint64_t seed, bool bf16) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint64_t x = (static_cast<uint64_t>(i) + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    const float u = static_cast<float>(x >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
    const uint32_t bits = __float_as_uint(u);
    if (bf16) {
      out[i] = static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
    } else {
      out[i] = __half_as_ushort(__float2half_rn(u));
    }
  }
}

__device__ float to_float(uint16_t v, bool bf16) {
  if (bf16) return __uint_as_float(static_cast<uint32_t>(v) << 16);
  return __half2float(__ushort_as_half(v));
}

// Block partials: [0] Σ ref², [1] Σ (own − ref)², [2] non-finite count (as double).
__global__ void compare_norms(const uint16_t* own, const uint16_t* ref, int64_t count, bool bf16,
                              double* partials) {
  double sum_ref = 0, sum_diff = 0, bad = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float a = to_float(own[i], bf16);
    const float r = to_float(ref[i], bf16);
    if (!isfinite(a)) {
      bad += 1;
      continue;
    }
    sum_ref += static_cast<double>(r) * r;
    sum_diff += static_cast<double>(a - r) * (a - r);
  }
  atomicAdd(&partials[0], sum_ref);
  atomicAdd(&partials[1], sum_diff);
  atomicAdd(&partials[2], bad);
}

__global__ void count_wrong(const uint16_t* own, const uint16_t* ref, int64_t count, bool bf16,
                            float rms, unsigned long long* wrong) {
  unsigned long long local = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float a = to_float(own[i], bf16);
    const float r = to_float(ref[i], bf16);
    if (!isfinite(a) || fabsf(a - r) > 1e-2f * (fabsf(r) + rms)) ++local;
  }
  if (local) atomicAdd(wrong, local);
}

Status cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) return Status::failure(std::string(what) + ": " + cudaGetErrorString(e));
  return Status::success();
}

std::string driver_version(const Options& o) {
  if (!o.driver.empty()) return o.driver;
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  if (std::getline(f, line)) {
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.03  ..."
    std::stringstream words(line);
    std::string w;
    while (words >> w)
      if (std::count(w.begin(), w.end(), '.') == 2 &&
          std::isdigit(static_cast<unsigned char>(w[0])))
        return w;
  }
  return "unknown";
}

struct Timing {
  double median_us, min_us, max_us;
};

Timing summarize(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us.front(), us.back()};
}

// Times `iters` calls of every variant with CUDA events, one call of each in turn, so all
// see the same clocks and temperature; call i of a variant uses input set i mod sets.
Status time_interleaved(const std::vector<std::function<Status(int)>>& variants, int warmup,
                        int iters, cudaStream_t stream, std::vector<Timing>* out) {
  const size_t nv = variants.size();
  for (int i = 0; i < warmup; ++i)
    for (const auto& v : variants) OVERLAPSIM_TRY(v(i));
  std::vector<cudaEvent_t> ev((nv + 1) * iters);
  for (auto& e : ev) OVERLAPSIM_TRY(cuda_ok(cudaEventCreate(&e), "cudaEventCreate"));
  for (int i = 0; i < iters; ++i) {
    OVERLAPSIM_TRY(cuda_ok(cudaEventRecord(ev[(nv + 1) * i], stream), "cudaEventRecord"));
    for (size_t v = 0; v < nv; ++v) {
      OVERLAPSIM_TRY(variants[v](i));
      OVERLAPSIM_TRY(cuda_ok(cudaEventRecord(ev[(nv + 1) * i + v + 1], stream), "cudaEventRecord"));
    }
  }
  OVERLAPSIM_TRY(cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize"));
  std::vector<std::vector<double>> us(nv, std::vector<double>(iters));
  for (int i = 0; i < iters; ++i) {
    for (size_t v = 0; v < nv; ++v) {
      float ms = 0;
      OVERLAPSIM_TRY(cuda_ok(
          cudaEventElapsedTime(&ms, ev[(nv + 1) * i + v], ev[(nv + 1) * i + v + 1]), "elapsed"));
      us[v][i] = ms * 1e3;
    }
  }
  for (auto& e : ev) cudaEventDestroy(e);
  out->clear();
  for (auto& u : us) out->push_back(summarize(u));
  return Status::success();
}

double epoch_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Idle GPU time between calls: one warp sleeps until `ns` of global time have passed, so
// the SMs draw next to nothing, as they do while a collective runs on a few of them.
__global__ void idle_gap(uint64_t ns) {
  const uint64_t start = overlapsim::kernels::global_timer_ns();
  do {
    __nanosleep(2000);
  } while (overlapsim::kernels::global_timer_ns() - start < ns);
}

// One variant alone: `warm_calls` untimed, then `calls` timed, each between two events
// (the host stays ahead of the GPU, so no call waits for its launch); back to back, or with
// gap_us > 0 each call followed by that much idle GPU (idle_gap, outside the events).
template <class Run>
Status time_alone(Run&& run, int warm_calls, int calls, cudaStream_t stream, double gap_us,
                  double* start_s, double* end_s, Timing* out) {
  const uint64_t gap_ns = static_cast<uint64_t>(gap_us * 1e3);
  const auto gap = [&] {
    if (gap_ns > 0) idle_gap<<<1, 32, 0, stream>>>(gap_ns);
  };
  for (int i = 0; i < warm_calls; ++i) {
    OVERLAPSIM_TRY(run(i));
    gap();
  }
  OVERLAPSIM_TRY(cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize"));
  *start_s = epoch_s();
  std::vector<cudaEvent_t> ev(2 * calls);
  for (auto& e : ev) OVERLAPSIM_TRY(cuda_ok(cudaEventCreate(&e), "cudaEventCreate"));
  for (int i = 0; i < calls; ++i) {
    OVERLAPSIM_TRY(cuda_ok(cudaEventRecord(ev[2 * i], stream), "cudaEventRecord"));
    OVERLAPSIM_TRY(run(warm_calls + i));
    OVERLAPSIM_TRY(cuda_ok(cudaEventRecord(ev[2 * i + 1], stream), "cudaEventRecord"));
    gap();
  }
  OVERLAPSIM_TRY(cuda_ok(cudaGetLastError(), "idle_gap launch"));
  OVERLAPSIM_TRY(cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize"));
  *end_s = epoch_s();
  std::vector<double> us(calls);
  for (int i = 0; i < calls; ++i) {
    float ms = 0;
    OVERLAPSIM_TRY(cuda_ok(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]), "elapsed"));
    us[i] = ms * 1e3;
  }
  for (auto& e : ev) cudaEventDestroy(e);
  *out = summarize(us);
  return Status::success();
}

// Median of a few calls of one runner set (used to pick cuBLASLt's fastest algorithm).
template <class Runners>
Status quick_median_us(Runners& r, int calls, cudaStream_t stream, double* median_us) {
  double start_s = 0, end_s = 0;
  Timing t{};
  OVERLAPSIM_TRY(time_alone([&](int i) { return r[i % r.size()].run(stream); }, 2, calls, stream,
                            0.0, &start_s, &end_s, &t));
  *median_us = t.median_us;
  return Status::success();
}

// The whole benchmark; *bad_input: the failure is the caller's input (exit code 2).
Status run_benchmark(const Options& o, bool* bad_input) {
  int device = 0;
  cudaDeviceProp prop{};
  OVERLAPSIM_TRY(cuda_ok(cudaGetDevice(&device), "cudaGetDevice"));
  OVERLAPSIM_TRY(cuda_ok(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties"));
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  int nccl = 0;
  ncclGetVersion(&nccl);
  std::string gpu = prop.name;
  std::replace(gpu.begin(), gpu.end(), ',', ' ');
  const std::string tags = gpu + "," + driver_version(o) + "," + std::to_string(runtime / 1000) +
                           "." + std::to_string(runtime % 1000 / 10) + "," +
                           std::to_string(nccl / 10000) + "." + std::to_string(nccl / 100 % 100) +
                           "." + std::to_string(nccl % 100) + ",1,gemm";
  const char* dtype_name = o.dtype == g::DType::kBf16 ? "bf16" : "fp16";
  const bool bf16 = o.dtype == g::DType::kBf16;

  std::printf(
      "gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes,chunks,time_us,time_min_us,"
      "time_max_us,tflops,algbw_GBps,busbw_GBps,wrong\n");
  cudaStream_t stream;
  OVERLAPSIM_TRY(cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream"));
  std::vector<double> log_ratio_sum(o.versions.size(), 0.0);
  int ratios = 0;
  uint64_t seed = 0x5EED0000ull ^ static_cast<uint64_t>(std::random_device{}());
  for (const Shape& s : o.shapes) {
    const int64_t a_elems = s.m * s.k, b_elems = s.n * s.k, c_elems = s.m * s.n;
    const double set_bytes = 2.0 * (a_elems + b_elems + c_elems);
    // Rotate through enough input sets that a call never finds its inputs in the 50 MB L2.
    const int sets =
        static_cast<int>(std::min(8.0, std::max(2.0, std::ceil(3 * 50e6 / set_bytes))));
    const size_t nver = o.versions.size();
    std::vector<uint16_t*> a(sets), b(sets), c_ref(sets);
    std::vector<std::vector<uint16_t*>> c_own(nver, std::vector<uint16_t*>(sets));
    for (int i = 0; i < sets; ++i) {
      OVERLAPSIM_TRY(cuda_ok(cudaMalloc(&a[i], a_elems * 2), "cudaMalloc A"));
      OVERLAPSIM_TRY(cuda_ok(cudaMalloc(&b[i], b_elems * 2), "cudaMalloc B"));
      OVERLAPSIM_TRY(cuda_ok(cudaMalloc(&c_ref[i], c_elems * 2), "cudaMalloc C"));
      for (size_t v = 0; v < nver; ++v) {
        OVERLAPSIM_TRY(cuda_ok(cudaMalloc(&c_own[v][i], c_elems * 2), "cudaMalloc C"));
        // Poison: 0xFFFF is a NaN in bf16 and fp16, so an unwritten element counts as wrong.
        OVERLAPSIM_TRY(cuda_ok(cudaMemsetAsync(c_own[v][i], 0xFF, c_elems * 2, stream), "memset"));
      }
      fill_random<<<1024, 256, 0, stream>>>(a[i], a_elems, seed++, bf16);
      fill_random<<<1024, 256, 0, stream>>>(b[i], b_elems, seed++, bf16);
    }
    std::vector<std::vector<g::OwnGemm>> own(nver);
    std::vector<g::CublasLtGemm> ref(sets);
    for (size_t v = 0; v < nver; ++v) {
      g::SchedulerOptions sched;
      sched.group_m = o.group_m;
      sched.num_ctas = o.num_ctas;
      sched.defer_stores = o.defer_stores;
      sched.cluster_m = o.versions[v].version == 3 ? 2 : 1;
      if (o.versions[v].store_steps > 0) sched.store_steps = o.versions[v].store_steps;
      if (o.versions[v].vector_stores >= 0) sched.vector_stores = o.versions[v].vector_stores != 0;
      if (o.versions[v].immediate) sched.defer_stores = false;
      sched.split_k_tail = o.versions[v].split_k_tail;
      own[v] = std::vector<g::OwnGemm>(sets);
      for (int i = 0; i < sets; ++i)
        OVERLAPSIM_TRY(
            own[v][i].initialize({s.m, s.n, s.k, o.dtype, a[i], b[i], c_own[v][i]}, {}, sched));
    }
    for (int i = 0; i < sets; ++i)
      OVERLAPSIM_TRY(
          ref[i].initialize({s.m, s.n, s.k, o.dtype, a[i], b[i], c_ref[i]}, o.cublas_candidates));
    // Correctness on set 0 before timing.
    for (size_t v = 0; v < nver; ++v) OVERLAPSIM_TRY(own[v][0].run(stream));
    OVERLAPSIM_TRY(ref[0].run(stream));
    double* partials = nullptr;
    unsigned long long* wrong_dev = nullptr;
    OVERLAPSIM_TRY(cuda_ok(cudaMalloc(&partials, 3 * sizeof(double)), "cudaMalloc"));
    OVERLAPSIM_TRY(cuda_ok(cudaMalloc(&wrong_dev, sizeof(unsigned long long)), "cudaMalloc"));
    std::vector<unsigned long long> wrong(nver, 0);
    std::vector<double> rel_err(nver, 0);
    for (size_t v = 0; v < nver; ++v) {
      OVERLAPSIM_TRY(cuda_ok(cudaMemsetAsync(partials, 0, 3 * sizeof(double), stream), "memset"));
      OVERLAPSIM_TRY(
          cuda_ok(cudaMemsetAsync(wrong_dev, 0, sizeof(unsigned long long), stream), "memset"));
      compare_norms<<<1024, 256, 0, stream>>>(c_own[v][0], c_ref[0], c_elems, bf16, partials);
      double host_partials[3];
      OVERLAPSIM_TRY(cuda_ok(cudaMemcpyAsync(host_partials, partials, sizeof(host_partials),
                                          cudaMemcpyDeviceToHost, stream),
                          "copy"));
      OVERLAPSIM_TRY(cuda_ok(cudaStreamSynchronize(stream), "sync after check"));
      const float rms = static_cast<float>(std::sqrt(host_partials[0] / c_elems));
      count_wrong<<<1024, 256, 0, stream>>>(c_own[v][0], c_ref[0], c_elems, bf16, rms, wrong_dev);
      OVERLAPSIM_TRY(cuda_ok(cudaMemcpyAsync(&wrong[v], wrong_dev, sizeof(unsigned long long),
                                          cudaMemcpyDeviceToHost, stream),
                          "copy"));
      OVERLAPSIM_TRY(cuda_ok(cudaStreamSynchronize(stream), "sync after check"));
      rel_err[v] = host_partials[2] > 0 ? NAN : std::sqrt(host_partials[1] / host_partials[0]);
    }
    // The versions differ only in data movement (same wgmma sequence): bit for bit equal
    // (those with the same split of the last wave).
    long long version_mismatches = 0;
    if (nver > 1) {
      std::vector<uint16_t> first(c_elems), other(c_elems);
      OVERLAPSIM_TRY(cuda_ok(
          cudaMemcpy(first.data(), c_own[0][0], c_elems * 2, cudaMemcpyDeviceToHost), "copy"));
      for (size_t v = 1; v < nver; ++v) {
        // A split last wave sums K in another order: checked against cuBLASLt only.
        if (o.versions[v].split_k_tail != o.versions[0].split_k_tail) continue;
        OVERLAPSIM_TRY(cuda_ok(
            cudaMemcpy(other.data(), c_own[v][0], c_elems * 2, cudaMemcpyDeviceToHost), "copy"));
        for (int64_t i = 0; i < c_elems; ++i) version_mismatches += first[i] != other[i];
      }
    }

    // Give cuBLASLt its fastest of the heuristic's candidates.
    int best = 0;
    double best_us = 0, default_us = 0;
    for (int cand = 0; cand < ref[0].candidates() && o.cublas_algo < 0; ++cand) {
      for (auto& r : ref) r.select(cand);
      double us = 0;
      OVERLAPSIM_TRY(quick_median_us(ref, 7, stream, &us));
      if (cand == 0) default_us = us;
      if (cand == 0 || us < best_us) {
        best = cand;
        best_us = us;
      }
    }
    if (o.cublas_algo >= 0) {
      if (o.cublas_algo >= ref[0].candidates()) {
        *bad_input = true;
        return Status::failure("--cublas-algo: " + std::to_string(o.cublas_algo) +
                               " is not below the " + std::to_string(ref[0].candidates()) +
                               " algorithms cuBLASLt offers");
      }
      best = o.cublas_algo;
    }
    for (auto& r : ref) r.select(best);
    std::vector<std::function<Status(int)>> variants;
    for (size_t v = 0; v < nver; ++v)
      variants.push_back([&, v](int i) { return own[v][i % sets].run(stream); });
    variants.push_back([&](int i) { return ref[i % sets].run(stream); });
    std::vector<Timing> t;
    OVERLAPSIM_TRY(time_interleaved(variants, o.warmup, o.iters, stream, &t));
    const Timing& t_ref = t.back();
    const double flops = 2.0 * s.m * s.n * s.k;
    const double bytes = 2.0 * (a_elems + b_elems + c_elems);
    auto row = [&](const std::string& design, const Timing& tm, unsigned long long w) {
      const double gbps = bytes / (tm.median_us * 1e-6) / 1e9;
      std::printf("%s,%s,%s,%ld,%ld,%ld,%.0f,1,%.2f,%.2f,%.2f,%.1f,%.1f,%.1f,%llu\n", tags.c_str(),
                  design.c_str(), dtype_name, s.m, s.n, s.k, bytes, tm.median_us, tm.min_us,
                  tm.max_us, flops / (tm.median_us * 1e-6) / 1e12, gbps, gbps, w);
    };
    for (size_t v = 0; v < nver; ++v) row(o.versions[v].name, t[v], wrong[v]);
    row("cublas", t_ref, 0);
    std::fflush(stdout);
    if (o.sustain_ms > 0) {
      // Gap 0: back to back (<name>_sustained); then each --gaps-us (<name>_gap<G>us).
      std::vector<double> gaps{0.0};
      gaps.insert(gaps.end(), o.gaps_us.begin(), o.gaps_us.end());
      const auto alone = [&](const std::string& name, const std::function<Status(int)>& run,
                             double median_us, double gap_us) -> Status {
        const int calls = static_cast<int>(std::ceil(o.sustain_ms * 1e3 / (median_us + gap_us)));
        double start_s = 0, end_s = 0;
        Timing tm{};
        OVERLAPSIM_TRY(
            time_alone(run, std::max(1, calls / 3), calls, stream, gap_us, &start_s, &end_s, &tm));
        char design[96];
        if (gap_us > 0)
          std::snprintf(design, sizeof design, "%s_gap%.0fus", name.c_str(), gap_us);
        else
          std::snprintf(design, sizeof design, "%s_sustained", name.c_str());
        row(design, tm, 0);
        std::fflush(stdout);
        std::fprintf(stderr, "# phase %ldx%ldx%ld %s %.3f %.3f\n", s.m, s.n, s.k, design, start_s,
                     end_s);
        return Status::success();
      };
      for (const double gap : gaps) {
        for (size_t v = 0; v < nver; ++v)
          OVERLAPSIM_TRY(alone(o.versions[v].name, variants[v], t[v].median_us, gap));
        OVERLAPSIM_TRY(alone("cublas", variants.back(), t_ref.median_us, gap));
      }
      for (auto& r : ref) r.select(0);
      for (const double gap : gaps)
        OVERLAPSIM_TRY(alone("cublas_first", variants.back(), t_ref.median_us, gap));
      for (auto& r : ref) r.select(best);
    }
    for (size_t v = 0; v < nver; ++v) {
      const double ratio = t_ref.median_us / t[v].median_us;
      log_ratio_sum[v] += std::log(ratio);
      std::fprintf(stderr,
                   "# %ldx%ldx%ld %s: own %.1f TFLOP/s, cuBLASLt %.1f TFLOP/s, own/cuBLAS %.3f, "
                   "rel err vs cuBLAS %.2e, wrong %llu, sets %d, padded %d, ctas %d, cluster %d, "
                   "cuBLAS algo %d of %d (heuristic's first: %.1f TFLOP/s)\n",
                   s.m, s.n, s.k, o.versions[v].name.c_str(),
                   flops / (t[v].median_us * 1e-6) / 1e12, flops / (t_ref.median_us * 1e-6) / 1e12,
                   ratio, rel_err[v], wrong[v], sets, own[v][0].padded() ? 1 : 0,
                   own[v][0].num_ctas(), own[v][0].cluster_m(), best, ref[0].candidates(),
                   default_us > 0 ? flops / (default_us * 1e-6) / 1e12 : NAN);  // NAN: forced algo
    }
    if (nver > 1)
      std::fprintf(stderr, "# %ldx%ldx%ld versions bit-identical: %s (%lld elements differ)\n", s.m,
                   s.n, s.k, version_mismatches == 0 ? "yes" : "NO", version_mismatches);
    ++ratios;
    cudaFree(partials);
    cudaFree(wrong_dev);
    own.clear();
    ref.clear();
    for (int i = 0; i < sets; ++i) {
      cudaFree(a[i]);
      cudaFree(b[i]);
      cudaFree(c_ref[i]);
      for (size_t v = 0; v < nver; ++v) cudaFree(c_own[v][i]);
    }
  }
  for (size_t v = 0; v < o.versions.size(); ++v)
    std::fprintf(stderr,
                 "# geometric mean %s/cuBLAS over %d shapes: %.3f (group_m %d, "
                 "defer_stores %d)\n",
                 o.versions[v].name.c_str(), ratios,
                 std::exp(log_ratio_sum[v] / std::max(1, ratios)), o.group_m,
                 o.defer_stores ? 1 : 0);
  return Status::success();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = g::parse_gemm_bench_flags(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  bool bad_input = false;
  const Status status = run_benchmark(o, &bad_input);
  if (!status.ok) {
    std::fprintf(stderr, "own-gemm-bench: %s\n", status.message.c_str());
    return bad_input ? 2 : 1;
  }
  return 0;
}
