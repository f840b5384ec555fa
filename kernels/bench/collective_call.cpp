#include "kernels/bench/collective_call.hpp"

namespace overlapsim::kernels::bench {

CollectiveCounts collective_counts(CollectiveOp op, std::uint64_t bytes, DType dtype, int world) {
  const std::size_t elem = dtype_bytes(dtype);
  std::size_t total = static_cast<std::size_t>(bytes / elem);
  total -= total % static_cast<std::size_t>(world);
  CollectiveCounts c;
  switch (op) {
    case CollectiveOp::AllReduce:
      c.send = c.recv = total;
      break;
    case CollectiveOp::ReduceScatter:
      c.send = total;
      c.recv = total / world;
      break;
    case CollectiveOp::AllGather:
      c.recv = total;
      c.send = total / world;
      break;
    case CollectiveOp::AllToAll:
      c.send = c.recv = total;
      break;
  }
  c.bytes = total * elem;
  return c;
}

Status enqueue_collective(CommHandle& comm, CollectiveOp op, const void* send, void* recv,
                          const CollectiveCounts& counts, DType dtype, cudaStream_t stream) {
  switch (op) {
    case CollectiveOp::AllReduce:
      return all_reduce(comm, send, recv, counts.send, dtype, stream);
    case CollectiveOp::ReduceScatter:
      return reduce_scatter(comm, send, recv, counts.recv, dtype, stream);
    case CollectiveOp::AllGather:
      return all_gather(comm, send, recv, counts.send, dtype, stream);
    case CollectiveOp::AllToAll: {
      const std::size_t per_peer = counts.send / static_cast<std::size_t>(comm.world);
      return all_to_all(comm, send, per_peer, recv, per_peer, per_peer, dtype, stream);
    }
  }
  return Status::failure("unknown collective");
}

}  // namespace overlapsim::kernels::bench
