// interference-memory-probe: how much a memory-bound kernel slows while NCCL moves data
// beside it, the counterpart of overlap-bench's GEMM interference rows for the elementwise
// ops of a step (norms, activations, permutations). One process drives 2 GPUs: NCCL
// all-reduces or all-to-alls run back to back on each GPU's highest-priority stream, and a
// burst of y = a x + y kernels (fp32, 12 bytes an element) runs on GPU 0's default-priority
// stream, each kernel timed by events; the same burst alone alternates with it, round by
// round, as in overlap-bench. Two launch shapes per size test the straggler explanation of
// the GEMM rows (benchmarks/results/h200x2/interference_moe): a fixed grid of one CTA per SM
// whose threads stride over the array (each CTA owns a fixed share, so the kernel waits for
// the slowest CTA) and one CTA per 256 x 8 elements (many waves; the block scheduler hands
// the next CTA to whichever SM frees first).
//
// CSV on stdout: gpu,victim,launch,bytes,collective,coll_bytes,alone_us,beside_us,ratio,
// samples,wrong. wrong: elements of y off the host reference after the run (0 expected).
// Needs 2 GPUs; exits 2 without them.
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

#define CHECK_CUDA(x)                                                                   \
  do {                                                                                  \
    cudaError_t e_ = (x);                                                               \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "interference-memory-probe: %s: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)
#define CHECK_NCCL(x)                                                                   \
  do {                                                                                  \
    ncclResult_t r_ = (x);                                                              \
    if (r_ != ncclSuccess) {                                                            \
      std::fprintf(stderr, "interference-memory-probe: %s: %s\n", #x, ncclGetErrorString(r_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

constexpr int kThreads = 256;
constexpr int kPerThread = 8;

__global__ void axpy_strided(float a, const float* x, float* y, long n) {
  const long stride = static_cast<long>(gridDim.x) * blockDim.x;
  for (long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = a * x[i] + y[i];
}

__global__ void axpy_chunked(float a, const float* x, float* y, long n) {
  const long base = (static_cast<long>(blockIdx.x) * kPerThread) * blockDim.x + threadIdx.x;
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const long i = base + static_cast<long>(j) * blockDim.x;
    if (i < n) y[i] = a * x[i] + y[i];
  }
}

struct Gpu {
  int dev = 0;
  cudaStream_t compute = nullptr, comm = nullptr;
  ncclComm_t nccl = nullptr;
  float *send = nullptr, *recv = nullptr;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
    std::fprintf(stderr, "interference-memory-probe: needs 2 GPUs (found %d)\n", count);
    return 2;
  }
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 6;
  const int burst = 40;
  const std::size_t coll_bytes = std::size_t{128} << 20;
  const std::vector<std::size_t> victim_bytes = {std::size_t{3} << 20,  std::size_t{12} << 20,
                                                 std::size_t{48} << 20, std::size_t{192} << 20,
                                                 std::size_t{768} << 20};
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;

  Gpu gpus[2];
  int devs[2] = {0, 1};
  ncclComm_t comms[2];
  CHECK_NCCL(ncclCommInitAll(comms, 2, devs));
  for (int d = 0; d < 2; ++d) {
    Gpu& g = gpus[d];
    g.dev = d;
    g.nccl = comms[d];
    CHECK_CUDA(cudaSetDevice(d));
    int lo = 0, hi = 0;
    CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    CHECK_CUDA(cudaStreamCreateWithPriority(&g.comm, cudaStreamNonBlocking, hi));
    CHECK_CUDA(cudaStreamCreateWithPriority(&g.compute, cudaStreamNonBlocking, lo));
    CHECK_CUDA(cudaMalloc(&g.send, coll_bytes));
    CHECK_CUDA(cudaMalloc(&g.recv, coll_bytes));
    CHECK_CUDA(cudaMemset(g.send, 0, coll_bytes));
  }
  const std::size_t coll_count = coll_bytes / sizeof(float);
  const auto collective = [&](const std::string& kind) {
    CHECK_NCCL(ncclGroupStart());
    for (Gpu& g : gpus) {
      if (kind == "allreduce") {
        CHECK_NCCL(ncclAllReduce(g.send, g.recv, coll_count, ncclFloat, ncclSum, g.nccl, g.comm));
      } else {
        const std::size_t part = coll_count / 2;
        for (int peer = 0; peer < 2; ++peer) {
          CHECK_NCCL(ncclSend(g.send + peer * part, part, ncclFloat, peer, g.nccl, g.comm));
          CHECK_NCCL(ncclRecv(g.recv + peer * part, part, ncclFloat, peer, g.nccl, g.comm));
        }
      }
    }
    CHECK_NCCL(ncclGroupEnd());
  };

  std::printf("gpu,victim,launch,bytes,collective,coll_bytes,alone_us,beside_us,ratio,samples,wrong\n");
  Gpu& g0 = gpus[0];
  std::vector<cudaEvent_t> ev(burst + 1);
  CHECK_CUDA(cudaSetDevice(0));
  for (auto& e : ev) CHECK_CUDA(cudaEventCreate(&e));
  cudaEvent_t lead[2];
  for (int d = 0; d < 2; ++d) {
    CHECK_CUDA(cudaSetDevice(d));
    CHECK_CUDA(cudaEventCreateWithFlags(&lead[d], cudaEventDisableTiming));
  }

  for (std::size_t bytes : victim_bytes) {
    const long n = static_cast<long>(bytes / 12);
    CHECK_CUDA(cudaSetDevice(0));
    float *x = nullptr, *y = nullptr;
    CHECK_CUDA(cudaMalloc(&x, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&y, n * sizeof(float)));
    std::vector<float> hx(static_cast<std::size_t>(n), 1.0f);
    CHECK_CUDA(cudaMemcpy(x, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    for (const char* launch : {"strided", "chunked"}) {
      const bool strided = std::string(launch) == "strided";
      const int grid = strided ? sms : static_cast<int>((n + kThreads * kPerThread - 1) /
                                                        (kThreads * kPerThread));
      const auto victim = [&](cudaStream_t s) {
        // a = 0 keeps y fixed, so the result is checkable after any number of launches.
        if (strided)
          axpy_strided<<<grid, kThreads, 0, s>>>(0.0f, x, y, n);
        else
          axpy_chunked<<<grid, kThreads, 0, s>>>(0.0f, x, y, n);
      };
      for (const char* coll : {"allreduce", "alltoall"}) {
        CHECK_CUDA(cudaSetDevice(0));
        CHECK_CUDA(cudaMemset(y, 0, n * sizeof(float)));
        std::vector<double> alone, beside;
        // Size the collectives to outlast the burst: time one burst and one collective.
        victim(g0.compute);
        CHECK_CUDA(cudaEventRecord(ev[0], g0.compute));
        for (int i = 0; i < burst; ++i) victim(g0.compute);
        CHECK_CUDA(cudaEventRecord(ev[1], g0.compute));
        CHECK_CUDA(cudaEventSynchronize(ev[1]));
        float burst_ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&burst_ms, ev[0], ev[1]));
        collective(coll);
        CHECK_CUDA(cudaSetDevice(0));
        CHECK_CUDA(cudaEventRecord(ev[0], g0.comm));
        collective(coll);
        CHECK_CUDA(cudaSetDevice(0));
        CHECK_CUDA(cudaEventRecord(ev[1], g0.comm));
        CHECK_CUDA(cudaEventSynchronize(ev[1]));
        float coll_ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&coll_ms, ev[0], ev[1]));
        const int colls = std::max(2, static_cast<int>(2.5 * burst_ms / std::max(coll_ms, 1e-3f)) + 2);
        for (int r = 0; r < rounds; ++r) {
          for (int variant = 0; variant < 2; ++variant) {
            const bool is_beside = (variant + r) % 2 == 0;
            CHECK_CUDA(cudaSetDevice(0));
            if (is_beside) {
              collective(coll);
              for (int d = 0; d < 2; ++d) {
                CHECK_CUDA(cudaSetDevice(d));
                CHECK_CUDA(cudaEventRecord(lead[d], gpus[d].comm));
              }
              for (int i = 1; i < colls; ++i) collective(coll);
              CHECK_CUDA(cudaSetDevice(0));
              CHECK_CUDA(cudaStreamWaitEvent(g0.compute, lead[0], 0));
            }
            CHECK_CUDA(cudaEventRecord(ev[0], g0.compute));
            for (int i = 0; i < burst; ++i) {
              victim(g0.compute);
              CHECK_CUDA(cudaEventRecord(ev[i + 1], g0.compute));
            }
            for (int d = 0; d < 2; ++d) {
              CHECK_CUDA(cudaSetDevice(d));
              CHECK_CUDA(cudaStreamSynchronize(gpus[d].comm));
              CHECK_CUDA(cudaStreamSynchronize(gpus[d].compute));
            }
            CHECK_CUDA(cudaSetDevice(0));
            for (int i = 0; i < burst; ++i) {
              float ms = 0;
              CHECK_CUDA(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]));
              (is_beside ? beside : alone).push_back(1e3 * ms);
            }
          }
        }
        std::vector<float> hy(static_cast<std::size_t>(n));
        CHECK_CUDA(cudaMemcpy(hy.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
        const long wrong = std::count_if(hy.begin(), hy.end(), [](float v) { return v != 0.0f; });
        const double a = median(alone), b = median(beside);
        std::printf("%s,axpy_fp32,%s,%zu,%s,%zu,%.2f,%.2f,%.3f,%zu,%ld\n", prop.name, launch,
                    static_cast<std::size_t>(n) * 12, coll, coll_bytes, a, b, b / a, alone.size(),
                    wrong);
        std::fflush(stdout);
      }
    }
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaFree(x));
    CHECK_CUDA(cudaFree(y));
  }
  for (Gpu& g : gpus) CHECK_NCCL(ncclCommDestroy(g.nccl));
  return 0;
}
