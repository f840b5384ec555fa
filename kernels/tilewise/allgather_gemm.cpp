#include "kernels/tilewise/allgather_gemm.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <utility>

#include "kernels/tilewise/design_support.hpp"
#include "kernels/tilewise/signal_wait.hpp"
#include "sim/tilewise_plan/allgather.hpp"

namespace overlapsim::kernels::tilewise {
const char* to_string(AllGatherPush push) {
  return push == AllGatherPush::PerPeer ? "per_peer" : "rotated";
}

std::optional<AllGatherPush> parse_allgather_push(const std::string& name) {
  if (name == "rotated") return AllGatherPush::Rotated;
  if (name == "per_peer") return AllGatherPush::PerPeer;
  return std::nullopt;
}

double predict_allgather_time_s(std::int64_t m, std::int64_t n, int world,
                                const AllGatherGemmOptions& options, int ctas, double gemm_s,
                                double gather_s) {
  tilewise_plan::AllGatherProblem p;
  p.world = world;
  p.chunks = options.chunks;
  p.tiles = static_cast<double>(gemm::ceil_div_i32(m, gemm::GemmConfig::kTileM)) *
            static_cast<double>(gemm::ceil_div_i32(n, gemm::GemmConfig::kTileN));
  p.ctas = ctas;
  p.gemm_s = gemm_s;
  p.per_peer = options.push == AllGatherPush::PerPeer && world > 2;
  const int steps = p.per_peer ? options.chunks : (world - 1) * options.chunks;
  p.step_s = steps > 0 ? gather_s / steps : 0;
  return tilewise_plan::plan_allgather_consumer(p).end_s;
}

AllGatherGemmDesign::~AllGatherGemmDesign() {
  if (vendor_join_) cudaEventDestroy(vendor_join_);
  if (vendor_stream_) cudaStreamDestroy(vendor_stream_);
  for (cudaEvent_t e : joins_) cudaEventDestroy(e);
  for (cudaStream_t s : push_streams_) cudaStreamDestroy(s);
  if (fork_) cudaEventDestroy(fork_);
}

Status AllGatherGemmDesign::can_implement(std::int64_t m, std::int64_t n, std::int64_t k,
                                          int world, const AllGatherGemmOptions& options) {
  if (world < 1) return Status::failure("tilewise allgather+gemm: world must be >= 1");
  if (n < 1 || k < 1 || m < 1)
    return Status::failure("tilewise allgather+gemm: m, n, k must be >= 1");
  if (options.chunks < 1)
    return Status::failure("tilewise allgather+gemm: chunks must be >= 1, got " +
                           std::to_string(options.chunks));
  if (options.vendor_streams != 1 && options.vendor_streams != 2)
    return Status::failure("tilewise allgather+gemm: vendor_streams must be 1 or 2, got " +
                           std::to_string(options.vendor_streams));
  if (options.vendor_streams != 1 && !options.vendor_gemm)
    return Status::failure("tilewise allgather+gemm: vendor_streams needs vendor_gemm");
  if (options.vendor_gemm) {
    if (options.split_k_tail != 1)
      return Status::failure("tilewise allgather+gemm: vendor_gemm has no split last wave");
    if (m % (std::int64_t{world} * options.chunks) != 0)
      return Status::failure("tilewise allgather+gemm: m must be a multiple of " +
                             std::to_string(world) + " ranks x " + std::to_string(options.chunks) +
                             " chunks, got m = " + std::to_string(m));
    return Status::success();
  }
  const std::int64_t unit = std::int64_t{gemm::GemmConfig::kTileM} * world * options.chunks;
  if (m % unit != 0)
    return Status::failure("tilewise allgather+gemm: m must be a multiple of 128 x " +
                           std::to_string(world) + " ranks x " + std::to_string(options.chunks) +
                           " chunks (every tile inside one chunk of one rank's block), got m = " +
                           std::to_string(m));
  if (k % 8 != 0)
    return Status::failure(
        "tilewise allgather+gemm: k must be a multiple of 8 (the TMA reads the gathered rows "
        "in place; a padding pass would wait for the whole gather), got k = " +
        std::to_string(k));
  if (options.group_m < 1 || options.num_ctas < 0)
    return Status::failure("tilewise allgather+gemm: group_m must be >= 1 and num_ctas >= 0");
  return Status::success();
}

Status AllGatherGemmDesign::initialize(CommHandle* comm, std::int64_t m, std::int64_t n,
                                       std::int64_t k, DType dtype,
                                       const AllGatherGemmOptions& options) {
  PeerLinks links;
  OVERLAPSIM_TRY(comm_peer_links(*comm, &links));
  return initialize(std::move(links), m, n, k, dtype, options);
}

Status AllGatherGemmDesign::initialize(PeerLinks links, std::int64_t m, std::int64_t n,
                                       std::int64_t k, DType dtype,
                                       const AllGatherGemmOptions& options) {
  if (initialized_) return Status::failure("tilewise allgather+gemm: initialize() called twice");
  OVERLAPSIM_TRY(check_peer_links(links, "tilewise allgather+gemm"));
  if (dtype != DType::BF16 && dtype != DType::FP16)
    return Status::failure("tilewise allgather+gemm: bf16 or fp16 only, got " +
                           std::string(to_string(dtype)));
  OVERLAPSIM_TRY(can_implement(m, n, k, links.world, options));
  world_ = links.world;
  rank_ = links.rank;
  m_ = m;
  n_ = n;
  k_ = k;
  dtype_ = dtype;
  options_ = options;
  const bool shared_gpu = links.shared_gpu;
  memory_ = std::make_unique<PeerMemory>(std::move(links));
  int sms = 0;
  OVERLAPSIM_TRY(current_device_sms(&sms));
  if (options.num_ctas > sms)
    return Status::failure("tilewise allgather+gemm: num_ctas must be in 0.." +
                           std::to_string(sms) + ", got " + std::to_string(options.num_ctas));
  // The rotation needs group_m to divide the tile rows per block.
  // (At least 1: a vendor_gemm block may hold fewer rows than a tile.)
  const std::int64_t block_tiles =
      std::max<std::int64_t>(1, m / world_ / gemm::GemmConfig::kTileM);
  group_m_ = static_cast<int>(std::min<std::int64_t>(options.group_m, block_tiles));
  while (block_tiles % group_m_ != 0) --group_m_;

  const std::size_t flag_bytes =
      static_cast<std::size_t>(world_) * static_cast<std::size_t>(options.chunks) * 4;
  OVERLAPSIM_TRY(zeroed(flags_, flag_bytes));
  OVERLAPSIM_TRY(zeroed(timed_out_, sizeof(int)));
  OVERLAPSIM_TRY(zeroed(arrived_, static_cast<std::size_t>(world_) * 4));
  OVERLAPSIM_TRY(flag_writer_.initialize());
  OVERLAPSIM_TRY(
      gathered_.allocate(2 * static_cast<std::size_t>(m * k) * static_cast<std::size_t>(kElementBytes)));
  CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
  if (options.push == AllGatherPush::PerPeer && world_ > 2) {
    int least = 0, greatest = 0;
    CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    for (int i = 2; i < world_; ++i) {
      cudaStream_t s = nullptr;
      CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest));
      push_streams_.push_back(s);
    }
  }
  for (int i = 0; i <= static_cast<int>(push_streams_.size()); ++i) {
    cudaEvent_t e = nullptr;
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    joins_.push_back(e);
  }
  OVERLAPSIM_TRY(preload_signal_wait());
  if (options.vendor_gemm) {
    const std::int64_t block_rows = m / world_;
    OVERLAPSIM_TRY(vendor_.initialize(n, k, dtype, {block_rows, block_rows / options.chunks},
                                      block_rows / options.chunks));
    if (options.vendor_streams == 2) {
      OVERLAPSIM_TRY(vendor_alt_.initialize(n, k, dtype, {block_rows, block_rows / options.chunks},
                                            block_rows / options.chunks));
      CUDA_CHECK(cudaStreamCreateWithFlags(&vendor_stream_, cudaStreamNonBlocking));
      CUDA_CHECK(cudaEventCreateWithFlags(&vendor_join_, cudaEventDisableTiming));
    }
  }

  std::vector<std::vector<void*>> all;
  OVERLAPSIM_TRY(memory_->share({gathered_.data(), flags_.data(), arrived_.data()}, &all));
  peer_gathered_.assign(static_cast<std::size_t>(world_), nullptr);
  peer_flags_.assign(static_cast<std::size_t>(world_), nullptr);
  peer_arrived_.assign(static_cast<std::size_t>(world_), nullptr);
  for (int r = 0; r < world_; ++r) {
    const auto& peer = all[static_cast<std::size_t>(r)];
    peer_gathered_[static_cast<std::size_t>(r)] = static_cast<char*>(peer[0]);
    peer_flags_[static_cast<std::size_t>(r)] = static_cast<std::uint32_t*>(peer[1]);
    peer_arrived_[static_cast<std::size_t>(r)] = static_cast<std::uint32_t*>(peer[2]);
  }
  // The zeroed flags are in place before any peer's first push can reach them (a peer
  // pushes only after its own initialize, which waits for the exchange above, which every
  // rank enters after its memsets were enqueued; this wait completes them).
  if (shared_gpu) {
    CUDA_CHECK(cudaStreamSynchronize(nullptr));
  } else {
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  OVERLAPSIM_TRY(memory_->barrier());
  initialized_ = true;
  return Status::success();
}

