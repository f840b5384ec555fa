#include "kernels/tilewise/copy_engine_design.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "kernels/tilewise/design_support.hpp"
#include "kernels/tilewise/signal_wait.hpp"
#include "kernels/tilewise/tail_exchange.hpp"

namespace overlapsim::kernels::tilewise {
CopyEngineDesign::~CopyEngineDesign() {
  for (cudaEvent_t e : timeline_events_) cudaEventDestroy(e);
  for (cudaEvent_t e : phase2_joins_) cudaEventDestroy(e);
  for (cudaStream_t s : phase2_streams_) cudaStreamDestroy(s);
  if (phase2_fork_) cudaEventDestroy(phase2_fork_);
  if (fork_) cudaEventDestroy(fork_);
  if (join_) cudaEventDestroy(join_);
}

Status CopyEngineDesign::can_implement(CollectiveOp op, std::int64_t m, std::int64_t n,
                                       std::int64_t k, int world,
                                       const CopyEngineOptions& options) {
  if (k < 1) return Status::failure("tilewise copy_engine: k must be >= 1");
  if (auto e = owner_shape_error(op, m, n, world))
    return Status::failure("tilewise copy_engine: " + *e);
  if (options.groups_per_part < 1)
    return Status::failure("tilewise copy_engine: groups_per_part must be >= 1");
  if (auto e = route_error(op, options.route))
    return Status::failure("tilewise copy_engine: " + *e);
  if (options.row_chunks < 1 ||
      (options.row_chunks > 1 &&
       (op != CollectiveOp::AllReduce || options.phase2 == CopyEnginePhase2::Epilogue ||
        m % (std::int64_t{gemm::GemmConfig::kTileM} * world * options.row_chunks) != 0)))
    return Status::failure(
        "tilewise copy_engine: row_chunks = " + std::to_string(options.row_chunks) +
        " needs >= 1, and above 1 an allreduce without phase 2 by the epilogue and m a "
        "multiple of 128 x " +
        std::to_string(world) + " ranks x row_chunks, got " + to_string(op) +
        ", m = " + std::to_string(m));
  if (auto e = slabs_error(op, m, world, options.slabs, options.route))
    return Status::failure("tilewise copy_engine: " + *e);
  if (options.slabs > 1 && options.row_chunks > 1)
    return Status::failure(
        "tilewise copy_engine: slabs and row_chunks exclude each other (both "
        "cut the rows), got " +
        std::to_string(options.slabs) + " slabs and " + std::to_string(options.row_chunks) +
        " row chunks");
  if (options.tail_whole_part && options.phase2 != CopyEnginePhase2::TailKernel)
    return Status::failure("tilewise copy_engine: tail_whole_part needs phase 2 tail_kernel, got " +
                           std::string(to_string(options.phase2)));
  if (options.parallel_phase2 && options.phase2_side_stream)
    return Status::failure(
        "tilewise copy_engine: parallel_phase2 and phase2_side_stream exclude each other");
  if ((options.parallel_phase2 || options.phase2_side_stream) &&
      (op != CollectiveOp::AllReduce || options.phase2 == CopyEnginePhase2::Epilogue))
    return Status::failure(
        "tilewise copy_engine: parallel_phase2 needs an allreduce whose phase 2 the copy "
        "engines carry (copy_engine or tail_kernel), got " +
        std::string(to_string(op)) + " with phase 2 " + to_string(options.phase2));
  if (options.route == CopyEngineRoute::Ring && options.phase2 == CopyEnginePhase2::Epilogue)
    return Status::failure(
        "tilewise copy_engine: phase 2 by the epilogue needs the direct route (its mirror "
        "stores address the own part only)");
  if (options.phase2 == CopyEnginePhase2::TailKernel &&
      (op != CollectiveOp::AllReduce || world < 2 || world - 1 > kTailMaxPeers))
    return Status::failure(
        "tilewise copy_engine: phase 2 by the tail kernel needs allreduce on 2.." +
        std::to_string(kTailMaxPeers + 1) + " ranks, got " + to_string(op) + " on " +
        std::to_string(world) + " rank(s)");
  if (options.phase2 == CopyEnginePhase2::Epilogue &&
      (op != CollectiveOp::AllReduce || world != 2 || n % gemm::GemmConfig::kTileN != 0))
    return Status::failure(
        "tilewise copy_engine: phase 2 by the epilogue needs allreduce on 2 ranks and n a "
        "multiple of " +
        std::to_string(gemm::GemmConfig::kTileN) + " (full tiles), got " + to_string(op) + " on " +
        std::to_string(world) + " rank(s), n = " + std::to_string(n));
  return Status::success();
}

Status CopyEngineDesign::initialize(CommHandle* comm, CollectiveOp op, std::int64_t m,
                                    std::int64_t n, std::int64_t k, DType dtype,
                                    const CopyEngineOptions& options) {
  PeerLinks links;
  OVERLAPSIM_TRY(comm_peer_links(*comm, &links));
  return initialize(std::move(links), op, m, n, k, dtype, options);
}

Status CopyEngineDesign::initialize(PeerLinks links, CollectiveOp op, std::int64_t m,
                                    std::int64_t n, std::int64_t k, DType dtype,
                                    const CopyEngineOptions& options) {
  if (initialized_) return Status::failure("tilewise copy_engine: initialize() called twice");
  OVERLAPSIM_TRY(check_peer_links(links, "tilewise copy_engine"));
  OVERLAPSIM_TRY(can_implement(op, m, n, k, links.world, options));
  if (options.row_chunks > 1)
    return initialize_row_chunks(std::move(links), op, m, n, k, dtype, options);
  const int world = links.world, rank = links.rank;
  const bool shared_gpu = links.shared_gpu;
  if (shared_gpu && (options.parallel_phase2 || options.phase2_side_stream) && world > 2)
    return Status::failure(
        "tilewise copy_engine: parallel_phase2 with " + std::to_string(world) +
        " ranks sharing one GPU is refused: it hung there on H100 (3 and 4 ranks, with "
        "CUDA_DEVICE_MAX_CONNECTIONS 8 and 32; cause not found), while one rank per GPU "
        "passed every test");
  memory_ = std::make_unique<PeerMemory>(std::move(links));
  problem_ = {op, m, n, k, dtype};
  options_ = options;
  int sms = 0;
  OVERLAPSIM_TRY(current_device_sms(&sms));
  if (options.num_ctas < 0 || options.num_ctas > sms)
    return Status::failure("tilewise copy_engine: num_ctas must be in 0.." + std::to_string(sms) +
                           " (0: one per SM), got " + std::to_string(options.num_ctas));
  if (shared_gpu && world > 1 && (options.num_ctas == 0 || options.num_ctas * world > sms))
    return Status::failure(
        "tilewise copy_engine: " + std::to_string(world) + " ranks sharing one GPU of " +
        std::to_string(sms) + " SMs need num_ctas in 1.." + std::to_string(sms / world) +
        " (every rank's GEMM resident at once, or a waiting rank starves its peer), got " +
        std::to_string(options.num_ctas));
  const int ctas = options.num_ctas > 0 ? options.num_ctas : sms;
  if (auto e =
          build_copy_engine_layout(op, m, n, ctas, options.group_m, options.groups_per_part, world,
                                   rank, &plan_, options.route, options.slabs, options.slab_skew))
    return Status::failure("tilewise copy_engine: " + *e);
  OVERLAPSIM_TRY(upload(tile_offsets_, plan_.tile_offset_elems));
  OVERLAPSIM_TRY(upload(tile_groups_, plan_.tile_group));
  OVERLAPSIM_TRY(upload(tile_arrival_, plan_.tile_arrival));
  OVERLAPSIM_TRY(upload(out_offsets_, plan_.out_tile_offset_elems));
  const std::size_t flags = static_cast<std::size_t>(plan_.counters()) * sizeof(std::uint32_t);
  OVERLAPSIM_TRY(zeroed(counters_, flags));
  OVERLAPSIM_TRY(zeroed(arrived_, flags));
  OVERLAPSIM_TRY(zeroed(done_, flags));
  OVERLAPSIM_TRY(
      zeroed(tail_flags_, static_cast<std::size_t>(world) * kTailSlices * sizeof(std::uint32_t)));
  OVERLAPSIM_TRY(zeroed(timed_out_, sizeof(int)));
  OVERLAPSIM_TRY(flag_writer_.initialize());
  // Two parities × world slots × one part (units: the ring's buffer is laid out like P).
  OVERLAPSIM_TRY(recv_.allocate(2 * static_cast<std::size_t>(plan_.units()) *
                                static_cast<std::size_t>(plan_.part_elems) * kElementBytes));
  CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming));
  if ((options.parallel_phase2 || options.phase2_side_stream) && op == CollectiveOp::AllReduce &&
      world > 2) {
    CUDA_CHECK(cudaEventCreateWithFlags(&phase2_fork_, cudaEventDisableTiming));
    for (int i = 1; i < (options.phase2_side_stream ? 2 : world); ++i) {
      cudaStream_t s = nullptr;
      CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      phase2_streams_.push_back(s);
      cudaEvent_t e = nullptr;
      CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      phase2_joins_.push_back(e);
    }
  }
  OVERLAPSIM_TRY(preload_signal_wait());
  OVERLAPSIM_TRY(preload_unpermute_kernels());
  OVERLAPSIM_TRY(preload_tail_exchange());

  std::vector<std::vector<void*>> all;
  OVERLAPSIM_TRY(
      memory_->share({recv_.data(), arrived_.data(), done_.data(), tail_flags_.data()}, &all));
  peers_.assign(static_cast<std::size_t>(world), Peer{});
  for (int r = 0; r < world; ++r) {
    Peer& peer = peers_[static_cast<std::size_t>(r)];
    peer.recv = static_cast<char*>(all[static_cast<std::size_t>(r)][0]);
    peer.arrived = static_cast<std::uint32_t*>(all[static_cast<std::size_t>(r)][1]);
    peer.done = static_cast<std::uint32_t*>(all[static_cast<std::size_t>(r)][2]);
    peer.tail_flags = static_cast<std::uint32_t*>(all[static_cast<std::size_t>(r)][3]);
  }
  // The uploads and zeroed flags are done before any GEMM reads them. Ranks sharing one GPU
  // wait for their own setup only: a device-wide wait here would also wait for a peer's GEMM
  // that may already be waiting for this rank.
  if (shared_gpu) {
    CUDA_CHECK(cudaStreamSynchronize(nullptr));
  } else {
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  initialized_ = true;
  return Status::success();
}

