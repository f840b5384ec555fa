#include "kernels/collectives/nccl_collectives.hpp"

namespace overlapsim::kernels {

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllReduce:
      return "allreduce";
    case CollectiveOp::ReduceScatter:
      return "reducescatter";
    case CollectiveOp::AllGather:
      return "allgather";
    case CollectiveOp::AllToAll:
      return "alltoall";
  }
  return "?";
}

std::optional<CollectiveOp> parse_collective_op(std::string_view name) {
  for (CollectiveOp op : {CollectiveOp::AllReduce, CollectiveOp::ReduceScatter,
                          CollectiveOp::AllGather, CollectiveOp::AllToAll})
    if (name == to_string(op)) return op;
  return std::nullopt;
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::BF16: return ncclBfloat16;
    case DType::FP16: return ncclFloat16;
    case DType::FP8_E4M3: return ncclFloat8e4m3;
  }
  return ncclBfloat16;
}

double busbw_factor(CollectiveOp op, int world) {
  const double n = world;
  return op == CollectiveOp::AllReduce ? 2.0 * (n - 1) / n : (n - 1) / n;
}

Status all_reduce(CommHandle& comm, const void* send, void* recv, std::size_t count, DType dtype,
                  cudaStream_t stream) {
  NCCL_SETTLE(comm, ncclAllReduce(send, recv, count, nccl_type(dtype), ncclSum, comm.comm, stream));
  return Status::success();
}

Status reduce_scatter(CommHandle& comm, const void* send, void* recv, std::size_t recv_count,
                      DType dtype, cudaStream_t stream) {
  NCCL_SETTLE(comm, ncclReduceScatter(send, recv, recv_count, nccl_type(dtype), ncclSum, comm.comm,
                                      stream));
  return Status::success();
}

Status all_gather(CommHandle& comm, const void* send, void* recv, std::size_t send_count,
                  DType dtype, cudaStream_t stream) {
  NCCL_SETTLE(comm, ncclAllGather(send, recv, send_count, nccl_type(dtype), comm.comm, stream));
  return Status::success();
}

Status all_to_all(CommHandle& comm, const void* send, std::size_t send_stride, void* recv,
                  std::size_t recv_stride, std::size_t count_per_peer, DType dtype,
                  cudaStream_t stream) {
  const std::size_t elem = dtype_bytes(dtype);
  const auto* send_bytes = static_cast<const char*>(send);
  auto* recv_bytes = static_cast<char*>(recv);
  NCCL_SETTLE(comm, ncclGroupStart());
  for (int peer = 0; peer < comm.world; ++peer) {
    const std::size_t block = static_cast<std::size_t>(peer);
    NCCL_SETTLE(comm, ncclSend(send_bytes + block * send_stride * elem, count_per_peer,
                               nccl_type(dtype), peer, comm.comm, stream));
    NCCL_SETTLE(comm, ncclRecv(recv_bytes + block * recv_stride * elem, count_per_peer,
                               nccl_type(dtype), peer, comm.comm, stream));
  }
  NCCL_SETTLE(comm, ncclGroupEnd());
  return Status::success();
}

}  // namespace overlapsim::kernels
