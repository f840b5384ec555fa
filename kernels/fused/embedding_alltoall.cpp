#include "kernels/fused/embedding_alltoall.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>

#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/fused/device_timeout.hpp"
#include "kernels/fused/embedding_alltoall_kernel.hpp"
#include "kernels/fused/peer_receive.hpp"
#include "kernels/ops/embedding_bag.hpp"

namespace overlapsim::kernels::fused {

namespace a2a = embedding_a2a;

std::vector<int> EmbeddingAllToAllShape::owned(int rank) const {
  std::vector<int> out;
  for (std::size_t t = 0; t < owner.size(); ++t)
    if (owner[t] == rank) out.push_back(static_cast<int>(t));
  return out;
}

std::vector<int> shard_tables(const std::vector<EmbeddingTable>& tables, int world) {
  std::vector<int> order(tables.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return tables[a].pooling > tables[b].pooling; });
  std::vector<std::int64_t> load(static_cast<std::size_t>(std::max(world, 1)), 0);
  std::vector<int> owner(tables.size(), 0);
  for (int t : order) {
    const auto least = std::min_element(load.begin(), load.end());
    owner[static_cast<std::size_t>(t)] = static_cast<int>(least - load.begin());
    *least += tables[static_cast<std::size_t>(t)].pooling;
  }
  return owner;
}

std::size_t received_count(const EmbeddingAllToAllShape& shape) {
  return shape.tables.size() * static_cast<std::size_t>(shape.local_batch * shape.dim);
}

EmbeddingAllToAll::EmbeddingAllToAll() = default;

EmbeddingAllToAll::~EmbeddingAllToAll() {
  if (window_ != nullptr && comm_ != nullptr) ncclCommWindowDeregister(comm_->comm, window_);
  if (nccl_buffer_ != nullptr) ncclMemFree(nccl_buffer_);
}

Status EmbeddingAllToAll::can_implement(const EmbeddingAllToAllShape& shape, DType dtype) {
  OVERLAPSIM_TRY(a2a::can_launch(shape.dim, dtype));
  if (shape.world < 1 || shape.world > a2a::kMaxWorld)
    return Status::failure("fused embedding+alltoall: 1.." + std::to_string(a2a::kMaxWorld) +
                           " ranks, got " + std::to_string(shape.world));
  if (shape.local_batch < 1) return Status::failure("fused embedding+alltoall: local batch >= 1");
  // The kernel numbers a rank's tasks (at most a bag each per table) and columns in int.
  if (shape.global_batch() > ((std::int64_t{1} << 31) - 1) / a2a::kMaxSlots ||
      shape.dim > (std::int64_t{1} << 30))
    return Status::failure("fused embedding+alltoall: global batch under 2^31 / " +
                           std::to_string(a2a::kMaxSlots) + " and dim at most 2^30");
  if (shape.tables.empty() || shape.owner.size() != shape.tables.size())
    return Status::failure("fused embedding+alltoall: one owner per table, at least one table");
  for (std::size_t t = 0; t < shape.tables.size(); ++t) {
    const EmbeddingTable& table = shape.tables[t];
    if (table.rows < 1 || table.rows > (std::int64_t{1} << 31) - 1 || table.pooling < 1)
      return Status::failure("fused embedding+alltoall: table " + std::to_string(t) +
                             ": rows in 1..2^31-1 and pooling >= 1");
    if (shape.owner[t] < 0 || shape.owner[t] >= shape.world)
      return Status::failure("fused embedding+alltoall: table " + std::to_string(t) +
                             " owned by rank " + std::to_string(shape.owner[t]));
  }
  for (int r = 0; r < shape.world; ++r)
    if (shape.owned(r).size() > static_cast<std::size_t>(a2a::kMaxSlots))
      return Status::failure("fused embedding+alltoall: rank " + std::to_string(r) + " owns over " +
                             std::to_string(a2a::kMaxSlots) + " tables");
  return Status::success();
}

