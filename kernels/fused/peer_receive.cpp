#include "kernels/fused/peer_receive.hpp"

#include <utility>
#include <vector>

namespace overlapsim::kernels::fused {

Status share_peer_receive(CommHandle* comm, int world, void* recv, void* counters,
                          PeerReceive* out) {
  if (world > PeerReceive::kMaxRanks)
    return Status::failure("fused exchange: more ranks than the kernels' peer tables hold");
  if (comm == nullptr || world == 1) {
    out->recv[0] = recv;
    out->counters[0] = counters;
    return Status::success();
  }
  tilewise::PeerLinks links;
  OVERLAPSIM_TRY(tilewise::comm_peer_links(*comm, &links));
  out->peers = std::make_unique<tilewise::PeerMemory>(std::move(links));
  std::vector<std::vector<void*>> all;
  OVERLAPSIM_TRY(out->peers->share({recv, counters}, &all));
  for (int r = 0; r < world; ++r) {
    out->recv[r] = all[static_cast<std::size_t>(r)][0];
    out->counters[r] = all[static_cast<std::size_t>(r)][1];
  }
  return Status::success();
}

}  // namespace overlapsim::kernels::fused
