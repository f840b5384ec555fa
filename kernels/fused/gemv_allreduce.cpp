#include "kernels/fused/gemv_allreduce.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/fused/device_timeout.hpp"
#include "kernels/fused/gemv_allreduce_kernel.hpp"
#include "kernels/tilewise/peer_memory.hpp"

namespace overlapsim::kernels::fused {
namespace {

// Chunks of 32 along K a split keeps at least (3072 of K): below that a unit's meeting and
// hand-out cost more than the balance gains (measured on 4 x H100: 2048 of K per split was
// 1.4 to 2 us slower than no split at 405B o_proj TP = 4, 3328 the fastest at down_proj).
constexpr std::int64_t kMinSplitChunks = 96;
// The tuner's smallest split (2048 of K): below it the splits' meetings cost more than any
// balance could gain on the shapes measured.
constexpr std::int64_t kMinTunedSplitChunks = 64;
// auto_k_splits' largest split (the rule was fitted with 1, 2, 4 and 8 only).
constexpr int kMaxAutoKSplits = 8;

bool valid_k_splits(int k_splits, std::int64_t k) {
  return k_splits >= 0 && k_splits <= kMaxKSplits && k / 32 >= k_splits;
}

std::string bad_k_splits(int k_splits) {
  return "fused gemv+allreduce: k_splits must be 0 (auto) or 1.." + std::to_string(kMaxKSplits) +
         " and at most k / 32, got " + std::to_string(k_splits);
}

}  // namespace

const char* to_string(GemvTransport transport) {
  return transport == GemvTransport::NcclWindow ? "nccl_window" : "peer_pointers";
}

GemvAllReduce::GemvAllReduce() = default;

GemvAllReduce::~GemvAllReduce() {
  if (window_ != nullptr && comm_ != nullptr) ncclCommWindowDeregister(comm_->comm, window_);
  if (nccl_buffer_ != nullptr) ncclMemFree(nccl_buffer_);
}

Status GemvAllReduce::can_implement(int tokens, std::int64_t n, std::int64_t k, DType dtype,
                                    int world) {
  if (dtype != DType::BF16) return Status::failure("fused gemv+allreduce: bf16 only");
  if (tokens < 1 || tokens > kMaxTokens)
    return Status::failure("fused gemv+allreduce: 1.." + std::to_string(kMaxTokens) +
                           " tokens, got " + std::to_string(tokens));
  if (n < kSliceCols || n % kSliceCols != 0 || k < 32 || k % 32 != 0)
    return Status::failure("fused gemv+allreduce: n and k must be multiples of 32, got n " +
                           std::to_string(n) + ", k " + std::to_string(k));
  if (world < 1 || world > kMaxWorld)
    return Status::failure("fused gemv+allreduce: 1.." + std::to_string(kMaxWorld) +
                           " ranks, got " + std::to_string(world));
  return Status::success();
}

int auto_k_splits(std::int64_t n, std::int64_t k, int ctas) {
  const std::int64_t slices = n / kSliceCols, chunks = k / 32;
  // One unit per CTA already streams the same bytes on every CTA; splitting only adds the
  // meetings (measured: no faster on 4 x H100 at 256 slices for 264 CTAs).
  if (slices <= ctas) return 1;
  int splits = 1;
  while (splits < kMaxAutoKSplits && slices * splits < 4 * static_cast<std::int64_t>(ctas) &&
         chunks / (2 * splits) >= kMinSplitChunks)
    splits *= 2;
  return splits;
}

Status GemvAllReduce::initialize(CommHandle* comm, int tokens, std::int64_t n, std::int64_t k,
                                 DType dtype, const GemvAllReduceOptions& options) {
  const int world = comm == nullptr ? 1 : comm->world;
  OVERLAPSIM_TRY(can_implement(tokens, n, k, dtype, world));
  const int splits = options.k_splits;
  if (!valid_k_splits(splits, k)) return Status::failure(bad_k_splits(splits));
  tokens_ = tokens;
  n_ = n;
  k_ = k;
  world_ = world;
  rank_ = comm == nullptr ? 0 : comm->rank;
  epoch_ = 0;
  ticket_base_ = 0;
  timeout_s_ = options.timeout_s;
  transport_ = options.transport;
  max_ctas_ = options.max_ctas;
  early_claim_ = options.early_claim;
  fine_k_splits_ = options.fine_k_splits;
  tune_last_wave_ = options.tune_last_wave && !options.early_claim;
  last_wave_option_ = options.last_wave;
  comm_ = comm;
  OVERLAPSIM_TRY(preload_gemv_allreduce());
  const std::int64_t slices = n / kSliceCols;
  OVERLAPSIM_TRY(timed_out_.allocate(sizeof(int)));
  OVERLAPSIM_TRY(tickets_.allocate(sizeof(unsigned long long)));
  OVERLAPSIM_TRY(arrivals_.allocate(static_cast<std::size_t>(slices) * sizeof(std::uint32_t)));
  CUDA_CHECK(cudaMemset(timed_out_.data(), 0, sizeof(int)));
  CUDA_CHECK(cudaMemset(tickets_.data(), 0, sizeof(unsigned long long)));
  // Room for the largest split, so configure (and tune) never allocate.
  OVERLAPSIM_TRY(
      partials_.allocate(static_cast<std::size_t>(kMaxKSplits) * tokens * n * sizeof(float)));
  OVERLAPSIM_TRY(configure(splits, options.l2_prefetch, options.last_wave, nullptr));
  CUDA_CHECK(cudaDeviceSynchronize());
  if (world_ == 1) return Status::success();

  // Lines start at epoch 0, which no call has: every receive buffer zeroed before any peer
  // can store into it.
  const std::size_t recv_bytes =
      2 * static_cast<std::size_t>(world_) * tokens * n * kLineBytesPerElem;
  if (transport_ == GemvTransport::NcclWindow) {
    NCCL_CHECK(ncclMemAlloc(&nccl_buffer_, recv_bytes));
    CUDA_CHECK(cudaMemset(nccl_buffer_, 0, recv_bytes));
    CUDA_CHECK(cudaDeviceSynchronize());
    NCCL_SETTLE(*comm, ncclCommWindowRegister(comm->comm, nccl_buffer_, recv_bytes, &window_,
                                              NCCL_WIN_COLL_SYMMETRIC));
    return Status::success();
  }
  OVERLAPSIM_TRY(recv_.allocate(recv_bytes));
  CUDA_CHECK(cudaMemset(recv_.data(), 0, recv_bytes));
  CUDA_CHECK(cudaDeviceSynchronize());
  tilewise::PeerLinks links;
  OVERLAPSIM_TRY(tilewise::comm_peer_links(*comm, &links));
  peers_ = std::make_unique<tilewise::PeerMemory>(std::move(links));
  std::vector<std::vector<void*>> all;
  OVERLAPSIM_TRY(peers_->share({recv_.data()}, &all));
  for (int r = 0; r < world_; ++r) recv_ptrs_[r] = all[static_cast<std::size_t>(r)][0];
  return Status::success();
}

Status GemvAllReduce::configure(int k_splits, bool l2_prefetch, cudaStream_t stream) {
  return configure(k_splits, l2_prefetch, last_wave_option_, stream);
}

std::int64_t GemvAllReduce::units() const {
  const std::int64_t slices = n_ / kSliceCols;
  return (slices - last_wave_.slices) * k_splits_ +
         static_cast<std::int64_t>(last_wave_.slices) * (last_wave_.on() ? last_wave_.splits : 0);
}

Status GemvAllReduce::configure(int k_splits, bool l2_prefetch, GemvLastWave last_wave,
                                cudaStream_t stream) {
  if (n_ == 0) return Status::failure("fused gemv+allreduce: configure before initialize");
  if (!valid_k_splits(k_splits, k_)) return Status::failure(bad_k_splits(k_splits));
  int fit = 0;
  OVERLAPSIM_TRY(gemv_allreduce_max_ctas(tokens_, &fit));
  if (max_ctas_ > 0) fit = std::min(fit, max_ctas_);
  const int splits = k_splits != 0 ? k_splits : auto_k_splits(n_, k_, fit);
  const std::int64_t slices = n_ / kSliceCols;
  GemvLastWave wave = {};
  if (last_wave.on() && tokens_ <= kLastWaveMaxTokens) {
    const std::int64_t steps = (k_ / 32 + kLastWaveChunks - 1) / kLastWaveChunks;
    if (last_wave.splits > kMaxKSplits || last_wave.splits > steps || last_wave.slices < 0 ||
        last_wave.slices > slices)
      return Status::failure(
          "fused gemv+allreduce: the last wave needs 2.." + std::to_string(kMaxKSplits) +
          " splits, at most ceil(k / 1024) = " + std::to_string(steps) + ", and 0.." +
          std::to_string(slices) + " slices, got " + std::to_string(last_wave.slices) + " x " +
          std::to_string(last_wave.splits));
    if (early_claim_)
      return Status::failure(
          "fused gemv+allreduce: the last wave and the early claim exclude "
          "each other");
    wave.splits = last_wave.splits;
    wave.slices = last_wave.slices != 0
                      ? last_wave.slices
                      : static_cast<int>(std::min<std::int64_t>((fit + 1) / 2, slices));
  }
  const std::int64_t units =
      (slices - wave.slices) * splits + static_cast<std::int64_t>(wave.slices) * wave.splits;
  const int grid = static_cast<int>(std::min<std::int64_t>(units, fit));
  if (grid < 1) return Status::failure("fused gemv+allreduce: no CTA fits on this device");
  // A slice's arrival count names the last split by its residue modulo the split: start
  // from 0 under a new split (stream-ordered after the calls before).
  CUDA_CHECK(cudaMemsetAsync(arrivals_.data(), 0,
                             static_cast<std::size_t>(slices) * sizeof(std::uint32_t), stream));
  k_splits_ = splits;
  l2_prefetch_ = l2_prefetch;
  last_wave_ = wave;
  fit_ = fit;
  grid_ = grid;
  return Status::success();
}

Status GemvAllReduce::tune(int sets, const void* const* x, const void* const* w, void* y,
                           cudaStream_t stream, std::string* report) {
  if (grid_ == 0) return Status::failure("fused gemv+allreduce: tune before initialize");
  if (sets < 1) return Status::failure("fused gemv+allreduce: tune needs at least one buffer set");
  struct Candidate {
    int splits;
    bool prefetch;
    GemvLastWave wave;
  };
  std::vector<Candidate> candidates;
  std::vector<int> split_set = {1, 2, 4, 8};
  if (fine_k_splits_) split_set = {1, 2, 3, 4, 6, 8, 12, 16};
  for (const bool prefetch : {false, true})
    for (const int splits : split_set)
      if (splits == 1 || k_ / 32 / splits >= kMinTunedSplitChunks)
        candidates.push_back({splits, prefetch, last_wave_option_});
  if (tune_last_wave_ && tokens_ <= kLastWaveMaxTokens) {
    const std::int64_t slices = n_ / kSliceCols;
    const std::int64_t steps = (k_ / 32 + kLastWaveChunks - 1) / kLastWaveChunks;
    for (const int splits : {1, 2}) {
      if (splits > 1 && k_ / 32 / splits < kMinTunedSplitChunks) continue;
      std::int64_t last_tail = -1;
      for (const int eighths : {1, 2, 4, 8}) {
        const std::int64_t tail = std::min<std::int64_t>(
            std::max<std::int64_t>(1, static_cast<std::int64_t>(fit_) * eighths / 8), slices);
        if (tail == last_tail) continue;
        last_tail = tail;
        for (const int wave_splits : {2, 4, 8})
          if (wave_splits <= steps)
            candidates.push_back({splits, true, GemvLastWave{static_cast<int>(tail), wave_splits}});
      }
    }
  }
  // Rounds over every candidate in turn (clock drift spreads over all); a candidate's time
  // is its fastest round's mean of `reps` calls back to back, rotating over the sets.
  constexpr int kRounds = 3, kWarmup = 2;
  const int reps = std::max(4, sets);
  cudaEvent_t start = nullptr, stop = nullptr;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> best(candidates.size(), 1e30);
  Status status = Status::success();
  int call = 0;
  for (int round = 0; round < kRounds && status.ok; ++round)
    for (std::size_t c = 0; c < candidates.size() && status.ok; ++c) {
      status = configure(candidates[c].splits, candidates[c].prefetch, candidates[c].wave, stream);
      for (int i = 0; i < kWarmup && status.ok; ++i, ++call)
        status = run_local(x[call % sets], w[call % sets], y, stream);
      if (!status.ok) break;
      if (cudaEventRecord(start, stream) != cudaSuccess)
        status = Status::failure("fused gemv+allreduce: tune's event record failed");
      for (int i = 0; i < reps && status.ok; ++i, ++call)
        status = run_local(x[call % sets], w[call % sets], y, stream);
      if (status.ok && (cudaEventRecord(stop, stream) != cudaSuccess ||
                        cudaEventSynchronize(stop) != cudaSuccess))
        status = Status::failure("fused gemv+allreduce: tune's timing failed");
      float ms = 0;
      if (status.ok && cudaEventElapsedTime(&ms, start, stop) == cudaSuccess)
        best[c] = std::min(best[c], 1e3 * ms / reps);
    }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  OVERLAPSIM_TRY(status);
  // Every rank must pick the same: the slowest rank's time decides.
  if (world_ > 1 && comm_ != nullptr) OVERLAPSIM_TRY(allreduce_host(*comm_, stream, best, ncclMax));
  std::size_t pick = 0;
  for (std::size_t c = 1; c < candidates.size(); ++c)
    if (best[c] < best[pick]) pick = c;
  OVERLAPSIM_TRY(
      configure(candidates[pick].splits, candidates[pick].prefetch, candidates[pick].wave, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  if (report != nullptr) {
    *report = "chose k_splits " + std::to_string(k_splits_) + (l2_prefetch_ ? " l2_prefetch" : "") +
              (early_claim_ ? " early_claim" : "") +
              (last_wave_.on() ? " last_wave " + std::to_string(last_wave_.slices) + "x" +
                                     std::to_string(last_wave_.splits)
                               : std::string()) +
              " grid " + std::to_string(grid_) +
              "; us (split, p = L2 prefetch, /SxM = last wave of S slices in M):";
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      char item[64];
      const GemvLastWave& wv = candidates[c].wave;
      char wave[24] = "";
      if (wv.on())
        std::snprintf(wave, sizeof wave, "/%dx%d", wv.slices == 0 ? last_wave_.slices : wv.slices,
                      wv.splits);
      std::snprintf(item, sizeof item, " %d%s%s=%.1f", candidates[c].splits,
                    candidates[c].prefetch ? "p" : "", wave, best[c]);
      *report += item;
    }
  }
  return Status::success();
}

GemvKernelArgs GemvAllReduce::local_args(const void* x, const void* w, void* y) {
  GemvKernelArgs a;
  a.x = static_cast<const std::uint16_t*>(x);
  a.w = static_cast<const std::uint16_t*>(w);
  a.y = static_cast<std::uint16_t*>(y);
  a.tokens = tokens_;
  a.n = n_;
  a.k = k_;
  a.k_splits = k_splits_;
  a.l2_prefetch = l2_prefetch_;
  a.early_claim = early_claim_;
  a.last_wave_slices = last_wave_.on() ? last_wave_.slices : 0;
  a.last_wave_splits = last_wave_.on() ? last_wave_.splits : 1;
  a.partials = partials_.as<float>();
  a.arrivals = arrivals_.as<std::uint32_t>();
  a.tickets = tickets_.as<unsigned long long>();
  a.ticket_base = ticket_base_;
  // Every unit past the grid's first takes one ticket, and every CTA one more that finds
  // none left: units in all.
  const long long units = this->units();
  if (units > grid_) ticket_base_ += static_cast<unsigned long long>(units);
  a.world = world_;
  a.rank = rank_;
  a.push = false;
  a.trace = trace_;
  return a;
}

Status GemvAllReduce::run(const void* x, const void* w, void* y, cudaStream_t stream) {
  if (grid_ == 0) return Status::failure("fused gemv+allreduce: run before initialize");
  GemvKernelArgs a = local_args(x, w, y);
  a.push = world_ > 1;
  for (int r = 0; r < world_; ++r) a.recv[r] = static_cast<std::uint16_t*>(recv_ptrs_[r]);
  a.window = window_;
  // 0 is the lines' initial value, so the wrap skips it, and to 2 rather than 1: the epoch's
  // parity picks the buffer half, and two calls in a row must use different halves.
  epoch_ = epoch_ == 0xFFFFFFFFu ? 2u : epoch_ + 1;
  a.epoch = epoch_;
  a.timeout_ns = static_cast<std::uint64_t>(timeout_s_ * 1e9);
  a.timed_out = timed_out_.as<int>();
  return launch_gemv_allreduce(a, grid_, stream);
}

Status GemvAllReduce::run_local(const void* x, const void* w, void* y, cudaStream_t stream) {
  if (grid_ == 0) return Status::failure("fused gemv+allreduce: run_local before initialize");
  return launch_gemv_allreduce(local_args(x, w, y), grid_, stream);
}

Status GemvAllReduce::check_timeout(cudaStream_t stream) const {
  return read_timeout_flag(timed_out_, stream, "fused gemv+allreduce", rank_, "a peer's partial",
                           timeout_s_);
}

}  // namespace overlapsim::kernels::fused
