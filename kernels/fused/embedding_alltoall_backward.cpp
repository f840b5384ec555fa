#include "kernels/fused/embedding_alltoall_backward.hpp"

#include <algorithm>
#include <string>

#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/fused/device_timeout.hpp"
#include "kernels/fused/embedding_alltoall_backward_kernel.hpp"
#include "kernels/fused/peer_receive.hpp"

namespace overlapsim::kernels::fused {

namespace bwd = embedding_a2a_backward;

std::size_t gradient_values_count(const EmbeddingAllToAllShape& shape, int rank) {
  std::size_t lookups = 0;
  for (int t : shape.owned(rank))
    lookups += static_cast<std::size_t>(shape.tables[static_cast<std::size_t>(t)].pooling);
  return lookups * static_cast<std::size_t>(shape.global_batch() * shape.dim);
}

EmbeddingAllToAllBackward::EmbeddingAllToAllBackward() = default;
EmbeddingAllToAllBackward::~EmbeddingAllToAllBackward() = default;

Status EmbeddingAllToAllBackward::can_implement(const EmbeddingAllToAllShape& shape, DType dtype) {
  const std::int64_t elem = static_cast<std::int64_t>(dtype_bytes(dtype));
  if (dtype != DType::BF16 && dtype != DType::FP16)
    return Status::failure("embedding all-to-all backward: bf16 or fp16 gradients");
  if (shape.dim < 1 || (shape.dim * elem) % 16 != 0)
    return Status::failure(
        "embedding all-to-all backward: rows of a multiple of 16 bytes, got dim " +
        std::to_string(shape.dim));
  if (shape.world < 1 || shape.world > bwd::kMaxWorld)
    return Status::failure("embedding all-to-all backward: 1.." + std::to_string(bwd::kMaxWorld) +
                           " ranks, got " + std::to_string(shape.world));
  if (shape.local_batch < 1)
    return Status::failure("embedding all-to-all backward: local batch >= 1");
  if (shape.tables.empty() || shape.tables.size() > static_cast<std::size_t>(bwd::kMaxTables) ||
      shape.owner.size() != shape.tables.size())
    return Status::failure("embedding all-to-all backward: 1.." + std::to_string(bwd::kMaxTables) +
                           " tables, one owner each");
  for (std::size_t t = 0; t < shape.tables.size(); ++t)
    if (shape.tables[t].pooling < 1 || shape.owner[t] < 0 || shape.owner[t] >= shape.world)
      return Status::failure("embedding all-to-all backward: table " + std::to_string(t) +
                             ": pooling >= 1 and an owner among the ranks");
  for (int r = 0; r < shape.world; ++r) {
    if (shape.owned(r).size() > static_cast<std::size_t>(bwd::kMaxSlots))
      return Status::failure("embedding all-to-all backward: rank " + std::to_string(r) +
                             " owns over " + std::to_string(bwd::kMaxSlots) + " tables");
    // The tile plan's 32-bit counts, for every rank's tables.
    bwd::KernelArgs a;
    const std::vector<int> owned = shape.owned(r);
    a.slots = static_cast<int>(owned.size());
    for (std::size_t s = 0; s < owned.size(); ++s)
      a.pooling[s] =
          static_cast<std::int32_t>(shape.tables[static_cast<std::size_t>(owned[s])].pooling);
    a.local_batch = shape.local_batch;
    a.row_pieces = shape.dim * elem / 16;
    a.world = shape.world;
    OVERLAPSIM_TRY(bwd::plan_tiles(&a));
  }
  return Status::success();
}

Status EmbeddingAllToAllBackward::initialize(CommHandle* comm, const EmbeddingAllToAllShape& shape,
                                             DType dtype,
                                             const EmbeddingAllToAllBackwardOptions& options) {
  const int world = comm == nullptr ? 1 : comm->world;
  if (options.push_warps < 0 || options.push_warps > bwd::kThreads / 32 - 1)
    return Status::failure("embedding all-to-all backward: push_warps " +
                           std::to_string(options.push_warps) + " (expected 0 or 1.." +
                           std::to_string(bwd::kThreads / 32 - 1) + ")");
  if (options.claim_tiles < 0 || options.claim_tiles > 64)
    return Status::failure("embedding all-to-all backward: claim_tiles " +
                           std::to_string(options.claim_tiles) + " (expected 0 or 1..64)");
  if (shape.world != world)
    return Status::failure("embedding all-to-all backward: shape for " +
                           std::to_string(shape.world) + " ranks on " + std::to_string(world));
  OVERLAPSIM_TRY(can_implement(shape, dtype));
  shape_ = shape;
  dtype_ = dtype;
  world_ = world;
  rank_ = comm == nullptr ? 0 : comm->rank;
  slots_ = shape.owned(rank_);
  comm_ = comm;
  timeout_s_ = options.timeout_s;
  epoch_ = counted_ = 0;
  claims_base_.assign(bwd::kClaimCounters, 0);
  // The push schedule (measured at 4 ranks, benchmarks/results/h100x4/
  // embedding_alltoall_backward/run4): from 1 MiB a table block (8192 per rank, dim 128,
  // bf16) the spread schedule with one push warp a CTA, 1.09-1.14 x -> 1.18-1.28 x our
  // sequential design (a source's rows to all owners at once instead of one owner's links at
  // a time: rank 0's 210 MB at 32768 per rank had gone out over one peer's links at a
  // time); under it the shift with two push warps (spread cost 8-19 % there: each owner's
  // rows complete only at the end of the source's pushes). Every rank decides the same way
  // from the shape, though the schedule need not agree across ranks (counters count CTAs).
  // At 2 ranks there is one owner to push to: the shift with two warps, as measured.
  const std::int64_t block_bytes =
      shape.local_batch * shape.dim * static_cast<std::int64_t>(dtype_bytes(dtype));
  push_spread_ = options.push == BackwardPush::kAuto
                     ? world > 2 && block_bytes >= (std::int64_t{1} << 20)
                     : options.push == BackwardPush::kSpread;
  push_warps_ = options.push_warps != 0 ? options.push_warps : (push_spread_ ? 1 : bwd::kPushWarps);
  claim_tiles_ = options.claim_tiles != 0 ? options.claim_tiles : bwd::kClaimTiles;
  OVERLAPSIM_TRY(bwd::preload());
  bwd::KernelArgs probe;
  OVERLAPSIM_TRY(fill_args(nullptr, nullptr, &probe));
  OVERLAPSIM_TRY(bwd::launch_grid(probe, &expand_grid_));
  // One grid for all: each call's counters expect the call's grid from every source.
  std::vector<double> grid = {static_cast<double>(expand_grid_)};
  if (comm != nullptr && world > 1) OVERLAPSIM_TRY(allreduce_host(*comm, nullptr, grid, ncclMax));
  grid_ = static_cast<int>(grid[0]);

  const std::size_t elem = dtype_bytes(dtype);
  const std::size_t block = std::max<std::size_t>(slots_.size(), 1) *
                            static_cast<std::size_t>(shape.global_batch() * shape.dim) * elem;
  OVERLAPSIM_TRY(gathered_.allocate(block));
  OVERLAPSIM_TRY(recv_.allocate(2 * block));
  OVERLAPSIM_TRY(counters_.allocate(static_cast<std::size_t>(world) * sizeof(std::uint32_t)));
  const std::size_t claim_bytes = bwd::kClaimCounters * bwd::kClaimStride * sizeof(std::uint32_t);
  OVERLAPSIM_TRY(claims_.allocate(claim_bytes));
  OVERLAPSIM_TRY(timed_out_.allocate(sizeof(int)));
  CUDA_CHECK(cudaMemset(counters_.data(), 0, static_cast<std::size_t>(world) * 4));
  CUDA_CHECK(cudaMemset(claims_.data(), 0, claim_bytes));
  CUDA_CHECK(cudaMemset(timed_out_.data(), 0, sizeof(int)));
  CUDA_CHECK(cudaDeviceSynchronize());  // counters at 0 before any peer can see them
  return share_peer_receive(comm, world, recv_.data(), counters_.data(), &receive_);
}

Status EmbeddingAllToAllBackward::fill_args(const void* grad, void* values, void* out) const {
  auto& a = *static_cast<bwd::KernelArgs*>(out);
  a.grad = grad;
  a.values = values;
  a.tables_total = static_cast<int>(shape_.tables.size());
  std::vector<int> next_slot(static_cast<std::size_t>(world_), 0);
  for (int t = 0; t < a.tables_total; ++t) {
    const int owner = shape_.owner[static_cast<std::size_t>(t)];
    a.table_owner[t] = owner;
    a.table_slot[t] = next_slot[static_cast<std::size_t>(owner)]++;
  }
  for (int r = 0; r < world_; ++r) a.owner_slots[r] = next_slot[static_cast<std::size_t>(r)];
  // push_order is the shift: step d pushes to rank + d, so at every step each rank
  // receives from one source, rather than all sources queueing on one owner's links (the
  // busiest-owner-first order, the same on every rank, ran 1-4 % slower at 4 ranks from
  // 2112 per rank up, measured in another call). Under spread each CTA starts at its own
  // place in it (push_spread_, chosen at initialize).
  for (int d = 1; d < world_; ++d) a.push_order[d - 1] = (rank_ + d) % world_;
  a.push_spread = push_spread_;
  a.claim_tiles = claim_tiles_;
  a.push_warps = push_warps_;
  a.slots = static_cast<int>(slots_.size());
  a.local_batch = shape_.local_batch;
  a.row_pieces = shape_.dim * static_cast<std::int64_t>(dtype_bytes(dtype_)) / 16;
  a.world = world_;
  a.rank = rank_;
  std::int64_t offset = 0;
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    const int t = slots_[s];
    a.table_id[s] = t;
    a.pooling[s] = static_cast<std::int32_t>(shape_.tables[static_cast<std::size_t>(t)].pooling);
    a.values_offset[s] = offset;
    offset += shape_.global_batch() * a.pooling[s] * a.row_pieces;
  }
  a.gathered = gathered_.data();
  return bwd::plan_tiles(&a);
}

