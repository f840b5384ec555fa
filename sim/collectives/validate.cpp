// Request checks: every message names the field and what was wrong, because these
// reach users through the CLI and the executor.
#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/collectives/collective.hpp"

namespace overlapsim::sim {

void validate(const CollectiveRequest& req, const NetworkApi& net) {
  const int n = static_cast<int>(req.ranks.size());
  if (n == 0)
    throw std::invalid_argument(fmt::format(
        "{}: the communicator (ranks) is empty; give at least one rank", to_string(req.op)));
  const int num_ranks = net.num_ranks();
  // Small communicators (a send/recv, a TP group) are checked pairwise: a table over the
  // whole network per launch cost more than the launch.
  constexpr int kPairwiseMaxRanks = 16;
  std::vector<int> seen_at(n > kPairwiseMaxRanks ? static_cast<std::size_t>(num_ranks) : 0, -1);
  for (int i = 0; i < n; ++i) {
    const int r = req.ranks[static_cast<std::size_t>(i)];
    if (r < 0 || r >= num_ranks)
      throw std::invalid_argument(
          fmt::format("{}: ranks[{}] = {} is outside the network (ranks 0..{})", to_string(req.op),
                      i, r, num_ranks - 1));
    int first = -1;
    if (n <= kPairwiseMaxRanks) {
      for (int j = 0; j < i && first < 0; ++j)
        if (req.ranks[static_cast<std::size_t>(j)] == r) first = j;
    } else {
      first = std::exchange(seen_at[static_cast<std::size_t>(r)], i);
    }
    if (first >= 0)
      throw std::invalid_argument(
          fmt::format("{}: rank {} appears twice in the communicator (ranks[{}] and ranks[{}])",
                      to_string(req.op), r, first, i));
  }
  if (req.op == CollectiveOp::Broadcast && (req.root < 0 || req.root >= n))
    throw std::invalid_argument(fmt::format(
        "broadcast: root = {} is not an index into the communicator (0..{})", req.root, n - 1));
  if (req.op == CollectiveOp::SendRecv) {
    if (n < 2)
      throw std::invalid_argument("sendrecv: the communicator needs two ranks (sender, receiver)");
    if (req.peer < 1 || req.peer >= n)
      throw std::invalid_argument(fmt::format(
          "sendrecv: peer = {} is not an index into the communicator other than the sender "
          "(1..{})",
          req.peer, n - 1));
  }
}

}  // namespace overlapsim::sim
