#pragma once
// The collectives the designs overlap, through NCCL's host API on a CommHandle (so a
// failure aborts the communicator). Byte conventions follow nccl-tests and
// sim/collectives/collective.hpp: allreduce = buffer per rank; reducescatter = input per
// rank; allgather = gathered output per rank; alltoall = send buffer per rank. C++17.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "kernels/common/status.hpp"
#include "kernels/harness/comm.hpp"
#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels {

enum class CollectiveOp { AllReduce, ReduceScatter, AllGather, AllToAll };

const char* to_string(CollectiveOp op);  // "allreduce", "reducescatter", ...
std::optional<CollectiveOp> parse_collective_op(std::string_view name);
ncclDataType_t nccl_type(DType dtype);
// busbw = algbw * factor (nccl-tests): allreduce 2(n-1)/n, the others (n-1)/n.
double busbw_factor(CollectiveOp op, int world);

// Sum over ranks of `count` elements.
Status all_reduce(CommHandle& comm, const void* send, void* recv, std::size_t count, DType dtype,
                  cudaStream_t stream);
// Rank r receives the sum over ranks of send block r (recv_count elements each).
Status reduce_scatter(CommHandle& comm, const void* send, void* recv, std::size_t recv_count,
                      DType dtype, cudaStream_t stream);
// recv block s = rank s's send (send_count elements each).
Status all_gather(CommHandle& comm, const void* send, void* recv, std::size_t send_count,
                  DType dtype, cudaStream_t stream);
// Grouped ncclSend/ncclRecv: the block for peer p starts at send + p * send_stride and
// lands at recv + r * recv_stride on p (r = this rank); blocks are count_per_peer long.
// Strides are in elements; contiguous alltoall has stride == count_per_peer.
Status all_to_all(CommHandle& comm, const void* send, std::size_t send_stride, void* recv,
                  std::size_t recv_stride, std::size_t count_per_peer, DType dtype,
                  cudaStream_t stream);

}  // namespace overlapsim::kernels