int AllGatherGemmDesign::num_ctas() const {
  for (const auto& [key, pair] : gemms_) return pair[0]->num_ctas();
  return 0;
}

char* AllGatherGemmDesign::gathered(int parity) const {
  return gathered_.as<char>() +
         static_cast<std::size_t>(parity) * static_cast<std::size_t>(m_ * k_ * kElementBytes);
}

Status AllGatherGemmDesign::prepare(const void* a, const void* b, void* c) {
  if (!initialized_) return Status::failure("tilewise allgather+gemm: prepare() before initialize()");
  const auto key = std::make_tuple(a, b, c);
  if (options_.vendor_gemm || gemms_.count(key)) return Status::success();
  std::array<std::unique_ptr<gemm::OwnGemm>, 2> pair;
  for (int parity = 0; parity < 2; ++parity) {
    gemm::GemmArgs args;
    args.m = m_;
    args.n = n_;
    args.k = k_;
    args.dtype = dtype_ == DType::BF16 ? gemm::DType::kBf16 : gemm::DType::kFp16;
    args.a = gathered(parity);
    args.b = b;
    args.c = c;
    gemm::GatherArgs g;
    g.flags = flags_.as<std::uint32_t>();
    g.own_a = a;
    g.world = world_;
    g.rank = rank_;
    g.chunks = options_.chunks;
    g.wait_timeout_s = options_.wait_timeout_s;
    g.timed_out = timed_out_.as<int>();
    const gemm::SchedulerOptions sched = scheduler();
    auto gemm = std::make_unique<gemm::OwnGemm>();
    OVERLAPSIM_TRY(gemm->initialize_gathered(args, g, sched));
    pair[static_cast<std::size_t>(parity)] = std::move(gemm);
  }
  gemms_.emplace(key, std::move(pair));
  return Status::success();
}