Status CopyEngineDesign::initialize_row_chunks(PeerLinks links, CollectiveOp op, std::int64_t m,
                                               std::int64_t n, std::int64_t k, DType dtype,
                                               const CopyEngineOptions& options) {
  const int c = options.row_chunks;
  problem_ = {op, m, n, k, dtype};
  options_ = options;
  for (int i = 0; i < c; ++i) {
    CopyEngineOptions o = options;
    o.row_chunks = 1;
    if (i + 1 < c) {
      o.phase2 = CopyEnginePhase2::CopyEngine;
      o.tail_whole_part = false;
    }
    auto chunk = std::make_unique<CopyEngineDesign>();
    OVERLAPSIM_TRY(chunk->initialize(links, op, m / c, n, k, dtype, o));
    chunks_.push_back(std::move(chunk));
  }
  // The result's tile table over all rows: chunk i's tiles follow its P chunk.
  plan_ = chunks_.front()->plan_;
  plan_.out_rows = m;
  plan_.out_tiles_m = plan_.tiles_m * c;
  plan_.out_tile_offset_elems.clear();
  for (int i = 0; i < c; ++i)
    for (const std::int64_t offset :
         chunks_[static_cast<std::size_t>(i)]->plan_.out_tile_offset_elems)
      plan_.out_tile_offset_elems.push_back(offset + i * (m / c) * n);
  OVERLAPSIM_TRY(upload(out_offsets_, plan_.out_tile_offset_elems));
  CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming));
  initialized_ = true;  // the table's upload is synchronous; the chunks waited for their setup
  return Status::success();
}

