#pragma once
// The seam between collectives and the network (the ASTRA-sim idea, with typed
// callbacks). Collectives turn an operation into groups of transfers; a backend (the
// flow-level FlowNetwork, or an analytical one) decides when each group has arrived.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>

namespace overlapsim::sim {

class Simulator;

struct Transfer {
  int src_rank = 0;
  int dst_rank = 0;
  std::uint64_t bytes = 0;
  // How many identical transfers this one stands for (a collective's symmetric aggregate:
  // one representative pair per class of equivalent pairs); 0 moves nothing.
  std::uint32_t copies = 1;
};

// Zero-load properties of the path between two ranks: what the first byte pays
// (latency) and the narrowest link on the way (bottleneck capacity).
struct PathEstimate {
  double latency_s = 0;
  double bandwidth_Bps = 0;
};

class NetworkApi {
 public:
  using Done = std::function<void()>;
  virtual ~NetworkApi() = default;

  virtual Simulator& simulator() = 0;
  virtual int num_ranks() const = 0;
  virtual int host_of(int rank) const = 0;

  // Starts every transfer of the group at simulator().now(); `on_done` runs once, when
  // the last byte of the last transfer has arrived. Transfers with src == dst or zero
  // bytes complete at once. A group lets the backend aggregate identical flows and
  // batch completions, which is what keeps O(n^2) all-to-all tractable.
  virtual void transfer_group(std::span<const Transfer> transfers, Done on_done,
                              std::uint64_t flow_id = 0) = 0;

  // Transfers nobody waits for (folded ranks' background images), started at now(). A
  // backend may run same-shaped ones as one weighted aggregate whose members share one rate
  // (FlowNetwork does: exact when they are symmetric, as images of one send are).
  virtual void transfer_background(std::span<const Transfer> transfers) {
    transfer_group(transfers, nullptr);
  }
  // Zero-load estimate of the path src -> dst, or nullopt when the backend cannot tell.
  // Collectives stream a pipelined phase as one long flow per link and charge the
  // remaining pipeline step latencies with it (and use it to pick an algorithm), which
  // is what keeps a 1,024-rank ring to n flows instead of 2n(n-1). Without it they fall
  // back to simulating every ring step as its own group (exact, but slower).
  virtual std::optional<PathEstimate> path_estimate(int src_rank, int dst_rank) const {
    (void)src_rank;
    (void)dst_rank;
    return std::nullopt;
  }

  void transfer(const Transfer& t, Done on_done, std::uint64_t flow_id = 0) {
    transfer_group(std::span<const Transfer>(&t, 1), std::move(on_done), flow_id);
  }
};

}  // namespace overlapsim::sim