Status EmbeddingAllToAll::initialize(CommHandle* comm, const EmbeddingAllToAllShape& shape,
                                     DType dtype, const EmbeddingAllToAllOptions& options) {
  const int world = comm == nullptr ? 1 : comm->world;
  if (shape.world != world)
    return Status::failure("fused embedding+alltoall: shape for " + std::to_string(shape.world) +
                           " ranks on " + std::to_string(world));
  OVERLAPSIM_TRY(can_implement(shape, dtype));
  shape_ = shape;
  dtype_ = dtype;
  world_ = world;
  rank_ = comm == nullptr ? 0 : comm->rank;
  slots_ = shape.owned(rank_);
  epoch_ = 0;
  timeout_s_ = options.timeout_s;
  transport_ = options.transport;
  comm_ = comm;
  OVERLAPSIM_TRY(a2a::preload());
  if (options.row_loads != 4 && options.row_loads != 8)
    return Status::failure("fused embedding+alltoall: row_loads 4 or 8, got " +
                           std::to_string(options.row_loads));
  counted_ = 0;
  a2a::KernelArgs probe;
  OVERLAPSIM_TRY(fill_args(nullptr, nullptr, &probe));
  std::vector<double> grids(2);
  for (int d = 0; d < 2; ++d) {
    int grid = 0;
    probe.row_loads = 4 << d;
    OVERLAPSIM_TRY(a2a::launch_grid(probe, dtype, &grid));
    grids[static_cast<std::size_t>(d)] = grid;
  }
  // One grid for all, per depth: each call's counters expect the call's grid from every
  // source.
  if (comm != nullptr && world > 1) OVERLAPSIM_TRY(allreduce_host(*comm, nullptr, grids, ncclMax));
  for (int d = 0; d < 2; ++d) grids_[d] = static_cast<int>(grids[static_cast<std::size_t>(d)]);
  row_loads_ = options.row_loads;
  grid_ = grids_[row_loads_ == 8 ? 1 : 0];
  const std::size_t elem = dtype_bytes(dtype);
  const std::size_t send_count = std::max<std::size_t>(slots_.size(), 1) *
                                 static_cast<std::size_t>(shape.global_batch()) *
                                 static_cast<std::size_t>(shape.dim);
  OVERLAPSIM_TRY(send_.allocate(send_count * elem));
  OVERLAPSIM_TRY(timed_out_.allocate(sizeof(int)));
  CUDA_CHECK(cudaMemset(timed_out_.data(), 0, sizeof(int)));

  const std::size_t recv_bytes = 2 * received_count(shape) * elem;
  const std::size_t counter_bytes = static_cast<std::size_t>(world) * sizeof(std::uint32_t);
  if (transport_ == GemvTransport::NcclWindow) {
    if (comm == nullptr)
      return Status::failure("fused embedding+alltoall: nccl_window needs ranks");
    counters_offset_bytes_ = (recv_bytes + 15) / 16 * 16;
    NCCL_CHECK(ncclMemAlloc(&nccl_buffer_, counters_offset_bytes_ + counter_bytes));
    CUDA_CHECK(
        cudaMemset(static_cast<char*>(nccl_buffer_) + counters_offset_bytes_, 0, counter_bytes));
    CUDA_CHECK(cudaDeviceSynchronize());
    NCCL_SETTLE(*comm, ncclCommWindowRegister(comm->comm, nccl_buffer_,
                                              counters_offset_bytes_ + counter_bytes, &window_,
                                              NCCL_WIN_COLL_SYMMETRIC));
    return Status::success();
  }
  OVERLAPSIM_TRY(recv_.allocate(recv_bytes));
  OVERLAPSIM_TRY(counters_.allocate(counter_bytes));
  CUDA_CHECK(cudaMemset(counters_.data(), 0, counter_bytes));
  CUDA_CHECK(cudaDeviceSynchronize());  // counters at 0 before any peer can see them
  return share_peer_receive(comm, world, recv_.data(), counters_.data(), &receive_);
}

Status EmbeddingAllToAll::fill_args(const void* const* tables, const std::int32_t* const* indices,
                                    void* out) {
  auto& a = *static_cast<a2a::KernelArgs*>(out);
  a.slots = static_cast<int>(slots_.size());
  a.tables_total = static_cast<int>(shape_.tables.size());
  a.local_batch = shape_.local_batch;
  a.dim = shape_.dim;
  a.row_loads = row_loads_;
  a.world = world_;
  a.rank = rank_;
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    const int t = slots_[s];
    a.tables[s] = tables == nullptr ? nullptr : tables[s];
    a.indices[s] = indices == nullptr ? nullptr : indices[s];
    a.pooling[s] = static_cast<std::int32_t>(shape_.tables[static_cast<std::size_t>(t)].pooling);
    a.table_id[s] = t;
    if (tables != nullptr && (a.tables[s] == nullptr || a.indices[s] == nullptr))
      return Status::failure("fused embedding+alltoall: slot " + std::to_string(s) +
                             " has no table or indices");
  }
  a.out = send_.data();
  return Status::success();
}

