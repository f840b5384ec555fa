// Names shared by the CLI, YAML and reports, and nccl-tests' bus-bandwidth factors.
#include <string>

#include "sim/collectives/collective.hpp"

namespace overlapsim::sim {

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllReduce:
      return "allreduce";
    case CollectiveOp::AllGather:
      return "allgather";
    case CollectiveOp::ReduceScatter:
      return "reducescatter";
    case CollectiveOp::AllToAll:
      return "alltoall";
    case CollectiveOp::Broadcast:
      return "broadcast";
    case CollectiveOp::SendRecv:
      return "sendrecv";
  }
  return "?";
}

const char* to_string(Algorithm algo) {
  switch (algo) {
    case Algorithm::Ring:
      return "ring";
    case Algorithm::Tree:
      return "tree";
    case Algorithm::Hierarchical:
      return "hierarchical";
    case Algorithm::Direct:
      return "direct";
    case Algorithm::Auto:
      return "auto";
  }
  return "?";
}

std::optional<CollectiveOp> parse_collective_op(std::string_view name) {
  for (CollectiveOp op :
       {CollectiveOp::AllReduce, CollectiveOp::AllGather, CollectiveOp::ReduceScatter,
        CollectiveOp::AllToAll, CollectiveOp::Broadcast, CollectiveOp::SendRecv})
    if (name == to_string(op)) return op;
  return std::nullopt;
}

std::optional<Algorithm> parse_algorithm(std::string_view name) {
  for (Algorithm algo : {Algorithm::Ring, Algorithm::Tree, Algorithm::Hierarchical,
                         Algorithm::Direct, Algorithm::Auto})
    if (name == to_string(algo)) return algo;
  return std::nullopt;
}

// nccl-tests doc/PERFORMANCE.md: busbw = algbw * factor, the factor being what the
// busiest link must carry relative to the buffer size for an optimal algorithm.
double busbw_factor(CollectiveOp op, int n) {
  if (n <= 1) return 1.0;
  const double nd = n;
  switch (op) {
    case CollectiveOp::AllReduce:
      return 2.0 * (nd - 1) / nd;
    case CollectiveOp::AllGather:
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllToAll:
      return (nd - 1) / nd;
    case CollectiveOp::Broadcast:
    case CollectiveOp::SendRecv:
      return 1.0;
  }
  return 1.0;
}

}  // namespace overlapsim::sim