const void* CopyEngineDesign::chunk_a(const void* a, int i) const {
  const std::int64_t rows = problem_.m / options_.row_chunks;
  return static_cast<const char*>(a) + i * rows * problem_.k * kElementBytes;
}

void* CopyEngineDesign::chunk_p(void* p, int i) const {
  const std::int64_t rows = problem_.m / options_.row_chunks;
  return static_cast<char*>(p) + i * rows * problem_.n * kElementBytes;
}

Status CopyEngineDesign::signal_peer(std::uint32_t* peer_flag, std::uint32_t epoch,
                                     cudaStream_t stream) {
  return flag_writer_.write(peer_flag, epoch, stream);
}

char* CopyEngineDesign::recv_half(int parity) const {
  return recv_.as<char>() + static_cast<std::size_t>(parity) * plan_.units() *
                                static_cast<std::size_t>(plan_.part_elems) * kElementBytes;
}

Status CopyEngineDesign::make_gemm(const void* a, const void* b, void* p, int parity, bool reduce,
                                   std::unique_ptr<gemm::OwnGemm>* out) {
  auto g = std::make_unique<gemm::OwnGemm>();
  const gemm::GemmArgs args = problem_.gemm_args(a, b, p);
  gemm::EpilogueArgs e =
      owner_epilogue_args(plan_, tile_offsets_, counters_, tile_groups_, tile_arrival_, arrived_);
  e.recv = recv_half(parity);
  if (problem_.op == CollectiveOp::AllToAll) {
    e.own_out = recv_half(parity);
    e.own_out_begin_elems = static_cast<std::int64_t>(plan_.rank) * plan_.part_elems;
  } else {
    e.own_out = p;
    e.own_out_begin_elems = plan_.own_begin_elems;
  }
  e.world = plan_.world;
  e.rank = plan_.rank;
  if (plan_.route == CopyEngineRoute::Ring) {
    // Every hop is a one-peer reduction for the epilogue: it sees rank 1 of 2, the
    // incoming running sum in slot 0 of a receive buffer laid out like P (slot 0 at recv,
    // the tile at its own P offset), its result stored back at that offset in P, and
    // arrival flags indexed like the counters (copy_engine_layout.hpp).
    e.own_begin_elems = 0;
    e.own_out = p;
    e.own_out_begin_elems = 0;
    e.world = 2;
    e.rank = 1;
  }
  e.reduce = reduce && problem_.op != CollectiveOp::AllToAll && plan_.world > 1;
  e.wait_timeout_s = options_.wait_timeout_s;
  e.timed_out = timed_out_.as<int>();
  e.system_scope_signal = options_.system_scope_signal;
  if (options_.phase2 == CopyEnginePhase2::Epilogue && e.reduce) {
    // The peer's P where it keeps our part (prepare() exchanged the pointers).
    const int peer = 1 - plan_.rank;
    e.peer_out = peer_p_.at(p)[static_cast<std::size_t>(peer)] +
                 plan_.part_begin_on(peer, plan_.rank) * kElementBytes;
  }
  gemm::SchedulerOptions sched = owner_scheduler(plan_, plan_.world, plan_.rank);
  sched.split_k_tail = options_.split_k_tail;
  OVERLAPSIM_TRY(g->initialize(args, e, sched));
  *out = std::move(g);
  return Status::success();
}