Status EmbeddingAllToAll::run(const void* const* tables, const std::int32_t* const* indices,
                              cudaStream_t stream) {
  if (grid_ == 0) return Status::failure("fused embedding+alltoall: run before initialize");
  a2a::KernelArgs a;
  OVERLAPSIM_TRY(fill_args(tables, indices, &a));
  a.push = true;
  for (int r = 0; r < world_; ++r) {
    a.recv[r] = receive_.recv[r];
    a.counters[r] = static_cast<std::uint32_t*>(receive_.counters[r]);
  }
  a.window = window_;
  a.counters_offset_bytes = counters_offset_bytes_;
  ++epoch_;
  if (epoch_ == 0) ++epoch_;  // the parity's start, as the first call's
  a.epoch = epoch_;
  counted_ += static_cast<std::uint32_t>(grid_);
  a.expected = counted_;
  a.timeout_ns = static_cast<std::uint64_t>(timeout_s_ * 1e9);
  a.timed_out = timed_out_.as<int>();
  return a2a::launch(a, dtype_, grid_, stream);
}

const void* EmbeddingAllToAll::received() const {
  const char* base = window_ != nullptr ? static_cast<const char*>(nccl_buffer_)
                                        : static_cast<const char*>(recv_.data());
  return base +
         static_cast<std::size_t>(epoch_ & 1u) * received_count(shape_) * dtype_bytes(dtype_);
}

Status EmbeddingAllToAll::lookup(const void* const* tables, const std::int32_t* const* indices,
                                 cudaStream_t stream) {
  const EmbeddingBagShape bag_shape_base{0, shape_.dim, shape_.global_batch(), 0};
  const std::size_t slot_elems = static_cast<std::size_t>(shape_.global_batch() * shape_.dim);
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    EmbeddingBagShape bag_shape = bag_shape_base;
    const EmbeddingTable& table = shape_.tables[static_cast<std::size_t>(slots_[s])];
    bag_shape.table_rows = table.rows;
    bag_shape.pooling = table.pooling;
    BagRange range;
    range.count = shape_.global_batch();
    char* out = static_cast<char*>(send_.data()) + s * slot_elems * dtype_bytes(dtype_);
    OVERLAPSIM_TRY(embedding_bag_sum(tables[s], indices[s], out, bag_shape, range, dtype_, stream));
  }
  return Status::success();
}

Status EmbeddingAllToAll::lookup_own(const void* const* tables, const std::int32_t* const* indices,
                                     cudaStream_t stream) {
  a2a::KernelArgs a;
  OVERLAPSIM_TRY(fill_args(tables, indices, &a));
  a.push = false;
  return a2a::launch(a, dtype_, grid_, stream);
}

Status EmbeddingAllToAll::set_row_loads(int row_loads) {
  if (grid_ == 0)
    return Status::failure("fused embedding+alltoall: set_row_loads before initialize");
  if (row_loads != 4 && row_loads != 8)
    return Status::failure("fused embedding+alltoall: row_loads 4 or 8, got " +
                           std::to_string(row_loads));
  row_loads_ = row_loads;
  grid_ = grids_[row_loads == 8 ? 1 : 0];
  return Status::success();
}

