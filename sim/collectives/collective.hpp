#pragma once
// NCCL-style collectives as schedules of transfer groups over a NetworkApi. A
// collective only turns an operation into transfers and reductions; the network
// backend decides how long they take.
//
// Byte conventions follow nccl-tests (`bytes` is what the user passes as "size"):
//   allreduce, broadcast, sendrecv: the buffer size on each rank
//   allgather: the gathered output per rank (each rank contributes bytes / n)
//   reducescatter: the input per rank (each rank keeps bytes / n)
//   alltoall: the send buffer per rank (bytes / n to each peer)
// busbw = algbw * factor: allreduce 2(n-1)/n, allgather and reducescatter (n-1)/n,
// alltoall (n-1)/n, broadcast and sendrecv 1.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/network/network_api.hpp"

namespace overlapsim::sim {

enum class CollectiveOp { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, SendRecv };
enum class Algorithm { Ring, Tree, Hierarchical, Direct, Auto };

const char* to_string(CollectiveOp op);
const char* to_string(Algorithm algo);
std::optional<CollectiveOp> parse_collective_op(std::string_view name);  // "allreduce", ...
std::optional<Algorithm> parse_algorithm(std::string_view name);         // "ring", ...
double busbw_factor(CollectiveOp op, int n);

// Software costs NCCL pays on top of the wire: a base latency per collective launch and
// a latency per algorithm step (cf. NCCL src/graph/tuning.cc baseLat / hwLat tables),
// and the pipelining chunk size. Defaults are cited in collective.cpp.
struct CollectiveTuning {
  double launch_latency_s = 0;    // once per collective
  double step_latency_s = 0;      // per pipeline step beyond link latency
  std::uint64_t chunk_bytes = 0;  // 0 = model the pipeline as a continuous stream
  // All-to-all across hosts through PXN (NCCL's default since 2.12): data for a remote peer
  // first crosses NVLink to the local GPU with the peer's local index (its rail), whose NIC
  // sends it; the two legs stream concurrently. False: every pair sends directly.
  bool pxn = false;
  // All-pairs patterns (all-to-all, direct allgather/reducescatter) of more pairs than this
  // on a host-symmetric layout are built per class of equivalent host pairs (direct.cpp):
  // a 16,384-rank all-to-all in ~0.4M transfers instead of 268M. The default keeps every
  // pattern up to 1,024 ranks per pair.
  std::uint64_t aggregate_min_pairs = std::uint64_t{1} << 20;
};

struct CollectiveRequest {
  CollectiveOp op = CollectiveOp::AllReduce;
  Algorithm algo = Algorithm::Auto;
  std::vector<int> ranks;  // the communicator: an ordered list of GPU ranks
  std::uint64_t bytes = 0;
  int root = 0;  // index into ranks (broadcast)
  int peer = 1;  // index into ranks (sendrecv: ranks[0] -> ranks[peer])
};

// Checks the request (non-empty communicator, distinct ranks within the network,
// valid root/peer); throws std::invalid_argument with a message naming the field.
void validate(const CollectiveRequest& req, const NetworkApi& net);

// Whether `algo` implements `op`: ring (allreduce, allgather, reducescatter, broadcast),
// tree (allreduce), hierarchical (all but sendrecv), direct (all), auto (all).
bool supports(CollectiveOp op, Algorithm algo);

// The algorithm `auto` resolves to for this request on this network (NCCL-like cost).
Algorithm resolve_algorithm(const CollectiveRequest& req, const NetworkApi& net,
                            const CollectiveTuning& tuning);

// An explicit algorithm is returned as is (std::invalid_argument when it does not
// implement the op); alltoall and sendrecv resolve to direct.

// Starts the collective at net.simulator().now(); `on_done` runs once when every rank
// has finished. The request is copied; the caller need not keep it alive.
void start_collective(NetworkApi& net, const CollectiveRequest& req, std::function<void()> on_done,
                      const CollectiveTuning& tuning = {});

}  // namespace overlapsim::sim