gemm::SchedulerOptions AllGatherGemmDesign::scheduler() const {
  // Blocks in the order they arrive: own block r first, then r + 1, r + 2, ... (the rotation
  // puts part rotate_rank + 1 first).
  gemm::SchedulerOptions sched;
  sched.num_ctas = options_.num_ctas;
  sched.group_m = group_m_;
  sched.rotate_world = world_;
  sched.rotate_rank = (rank_ + world_ - 1) % world_;
  sched.split_k_tail = options_.split_k_tail;
  return sched;
}

Status AllGatherGemmDesign::signal_peer(std::uint32_t* peer_flag, std::uint32_t epoch,
                                        cudaStream_t stream) {
  return flag_writer_.write(peer_flag, epoch, stream);
}

Status AllGatherGemmDesign::enqueue_start_barrier(std::uint32_t epoch,
                                                  cudaStream_t compute_stream) {
  // The writes go first on every rank, so no rank's wait can hold back a peer's write.
  for (int i = 1; i < world_; ++i) {
    const int d = (rank_ - i + world_) % world_;
    OVERLAPSIM_TRY(
        signal_peer(peer_arrived_[static_cast<std::size_t>(d)] + rank_, epoch, compute_stream));
  }
  for (int s = 0; s < world_; ++s)
    if (s != rank_)
      OVERLAPSIM_TRY(enqueue_wait_geq(arrived_.as<std::uint32_t>() + s, epoch, compute_stream));
  return Status::success();
}