Status CopyEngineDesign::prepare(const void* a, const void* b, void* p) {
  if (!initialized_) return Status::failure("tilewise copy_engine: prepare() before initialize()");
  if (!chunks_.empty()) {
    for (std::size_t i = 0; i < chunks_.size(); ++i)
      OVERLAPSIM_TRY(
          chunks_[i]->prepare(chunk_a(a, static_cast<int>(i)), b, chunk_p(p, static_cast<int>(i))));
    return Status::success();
  }
  if (problem_.op == CollectiveOp::AllReduce && plan_.world > 1 && !peer_p_.count(p)) {
    std::vector<std::vector<void*>> all;
    OVERLAPSIM_TRY(memory_->share({p}, &all));
    std::vector<char*> ps;
    for (const auto& r : all) ps.push_back(static_cast<char*>(r[0]));
    peer_p_.emplace(p, ps);
  }
  const auto key = std::make_tuple(a, b, p);
  if (gemms_.count(key)) return Status::success();
  std::array<std::unique_ptr<gemm::OwnGemm>, 2> pair;
  for (int parity = 0; parity < 2; ++parity)
    OVERLAPSIM_TRY(make_gemm(a, b, p, parity, true, &pair[static_cast<std::size_t>(parity)]));
  gemms_.emplace(key, std::move(pair));
  return Status::success();
}

