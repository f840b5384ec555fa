// tail-exchange-bench: how fast the copy-engine all-reduce's tail kernel (tail_exchange.hpp)
// exchanges a region between two GPUs, against the copy engines. Both GPUs at once, each
// sending `bytes` to the other, as the design's last own group does after the GEMM:
//   tail_kernel   launch_tail_exchange with --grids CTAs of --threads (per-slice flags
//                 included; chunks = grid, the design column says the threads);
//   copy_engine   cudaMemcpyAsync to the peer on each GPU's stream (no flags);
//   copy_engine_flags  the same copy, then the tail kernel with no bytes on the same stream
//                 (its flags alone: the copy engine's data with the kernel's handshake).
// Per size and grid the mean of --iters back-to-back calls after --warmup (CUDA events on
// GPU 0; both GPUs' calls are issued in turn from this thread). One CSV row per measurement
// (overlap-bench's columns; op peer_exchange, chunks = grid, algbw = bytes / time one way)
// after the header; exits 2 without two peer-capable GPUs, 1 on a failed call.
//   tail-exchange-bench [--sizes 1,4,8,16,64] (MiB) [--grids 16,32,64,128]
//                       [--threads 256,512,1024] [--iters 50] [--warmup 10]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "kernels/bench/bench_row.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/tilewise/peer_memory.hpp"
#include "kernels/tilewise/tail_exchange.hpp"

namespace {

namespace tw = overlapsim::kernels::tilewise;
using overlapsim::kernels::DeviceBuffer;
using overlapsim::kernels::Status;
using overlapsim::kernels::bench::BenchRow;

constexpr int kGpus = 2;

struct Gpu {
  cudaStream_t stream = nullptr;
  DeviceBuffer src, dst, flags, timed_out;
};

Status setup(std::vector<Gpu>& gpus, std::size_t max_bytes) {
  for (int d = 0; d < kGpus; ++d) {
    OVERLAPSIM_TRY(tw::enable_peer_access(d, 1 - d));
    Gpu& g = gpus[static_cast<std::size_t>(d)];
    CUDA_CHECK(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
    OVERLAPSIM_TRY(g.src.allocate(max_bytes));
    OVERLAPSIM_TRY(g.dst.allocate(max_bytes));
    OVERLAPSIM_TRY(g.flags.allocate(kGpus * tw::kTailSlices * sizeof(std::uint32_t)));
    OVERLAPSIM_TRY(g.timed_out.allocate(sizeof(int)));
    CUDA_CHECK(cudaMemset(g.src.data(), 0x3c, max_bytes));
    CUDA_CHECK(cudaMemset(g.flags.data(), 0, g.flags.bytes()));
    CUDA_CHECK(cudaMemset(g.timed_out.data(), 0, sizeof(int)));
  }
  return Status::success();
}

// The tail kernel's arguments for GPU d sending `bytes` to the other, in the round `epoch`.
tw::TailExchangeArgs tail_args(std::vector<Gpu>& gpus, int d, std::size_t bytes,
                               std::uint32_t epoch, int grid, int threads) {
  Gpu& g = gpus[static_cast<std::size_t>(d)];
  Gpu& peer = gpus[static_cast<std::size_t>(1 - d)];
  tw::TailExchangeArgs t;
  t.src = g.src.as<char>();
  t.bytes = bytes;
  tw::set_tail_peers(
      kGpus, d, [&](int) { return peer.dst.as<char>(); },
      [&](int) { return peer.flags.as<std::uint32_t>(); }, g.flags.as<std::uint32_t>(), &t);
  t.epoch = epoch;
  t.grid = grid;
  t.threads = threads;
  t.timeout_s = 10;
  t.timed_out = g.timed_out.as<int>();
  return t;
}

// Mean seconds of one call of `issue(d)` issued on both GPUs, `iters` times back to back.
template <class Issue>
Status time_calls(std::vector<Gpu>& gpus, int warmup, int iters, Issue issue, double* mean_s) {
  for (int i = 0; i < warmup; ++i)
    for (int d = 0; d < kGpus; ++d) OVERLAPSIM_TRY(issue(d));
  for (int d = 0; d < kGpus; ++d) {
    CUDA_CHECK(cudaSetDevice(d));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  CUDA_CHECK(cudaSetDevice(0));
  cudaEvent_t start = nullptr, stop = nullptr;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start, gpus[0].stream));
  for (int i = 0; i < iters; ++i)
    for (int d = 0; d < kGpus; ++d) OVERLAPSIM_TRY(issue(d));
  CUDA_CHECK(cudaSetDevice(0));
  CUDA_CHECK(cudaEventRecord(stop, gpus[0].stream));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  *mean_s = 1e-3 * ms / iters;
  return Status::success();
}

Status run(const std::vector<std::size_t>& sizes, const std::vector<int>& grids,
           const std::vector<int>& threads, int iters, int warmup) {
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  int can = 0;
  if (count >= kGpus) CUDA_CHECK(cudaDeviceCanAccessPeer(&can, 0, 1));
  if (count < kGpus || !can) {
    std::fprintf(stderr, "tail-exchange-bench: needs two peer-capable GPUs, found %d\n", count);
    std::exit(2);
  }
  std::size_t max_bytes = 0;
  for (std::size_t b : sizes) max_bytes = std::max(max_bytes, b);
  std::vector<Gpu> gpus(kGpus);
  OVERLAPSIM_TRY(setup(gpus, max_bytes));
  CUDA_CHECK(cudaSetDevice(0));
  const auto tags = overlapsim::kernels::bench::read_device_tags(kGpus);
  std::printf("%s\n", overlapsim::kernels::bench::csv_header().c_str());
  const auto emit = [&](const std::string& design, int grid, std::size_t bytes, double s) {
    BenchRow r;
    r.op = "peer_exchange";
    r.design = design;
    r.dtype = "bf16";
    r.bytes = bytes;
    r.chunks = grid;
    r.time_s = r.time_min_s = r.time_max_s = s;
    std::printf("%s\n", overlapsim::kernels::bench::csv_line(tags, r).c_str());
    std::fflush(stdout);
  };
  std::uint32_t epoch = 0;
  for (std::size_t bytes : sizes) {
    double s = 0;
    OVERLAPSIM_TRY(time_calls(
        gpus, warmup, iters,
        [&](int d) -> Status {
          CUDA_CHECK(cudaSetDevice(d));
          Gpu& g = gpus[static_cast<std::size_t>(d)];
          CUDA_CHECK(cudaMemcpyAsync(gpus[static_cast<std::size_t>(1 - d)].dst.data(), g.src.data(),
                                     bytes, cudaMemcpyDeviceToDevice, g.stream));
          return Status::success();
        },
        &s));
    emit("copy_engine", 0, bytes, s);
    OVERLAPSIM_TRY(time_calls(
        gpus, warmup, iters,
        [&](int d) -> Status {
          CUDA_CHECK(cudaSetDevice(d));
          Gpu& g = gpus[static_cast<std::size_t>(d)];
          Gpu& peer = gpus[static_cast<std::size_t>(1 - d)];
          CUDA_CHECK(cudaMemcpyAsync(peer.dst.data(), g.src.data(), bytes, cudaMemcpyDeviceToDevice,
                                     g.stream));
          // Both GPUs' calls of one round share an epoch.
          if (d == 0) ++epoch;
          return tw::launch_tail_exchange(tail_args(gpus, d, 0, epoch, 1, 512), g.stream);
        },
        &s));
    emit("copy_engine_flags", 1, bytes, s);
    for (int grid : grids)
      for (int block : threads) {
        OVERLAPSIM_TRY(time_calls(
            gpus, warmup, iters,
            [&](int d) -> Status {
              CUDA_CHECK(cudaSetDevice(d));
              if (d == 0) ++epoch;
              return tw::launch_tail_exchange(tail_args(gpus, d, bytes, epoch, grid, block),
                                              gpus[static_cast<std::size_t>(d)].stream);
            },
            &s));
        emit("tail_kernel_" + std::to_string(block), grid, bytes, s);
      }
  }
  for (int d = 0; d < kGpus; ++d) {
    CUDA_CHECK(cudaSetDevice(d));
    CUDA_CHECK(cudaDeviceSynchronize());
    int flag = 0;
    CUDA_CHECK(cudaMemcpy(&flag, gpus[static_cast<std::size_t>(d)].timed_out.data(), sizeof flag,
                          cudaMemcpyDeviceToHost));
    if (flag) return Status::failure("a tail kernel's flag wait timed out");
  }
  return Status::success();
}

}  // namespace