Status AllGatherGemmDesign::enqueue_pushes(const void* a, std::uint32_t epoch,
                                           cudaStream_t compute_stream, cudaStream_t comm_stream,
                                           std::vector<cudaStream_t>* used) {
  const int parity = static_cast<int>(epoch & 1u);
  const int chunks = options_.chunks;
  const std::int64_t block_rows = m_ / world_;
  const std::int64_t chunk_rows = block_rows / chunks;
  const std::size_t chunk_bytes = static_cast<std::size_t>(chunk_rows * k_ * kElementBytes);
  const std::size_t parity_offset = static_cast<std::size_t>(parity) *
                                    static_cast<std::size_t>(m_ * k_ * kElementBytes);
  if (options_.align_start) OVERLAPSIM_TRY(enqueue_start_barrier(epoch, compute_stream));
  CUDA_CHECK(cudaEventRecord(fork_, compute_stream));
  const bool per_peer = !push_streams_.empty();
  for (int i = 1; i < world_; ++i) {
    cudaStream_t s = comm_stream;
    if (per_peer && i >= 2) s = push_streams_[static_cast<std::size_t>(i - 2)];
    if (i == 1 || per_peer) {
      CUDA_CHECK(cudaStreamWaitEvent(s, fork_, 0));
      used->push_back(s);
      if (trace_ != nullptr && i == 1) CUDA_CHECK(cudaEventRecord(trace_->pushes_start, s));
    }
    // Step i: to rank − i, which then receives from rank + i (its i-th block after its own).
    const int d = (rank_ - i + world_) % world_;
    char* dst_block = peer_gathered_[static_cast<std::size_t>(d)] + parity_offset +
                      static_cast<std::size_t>(rank_ * block_rows * k_ * kElementBytes);
    for (int ch = 0; ch < chunks; ++ch) {
      const std::size_t at = static_cast<std::size_t>(ch) * chunk_bytes;
      CUDA_CHECK(cudaMemcpyAsync(dst_block + at, static_cast<const char*>(a) + at, chunk_bytes,
                                 cudaMemcpyDeviceToDevice, s));
      OVERLAPSIM_TRY(signal_peer(peer_flags_[static_cast<std::size_t>(d)] + rank_ * chunks + ch,
                                 epoch, s));
    }
    if (trace_ != nullptr && static_cast<std::size_t>(i - 1) < trace_->step_end.size())
      CUDA_CHECK(cudaEventRecord(trace_->step_end[static_cast<std::size_t>(i - 1)], s));
  }
  return Status::success();
}

Status AllGatherGemmDesign::join(const std::vector<cudaStream_t>& used,
                                 cudaStream_t compute_stream) {
  // The call ends once its own pushes are done too (the caller may then reuse the shard;
  // the peers' pushes into us are done: the GEMM or the waits saw each).
  for (std::size_t i = 0; i < used.size(); ++i) {
    CUDA_CHECK(cudaEventRecord(joins_[i], used[i]));
    CUDA_CHECK(cudaStreamWaitEvent(compute_stream, joins_[i], 0));
  }
  return Status::success();
}

Status AllGatherGemmDesign::enqueue_vendor_gemms(const void* a, const void* b, void* c,
                                                 const char* gathered_a, std::uint32_t epoch,
                                                 bool wait,
                                                 const std::vector<cudaStream_t>& streams) const {
  const std::int64_t block_rows = m_ / world_;
  const std::int64_t chunk_rows = block_rows / options_.chunks;
  const std::size_t lanes = streams.size();
  const VendorRowGemms* plans[2] = {&vendor_, options_.vendor_streams == 2 ? &vendor_alt_ : &vendor_};
  std::size_t j = 0;  // the GEMM's place: its stream and its plan set
  const auto plan = [&](std::size_t at) -> const VendorRowGemms& {
    return *plans[at % static_cast<std::size_t>(options_.vendor_streams)];
  };
  // The own block straight from the shard: nothing to wait for.
  OVERLAPSIM_TRY(plan(j).run_at(
      block_rows, a, b,
      static_cast<char*>(c) + static_cast<std::size_t>(rank_ * block_rows * n_) * kElementBytes,
      streams[j % lanes]));
  ++j;
  // The peers' chunks in the order they arrive: rank + 1's block first (enqueue_pushes).
  for (int i = 1; i < world_; ++i) {
    const int s = (rank_ + i) % world_;
    for (int ch = 0; ch < options_.chunks; ++ch, ++j) {
      cudaStream_t stream = streams[j % lanes];
      if (wait)
        OVERLAPSIM_TRY(enqueue_wait_geq(flags_.as<std::uint32_t>() + s * options_.chunks + ch,
                                        epoch, stream));
      OVERLAPSIM_TRY(
          plan(j).run(chunk_rows, s * block_rows + ch * chunk_rows, gathered_a, b, c, stream));
    }
  }
  return Status::success();
}