Status CopyEngineDesign::run(const void* a, const void* b, void* p, cudaStream_t compute_stream,
                             cudaStream_t comm_stream) {
  if (!chunks_.empty()) {
    // Every chunk's GEMM and transport back to back, then every chunk's peer waits, then
    // one join: the comm stream runs chunk i's phase 2 while chunk i + 1's GEMM computes.
    OVERLAPSIM_TRY(prepare(a, b, p));
    for (std::size_t i = 0; i < chunks_.size(); ++i)
      OVERLAPSIM_TRY(chunks_[i]->enqueue(chunk_a(a, static_cast<int>(i)), b,
                                         chunk_p(p, static_cast<int>(i)), compute_stream,
                                         comm_stream));
    for (const auto& chunk : chunks_) OVERLAPSIM_TRY(chunk->enqueue_peer_waits(comm_stream));
    CUDA_CHECK(cudaEventRecord(join_, comm_stream));
    CUDA_CHECK(cudaStreamWaitEvent(compute_stream, join_, 0));
    return Status::success();
  }
  OVERLAPSIM_TRY(enqueue(a, b, p, compute_stream, comm_stream));
  OVERLAPSIM_TRY(enqueue_peer_waits(comm_stream));
  OVERLAPSIM_TRY(mark("peers_done", comm_stream));
  CUDA_CHECK(cudaEventRecord(join_, comm_stream));
  CUDA_CHECK(cudaStreamWaitEvent(compute_stream, join_, 0));
  OVERLAPSIM_TRY(mark("end", compute_stream));
  return Status::success();
}

