#pragma once
// A NetworkApi without contention, the oracle for schedule structure: a group arrives
// alpha + max(bytes) / B after it starts, whatever else is in flight. Every rank has
// the same alpha and B to every other rank; ranks_per_host sets host_of. It records
// every group so tests can check what a collective issued.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/collectives/collective.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/network/network_api.hpp"

namespace overlapsim::sim::testing {

class AnalyticNetwork final : public NetworkApi {
 public:
  AnalyticNetwork(Simulator& sim, int ranks, double alpha_s, double bandwidth_Bps,
                  int ranks_per_host = 1, bool estimates = true)
      : sim_(sim),
        ranks_(ranks),
        alpha_s_(alpha_s),
        bandwidth_Bps_(bandwidth_Bps),
        ranks_per_host_(ranks_per_host),
        estimates_(estimates) {}

  Simulator& simulator() override { return sim_; }
  int num_ranks() const override { return ranks_; }
  int host_of(int rank) const override { return rank / ranks_per_host_; }

  void transfer_group(std::span<const Transfer> transfers, Done on_done,
                      std::uint64_t /*flow_id*/) override {
    std::uint64_t max_bytes = 0;
    for (const Transfer& t : transfers)
      if (t.src_rank != t.dst_rank) max_bytes = std::max(max_bytes, t.bytes);
    groups_.push_back(std::vector<Transfer>(transfers.begin(), transfers.end()));
    const double t_s = max_bytes == 0 ? 0.0 : alpha_s_ + max_bytes / bandwidth_Bps_;
    sim_.schedule(t_s, std::move(on_done));
  }

  std::optional<PathEstimate> path_estimate(int, int) const override {
    if (!estimates_) return std::nullopt;
    return PathEstimate{alpha_s_, bandwidth_Bps_};
  }

  const std::vector<std::vector<Transfer>>& groups() const { return groups_; }

 private:
  Simulator& sim_;
  int ranks_;
  double alpha_s_;
  double bandwidth_Bps_;
  int ranks_per_host_;
  bool estimates_;
  std::vector<std::vector<Transfer>> groups_;
};

// Runs one collective from t = 0 and returns its completion time.
inline double run_collective(NetworkApi& net, const CollectiveRequest& req,
                             const CollectiveTuning& tuning = {}) {
  double done_s = -1;
  int calls = 0;
  start_collective(
      net, req,
      [&] {
        done_s = net.simulator().now();
        ++calls;
      },
      tuning);
  net.simulator().run();
  if (calls != 1) return -1;
  return done_s;
}

inline std::vector<int> iota_ranks(int n, int first = 0) {
  std::vector<int> r(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) r[static_cast<std::size_t>(i)] = first + i;
  return r;
}

}  // namespace overlapsim::sim::testing