// "a,b,c" of integers >= 1, or nullopt.
std::optional<std::vector<long>> int_list(const std::string& text) {
  std::vector<long> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1) return std::nullopt;
    out.push_back(v);
    start = comma + 1;
  }
  return out;
}

int usage(const std::string& what) {
  std::fprintf(stderr, "tail-exchange-bench: %s\n", what.c_str());
  return 2;
}

int main(int argc, char** argv) {
  std::vector<long> size_mib = {1, 4, 8, 16, 64}, grid_list = {16, 32, 64, 128},
                    thread_list = {256, 512, 1024};
  long iters = 50, warmup = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return usage(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--sizes" || flag == "--grids" || flag == "--threads") {
      const auto list = int_list(value);
      if (!list) return usage(flag + " expects integers >= 1 such as 1,4,16, got '" + value + "'");
      (flag == "--sizes" ? size_mib : flag == "--grids" ? grid_list : thread_list) = *list;
    } else if (flag == "--iters" || flag == "--warmup") {
      const auto list = int_list(value);
      if (!list || list->size() != 1) return usage(flag + " expects one integer >= 1");
      (flag == "--iters" ? iters : warmup) = list->front();
    } else {
      return usage("unknown flag " + flag);
    }
  }
  for (long g : grid_list)
    if (g > tw::kTailSlices)
      return usage("--grids: at most " + std::to_string(tw::kTailSlices) + " CTAs");
  std::vector<std::size_t> sizes;
  for (long mib : size_mib) sizes.push_back(static_cast<std::size_t>(mib) << 20);
  for (long t : thread_list)
    if (t != 256 && t != 512 && t != 1024) return usage("--threads: 256, 512 or 1024");
  std::vector<int> grids(grid_list.begin(), grid_list.end());
  std::vector<int> threads(thread_list.begin(), thread_list.end());
  const Status s = run(sizes, grids, threads, static_cast<int>(iters), static_cast<int>(warmup));
  if (!s.ok) {
    std::fprintf(stderr, "tail-exchange-bench: %s\n", s.message.c_str());
    return 1;
  }
  return 0;
}