Status CopyEngineDesign::enqueue(const void* a, const void* b, void* p, cudaStream_t compute_stream,
                                 cudaStream_t comm_stream) {
  OVERLAPSIM_TRY(prepare(a, b, p));
  const std::uint32_t epoch = ++epoch_;
  const int parity = static_cast<int>(epoch & 1u);
  gemm::OwnGemm& g = *gemms_.at(std::make_tuple(a, b, p))[static_cast<std::size_t>(parity)];
  const int world = plan_.world, rank = plan_.rank;
  const int G = plan_.groups_per_part;
  const std::size_t part_bytes = static_cast<std::size_t>(plan_.part_elems) * kElementBytes;
  const int units = plan_.units();
  const int last_slab = plan_.slabs - 1;
  timeline_used_ = 0;
  OVERLAPSIM_TRY(mark("start", compute_stream));
  CUDA_CHECK(cudaEventRecord(fork_, compute_stream));
  CUDA_CHECK(cudaStreamWaitEvent(comm_stream, fork_, 0));
  OVERLAPSIM_TRY(g.run(compute_stream, epoch));
  OVERLAPSIM_TRY(mark("gemm_end", compute_stream));
  char* local = static_cast<char*>(p);
  std::uint32_t* counters = counters_.as<std::uint32_t>();
  const bool tail_kernel = options_.phase2 == CopyEnginePhase2::TailKernel &&
                           problem_.op == CollectiveOp::AllReduce && world > 1;
  // The own groups the tail kernel carries: the last, or with tail_whole_part all of them.
  const int tail_from = tail_kernel ? (options_.tail_whole_part ? 0 : G - 1) : G;
  for (const CopyEngineGroup& group : plan_.groups) {
    const bool own = group.position == world - 1;
    if (own && (problem_.op != CollectiveOp::AllReduce || world == 1)) continue;
    // The tail kernel carries (part of) the last slab's own groups only; earlier slabs' go
    // by the copy engines under the next slab's GEMM.
    if (own && group.slab == last_slab && group.index >= tail_from) {
      if (group.index == G - 1)
        OVERLAPSIM_TRY(exchange_tail(tail_from, local, p, epoch, compute_stream));
      continue;
    }
    std::uint32_t* counter = counters + group.unit * G + group.index;
    OVERLAPSIM_TRY(enqueue_wait_geq(counter, static_cast<std::uint32_t>(group.tiles), comm_stream));
    OVERLAPSIM_TRY(enqueue_write_value(counter, 0, comm_stream));
    // Timeline labels are built only when it is on (the host enqueues timed calls here).
    const std::string tag =
        timeline_on_ ? (plan_.slabs > 1 ? "s" + std::to_string(group.slab) + "_" : std::string()) +
                           (own ? "own_g" : "part" + std::to_string(group.part) + "_g") +
                           std::to_string(group.index)
                     : std::string();
    if (timeline_on_) OVERLAPSIM_TRY(mark(tag + "_ready", comm_stream));
    const char* src = local + group.begin_elems * kElementBytes;
    const std::size_t bytes = static_cast<std::size_t>(group.elems) * kElementBytes;
    if (!own && plan_.route == CopyEngineRoute::Ring) {
      // Phase 1 by the ring: the group's running sum to the next rank, which computes this
      // part one position later; there it lies at that position's place, this parity.
      const int next = plan_.ring_next();
      const Peer& to = peers_[static_cast<std::size_t>(next)];
      const std::int64_t at = (group.unit + 1) * plan_.part_elems + group.relative_begin_elems;
      char* dst = to.recv + static_cast<std::size_t>(parity) * units * part_bytes +
                  static_cast<std::size_t>(at) * kElementBytes;
      CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, comm_stream));
      if (timeline_on_) OVERLAPSIM_TRY(mark(tag + "_copied", comm_stream));
      OVERLAPSIM_TRY(
          signal_peer(to.arrived + (group.unit + 1) * G + group.index, epoch, comm_stream));
      continue;
    }
    if (!own) {
      // Phase 1: the group's partial tiles to their owner, slot `rank`, this call's parity.
      const Peer& to = peers_[static_cast<std::size_t>(group.part)];
      char* dst = to.recv + static_cast<std::size_t>(parity) * units * part_bytes +
                  static_cast<std::size_t>(rank) * part_bytes +
                  static_cast<std::size_t>(group.relative_begin_elems) * kElementBytes;
      CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, comm_stream));
      if (timeline_on_) OVERLAPSIM_TRY(mark(tag + "_copied", comm_stream));
      OVERLAPSIM_TRY(signal_peer(to.arrived + rank * G + group.index, epoch, comm_stream));
      continue;
    }
    if (options_.phase2 == CopyEnginePhase2::Epilogue) {
      // The epilogue stored the group's reduced tiles into the peer's P already; its
      // system-scope signal ordered them before the counter this stream waited for.
      const int d = 1 - rank;
      OVERLAPSIM_TRY(signal_peer(peers_[static_cast<std::size_t>(d)].done +
                                     plan_.done_index(rank, group.slab, group.index),
                                 epoch, comm_stream));
      continue;
    }
    // Phase 2 (allreduce): the reduced own group to every peer's P, where that peer keeps
    // our part. Peers in rotated order (rank + 1, rank + 2, ...), as phase 1's parts: in
    // rank order every rank's i-th copy would go to the same peer at once, one NVLink port
    // taking all n - 1 streams while the others idle. With parallel_phase2 every peer's copy
    // starts from the counter seen here, each on its own stream, and the comm stream goes
    // on to the next group's counter (or the next row chunk's phase 1) at once.
    if (!phase2_streams_.empty()) {
      CUDA_CHECK(cudaEventRecord(phase2_fork_, comm_stream));
      phase2_forked_ = true;
    }
    for (int i = 1; i < world; ++i) {
      const int d = (rank + i) % world;
      cudaStream_t s = comm_stream;
      if (!phase2_streams_.empty()) {
        // One stream a peer, or with phase2_side_stream one for all of them.
        s = phase2_streams_[std::min(static_cast<std::size_t>(i - 1), phase2_streams_.size() - 1)];
        if (i == 1 || phase2_streams_.size() > 1)
          CUDA_CHECK(cudaStreamWaitEvent(s, phase2_fork_, 0));
      }
      char* dst = phase2_destination(p, d, group);
      CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
      if (timeline_on_) OVERLAPSIM_TRY(mark(tag + "_copied_to_r" + std::to_string(d), s));
      OVERLAPSIM_TRY(signal_peer(peers_[static_cast<std::size_t>(d)].done +
                                     plan_.done_index(rank, group.slab, group.index),
                                 epoch, s));
    }
  }
  return Status::success();
}