Status EmbeddingAllToAllBackward::run(const void* grad, void* values, cudaStream_t stream) {
  if (grid_ == 0) return Status::failure("embedding all-to-all backward: run before initialize");
  bwd::KernelArgs a;
  OVERLAPSIM_TRY(fill_args(grad, values, &a));
  a.push = true;
  for (int r = 0; r < world_; ++r) {
    a.recv[r] = receive_.recv[r];
    a.counters[r] = static_cast<std::uint32_t*>(receive_.counters[r]);
  }
  ++epoch_;
  if (epoch_ == 0) ++epoch_;  // the parity's start, as the first call's
  a.epoch = epoch_;
  counted_ += static_cast<std::uint32_t>(grid_);
  a.expected = counted_;
  a.claims = claims_.as<std::uint32_t>();
  for (int p = 0; p < bwd::kClaimCounters; ++p) {
    const auto i = static_cast<std::size_t>(p);
    a.claims_base[p] = claims_base_[i];
    claims_base_[i] += static_cast<std::uint32_t>(bwd::part_claims(a, p)) +
                       static_cast<std::uint32_t>(grid_) * (bwd::kThreads / 32);
  }
  a.timeout_ns = static_cast<std::uint64_t>(timeout_s_ * 1e9);
  a.timed_out = timed_out_.as<int>();
  return bwd::launch(a, grid_, stream);
}