Status EmbeddingAllToAll::tune(const void* const* tables, const std::int32_t* const* indices,
                               cudaStream_t stream, std::string* report) {
  if (grid_ == 0) return Status::failure("fused embedding+alltoall: tune before initialize");
  // Each depth in turn per round (clock drift spreads over both); a depth's time is its
  // fastest round's mean of kReps lookups back to back.
  constexpr int kRounds = 3, kReps = 3;
  const int depths[2] = {4, 8};
  std::vector<double> best(2, 1e30);
  cudaEvent_t start = nullptr, stop = nullptr;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  Status status = Status::success();
  for (int round = 0; round < kRounds && status.ok; ++round)
    for (int d = 0; d < 2 && status.ok; ++d) {
      status = set_row_loads(depths[d]);
      if (status.ok) status = lookup_own(tables, indices, stream);  // warm-up
      if (status.ok && cudaEventRecord(start, stream) != cudaSuccess)
        status = Status::failure("fused embedding+alltoall: tune's event record failed");
      for (int i = 0; i < kReps && status.ok; ++i) status = lookup_own(tables, indices, stream);
      if (status.ok && (cudaEventRecord(stop, stream) != cudaSuccess ||
                        cudaEventSynchronize(stop) != cudaSuccess))
        status = Status::failure("fused embedding+alltoall: tune's timing failed");
      float ms = 0;
      if (status.ok && cudaEventElapsedTime(&ms, start, stop) == cudaSuccess)
        best[static_cast<std::size_t>(d)] =
            std::min(best[static_cast<std::size_t>(d)], 1e3 * ms / kReps);
    }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  OVERLAPSIM_TRY(status);
  // One choice on every rank (the grid and depth of a call must agree): the slowest rank's
  // time decides.
  if (comm_ != nullptr && world_ > 1) OVERLAPSIM_TRY(allreduce_host(*comm_, stream, best, ncclMax));
  const int pick = best[1] < best[0] ? 1 : 0;
  OVERLAPSIM_TRY(set_row_loads(depths[pick]));
  if (report != nullptr) {
    char text[128];
    std::snprintf(text, sizeof text, "chose row_loads %d grid %d; us: 4=%.1f 8=%.1f", row_loads_,
                  grid_, best[0], best[1]);
    *report = text;
  }
  return Status::success();
}

Status EmbeddingAllToAll::exchange(void* out, cudaStream_t stream) {
  const std::size_t elem = dtype_bytes(dtype_);
  const std::size_t block = static_cast<std::size_t>(shape_.local_batch * shape_.dim);
  const std::size_t slot_elems = block * static_cast<std::size_t>(world_);
  const char* send = static_cast<const char*>(send_.data());
  char* recv = static_cast<char*>(out);
  if (comm_ == nullptr || world_ == 1) {
    for (std::size_t s = 0; s < slots_.size(); ++s)
      CUDA_CHECK(cudaMemcpyAsync(recv + static_cast<std::size_t>(slots_[s]) * block * elem,
                                 send + s * slot_elems * elem, block * elem,
                                 cudaMemcpyDeviceToDevice, stream));
    return Status::success();
  }
  // Per peer pair NCCL matches sends and receives in order: both sides walk the tables in
  // table order.
  const ncclDataType_t type = nccl_type(dtype_);
  NCCL_SETTLE(*comm_, ncclGroupStart());
  for (int peer = 0; peer < world_; ++peer) {
    for (std::size_t s = 0; s < slots_.size(); ++s)
      NCCL_SETTLE(*comm_,
                  ncclSend(send + (s * slot_elems + static_cast<std::size_t>(peer) * block) * elem,
                           block, type, peer, comm_->comm, stream));
    for (std::size_t t = 0; t < shape_.tables.size(); ++t)
      if (shape_.owner[t] == peer)
        NCCL_SETTLE(*comm_,
                    ncclRecv(recv + t * block * elem, block, type, peer, comm_->comm, stream));
  }
  NCCL_SETTLE(*comm_, ncclGroupEnd());
  return Status::success();
}

Status EmbeddingAllToAll::run_sequential(const void* const* tables,
                                         const std::int32_t* const* indices, void* out,
                                         cudaStream_t stream) {
  OVERLAPSIM_TRY(lookup(tables, indices, stream));
  return exchange(out, stream);
}

Status EmbeddingAllToAll::run_sequential_own(const void* const* tables,
                                             const std::int32_t* const* indices, void* out,
                                             cudaStream_t stream) {
  OVERLAPSIM_TRY(lookup_own(tables, indices, stream));
  return exchange(out, stream);
}

Status EmbeddingAllToAll::check_timeout(cudaStream_t stream) const {
  return read_timeout_flag(timed_out_, stream, "fused embedding+alltoall", rank_, "a source's rows",
                           timeout_s_);
}

std::uint64_t EmbeddingAllToAll::remote_send_bytes() const {
  return static_cast<std::uint64_t>(slots_.size()) * static_cast<std::uint64_t>(world_ - 1) *
         static_cast<std::uint64_t>(shape_.local_batch * shape_.dim) * dtype_bytes(dtype_);
}

}  // namespace overlapsim::kernels::fused