Status CopyEngineDesign::enqueue_peer_waits(cudaStream_t comm_stream) {
  const int world = plan_.world, rank = plan_.rank;
  const int G = plan_.groups_per_part;
  const std::uint32_t epoch = epoch_;
  const bool tail_kernel = options_.phase2 == CopyEnginePhase2::TailKernel &&
                           problem_.op == CollectiveOp::AllReduce && world > 1;
  // Our own phase-2 copies on the extra streams are part of the call: the comm stream (and
  // through it the compute stream) waits for them, and the next call's forks come after.
  if (phase2_forked_) {
    for (std::size_t i = 0; i < phase2_streams_.size(); ++i) {
      CUDA_CHECK(cudaEventRecord(phase2_joins_[i], phase2_streams_[i]));
      CUDA_CHECK(cudaStreamWaitEvent(comm_stream, phase2_joins_[i], 0));
    }
    phase2_forked_ = false;
  }
  // The result is complete once every peer's copies into our buffers have landed.
  if (world > 1 && problem_.op != CollectiveOp::ReduceScatter) {
    const std::uint32_t* flags = problem_.op == CollectiveOp::AllReduce
                                     ? done_.as<std::uint32_t>()
                                     : arrived_.as<std::uint32_t>();
    const bool done_flags = problem_.op == CollectiveOp::AllReduce;
    for (int s = 0; s < world; ++s) {
      if (s == rank) continue;
      for (int slab = 0; slab < plan_.slabs; ++slab) {
        // The tail kernel has waited for the last slab's last groups' slices itself.
        const bool last = slab == plan_.slabs - 1;
        const int waited = tail_kernel && last ? (options_.tail_whole_part ? 0 : G - 1) : G;
        for (int j = 0; j < waited; ++j)
          OVERLAPSIM_TRY(enqueue_wait_geq(
              flags + (done_flags ? plan_.done_index(s, slab, j) : s * G + j), epoch, comm_stream));
      }
    }
  }
  return Status::success();
}

Status CopyEngineDesign::exchange_tail(int from, const char* local, void* p, std::uint32_t epoch,
                                       cudaStream_t compute_stream) {
  const int world = plan_.world, rank = plan_.rank;
  const int G = plan_.groups_per_part;
  // The own groups from..G-1 lie back to back in P and in every peer's P (a part's groups
  // are consecutive rows, copy_engine_layout.hpp): one region.
  const CopyEngineGroup* first = nullptr;
  std::int64_t elems = 0;
  const int last_slab = plan_.slabs - 1;
  for (const CopyEngineGroup& group : plan_.groups)
    if (group.position == world - 1 && group.slab == last_slab && group.index >= from) {
      if (group.index == from) first = &group;
      elems += group.elems;
    }
  if (first == nullptr)
    return Status::failure("tilewise copy_engine: no own group " + std::to_string(from));
  TailExchangeArgs t;
  t.src = local + first->begin_elems * kElementBytes;
  t.bytes = static_cast<std::size_t>(elems) * kElementBytes;
  set_tail_peers(
      world, rank, [&](int d) { return phase2_destination(p, d, *first); },
      [&](int d) { return peers_[static_cast<std::size_t>(d)].tail_flags; },
      tail_flags_.as<std::uint32_t>(), &t);
  t.epoch = epoch;
  t.grid = std::min(kTailSlices, plan_.num_ctas);
  std::uint32_t* own_counters = counters_.as<std::uint32_t>() + (last_slab * world + world - 1) * G;
  t.reset_counter = own_counters + (G - 1);
  t.timeout_s = options_.wait_timeout_s;
  t.timed_out = timed_out_.as<int>();
  OVERLAPSIM_TRY(launch_tail_exchange(t, compute_stream));
  // The other groups' counters, zeroed for the next call (whose GEMM follows on this stream).
  for (int j = from; j < G - 1; ++j)
    OVERLAPSIM_TRY(enqueue_write_value(own_counters + j, 0, compute_stream));
  return mark("tail_exchanged", compute_stream);
}