Status EmbeddingAllToAllBackward::exchange(const void* grad, cudaStream_t stream) {
  if (comm_ == nullptr || world_ == 1 || grid_ == 0) return Status::success();
  const std::size_t elem = dtype_bytes(dtype_);
  const std::size_t block = static_cast<std::size_t>(shape_.local_batch * shape_.dim);
  const std::size_t slot_elems = block * static_cast<std::size_t>(world_);
  const char* send = static_cast<const char*>(grad);
  char* recv = static_cast<char*>(gathered_.data());
  const ncclDataType_t type = nccl_type(dtype_);
  // Per peer pair NCCL matches sends and receives in order: the sender walks the peer's
  // tables in table order, the receiver its slots, which are in table order.
  NCCL_SETTLE(*comm_, ncclGroupStart());
  for (int peer = 0; peer < world_; ++peer) {
    if (peer == rank_) continue;
    for (std::size_t t = 0; t < shape_.tables.size(); ++t)
      if (shape_.owner[t] == peer)
        NCCL_SETTLE(*comm_,
                    ncclSend(send + t * block * elem, block, type, peer, comm_->comm, stream));
    for (std::size_t s = 0; s < slots_.size(); ++s)
      NCCL_SETTLE(*comm_,
                  ncclRecv(recv + (s * slot_elems + static_cast<std::size_t>(peer) * block) * elem,
                           block, type, peer, comm_->comm, stream));
  }
  NCCL_SETTLE(*comm_, ncclGroupEnd());
  return Status::success();
}

Status EmbeddingAllToAllBackward::expand(const void* grad, void* values, cudaStream_t stream) {
  if (grid_ == 0) return Status::failure("embedding all-to-all backward: expand before initialize");
  bwd::KernelArgs a;
  OVERLAPSIM_TRY(fill_args(grad, values, &a));
  a.push = false;
  return bwd::launch(a, expand_grid_, stream);
}

Status EmbeddingAllToAllBackward::run_sequential(const void* grad, void* values,
                                                 cudaStream_t stream) {
  OVERLAPSIM_TRY(exchange(grad, stream));
  return expand(grad, values, stream);
}

Status EmbeddingAllToAllBackward::check_timeout(cudaStream_t stream) const {
  return read_timeout_flag(timed_out_, stream, "embedding all-to-all backward", rank_,
                           "a source's rows", timeout_s_);
}

std::uint64_t EmbeddingAllToAllBackward::remote_send_bytes() const {
  std::uint64_t tables = 0;
  for (int owner : shape_.owner) tables += owner != rank_ ? 1 : 0;
  return tables * static_cast<std::uint64_t>(shape_.local_batch * shape_.dim) * dtype_bytes(dtype_);
}

}  // namespace overlapsim::kernels::fused