Status AllGatherGemmDesign::run_vendor_on_gathered(const void* gathered_a, const void* b, void* c,
                                                   cudaStream_t stream) const {
  if (!initialized_ || !options_.vendor_gemm)
    return Status::failure("tilewise allgather+gemm: run_vendor_on_gathered needs vendor_gemm");
  const char* own = static_cast<const char*>(gathered_a) +
                    static_cast<std::size_t>(rank_ * (m_ / world_) * k_) * kElementBytes;
  // One stream, the GEMMs in the call's order with the same plan sets.
  return enqueue_vendor_gemms(own, b, c, static_cast<const char*>(gathered_a), 0, false, {stream});
}

Status AllGatherGemmDesign::run(const void* a, const void* b, void* c, cudaStream_t compute_stream,
                                cudaStream_t comm_stream) {
  OVERLAPSIM_TRY(prepare(a, b, c));
  const std::uint32_t epoch = ++epoch_;
  const int parity = static_cast<int>(epoch & 1u);
  if (options_.vendor_gemm) {
    std::vector<cudaStream_t> used;
    OVERLAPSIM_TRY(enqueue_pushes(a, epoch, compute_stream, comm_stream, &used));
    std::vector<cudaStream_t> streams{compute_stream};
    if (vendor_stream_ != nullptr) {
      // The second stream starts at the fork (after the start barrier), and the compute
      // stream waits for its last GEMM before the call ends.
      CUDA_CHECK(cudaStreamWaitEvent(vendor_stream_, fork_, 0));
      streams.push_back(vendor_stream_);
    }
    OVERLAPSIM_TRY(enqueue_vendor_gemms(a, b, c, gathered(parity), epoch, true, streams));
    if (vendor_stream_ != nullptr) {
      CUDA_CHECK(cudaEventRecord(vendor_join_, vendor_stream_));
      CUDA_CHECK(cudaStreamWaitEvent(compute_stream, vendor_join_, 0));
    }
    if (trace_ != nullptr) CUDA_CHECK(cudaEventRecord(trace_->gemm_end, compute_stream));
    trace_ = nullptr;
    return join(used, compute_stream);
  }
  gemm::OwnGemm& g = *gemms_.at(std::make_tuple(a, b, c))[static_cast<std::size_t>(parity)];
  // The pushes first: the copy engines start while the GEMM launch is being issued.
  std::vector<cudaStream_t> used;
  OVERLAPSIM_TRY(enqueue_pushes(a, epoch, compute_stream, comm_stream, &used));
  OVERLAPSIM_TRY(g.run(compute_stream, epoch));
  if (trace_ != nullptr) CUDA_CHECK(cudaEventRecord(trace_->gemm_end, compute_stream));
  trace_ = nullptr;
  return join(used, compute_stream);
}

Status AllGatherGemmDesign::run_gather_only(const void* a, cudaStream_t compute_stream,
                                            cudaStream_t comm_stream) {
  if (!initialized_) return Status::failure("tilewise allgather+gemm: run before initialize()");
  const std::uint32_t epoch = ++epoch_;
  std::vector<cudaStream_t> used;
  OVERLAPSIM_TRY(enqueue_pushes(a, epoch, compute_stream, comm_stream, &used));
  for (int s = 0; s < world_; ++s) {
    if (s == rank_) continue;
    for (int ch = 0; ch < options_.chunks; ++ch)
      OVERLAPSIM_TRY(
          enqueue_wait_geq(flags_.as<std::uint32_t>() + s * options_.chunks + ch, epoch,
                           compute_stream));
  }
  trace_ = nullptr;
  return join(used, compute_stream);
}

Status AllGatherGemmDesign::check_waits() {
  int flag = 0;
  CUDA_CHECK(cudaMemcpy(&flag, timed_out_.data(), sizeof flag, cudaMemcpyDeviceToHost));
  if (flag != 0)
    return Status::failure("tilewise allgather+gemm: a wait for a peer's chunk of A timed out "
                           "after " +
                           std::to_string(options_.wait_timeout_s) + " s");
  return Status::success();
}

}  // namespace overlapsim::kernels::tilewise