char* CopyEngineDesign::phase2_destination(void* p, int d, const CopyEngineGroup& group) const {
  return peer_p_.at(p)[static_cast<std::size_t>(d)] +
         (plan_.part_begin_on(d, plan_.rank, group.slab) + group.relative_begin_elems) *
             kElementBytes;
}

Status CopyEngineDesign::mark(const std::string& label, cudaStream_t stream) {
  if (!timeline_on_) return Status::success();
  if (timeline_used_ == timeline_events_.size()) {
    cudaEvent_t e = nullptr;
    CUDA_CHECK(cudaEventCreate(&e));
    timeline_events_.push_back(e);
    timeline_labels_.emplace_back();
  }
  timeline_labels_[timeline_used_] = label;
  CUDA_CHECK(cudaEventRecord(timeline_events_[timeline_used_], stream));
  ++timeline_used_;
  return Status::success();
}

Status CopyEngineDesign::timeline(std::vector<std::pair<std::string, double>>* out) const {
  out->clear();
  if (!chunks_.empty()) {
    for (std::size_t i = 0; i < chunks_.size(); ++i) {
      std::vector<std::pair<std::string, double>> steps;
      OVERLAPSIM_TRY(chunks_[i]->timeline(&steps));
      for (auto& [label, t_us] : steps) {
        std::string name = "c";
        name += std::to_string(i);
        name += '_';
        name += label;
        out->emplace_back(std::move(name), t_us);
      }
    }
    return Status::success();
  }
  if (timeline_used_ == 0) return Status::failure("tilewise copy_engine: no timeline recorded");
  for (std::size_t i = 0; i < timeline_used_; ++i) {
    CUDA_CHECK(cudaEventSynchronize(timeline_events_[i]));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, timeline_events_[0], timeline_events_[i]));
    out->emplace_back(timeline_labels_[i], 1e3 * ms);
  }
  return Status::success();
}

Status CopyEngineDesign::run_gemm_only(const void* a, const void* b, void* p, cudaStream_t stream) {
  if (!initialized_) return Status::failure("tilewise copy_engine: run before initialize()");
  if (!chunks_.empty()) {
    for (std::size_t i = 0; i < chunks_.size(); ++i)
      OVERLAPSIM_TRY(chunks_[i]->run_gemm_only(chunk_a(a, static_cast<int>(i)), b,
                                               chunk_p(p, static_cast<int>(i)), stream));
    return Status::success();
  }
  const auto key = std::make_tuple(a, b, p);
  auto found = gemm_only_.find(key);
  if (found == gemm_only_.end()) {
    std::unique_ptr<gemm::OwnGemm> g;
    OVERLAPSIM_TRY(make_gemm(a, b, p, 0, false, &g));
    found = gemm_only_.emplace(key, std::move(g)).first;
  }
  OVERLAPSIM_TRY(found->second->run(stream, 0));
  CUDA_CHECK(cudaMemsetAsync(counters_.data(), 0, counters_.bytes(), stream));
  return Status::success();
}

TileView CopyEngineDesign::result_view(const void* p) const {
  TileView v;
  v.data = problem_.op == CollectiveOp::AllToAll
               ? static_cast<const void*>(recv_half(static_cast<int>(epoch_ & 1u)))
               : p;
  v.tile_offset_elems = out_offsets_.as<std::int64_t>();
  v.rows = plan_.out_rows;
  v.cols = problem_.n;
  return v;
}

Status CopyEngineDesign::unpermute(const void* p, void* natural, cudaStream_t stream) const {
  return tilewise::unpermute(result_view(p), natural, problem_.dtype, stream);
}

Status CopyEngineDesign::check_waits() {
  for (const auto& chunk : chunks_) OVERLAPSIM_TRY(chunk->check_waits());
  if (!chunks_.empty()) return Status::success();
  int flag = 0;
  CUDA_CHECK(cudaMemcpy(&flag, timed_out_.data(), sizeof flag, cudaMemcpyDeviceToHost));
  if (flag != 0)
    return Status::failure(
        "tilewise copy_engine: a wait for a peer's group (the epilogue's or the tail "
        "kernel's) timed out "
        "after " +
        std::to_string(options_.wait_timeout_s) + " s");
  return Status::success();
}

}  // namespace overlapsim::kernels::tilewise
