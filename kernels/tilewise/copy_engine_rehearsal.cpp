#include "kernels/tilewise/copy_engine_rehearsal.hpp"

#include <cuda_runtime.h>

#include <vector>

#include "kernels/tilewise/design_support.hpp"

namespace overlapsim::kernels::tilewise {

constexpr int kWorld = 2;
constexpr int kRank = 0;
constexpr int kPeer = 1;

Status CopyEngineRehearsal::initialize(std::int64_t m, std::int64_t n, int groups_per_part) {
  int sms = 0;
  OVERLAPSIM_TRY(current_device_sms(&sms));
  if (auto e =
          build_copy_engine_layout(CollectiveOp::AllReduce, m, n, sms, gemm::GemmConfig::kDefaultGroupM,
                           groups_per_part, kWorld, kRank, &plan_))
    return Status::failure("owner rehearsal: " + *e);
  OVERLAPSIM_TRY(upload(offsets_, plan_.tile_offset_elems));
  OVERLAPSIM_TRY(upload(tile_group_, plan_.tile_group));
  OVERLAPSIM_TRY(upload(tile_arrival_, plan_.tile_arrival));
  // arrived[s][j]: the peer's groups of our part, all at the epoch.
  std::vector<std::uint32_t> flags(static_cast<std::size_t>(plan_.counters()), 0);
  for (int j = 0; j < groups_per_part; ++j)
    flags[static_cast<std::size_t>(kPeer * groups_per_part + j)] = kEpoch;
  OVERLAPSIM_TRY(upload(arrived_, flags));
  OVERLAPSIM_TRY(zeroed(counters_, flags.size() * sizeof(std::uint32_t)));
  OVERLAPSIM_TRY(zeroed(timed_out_, sizeof(int)));
  return recv_.allocate(kWorld * static_cast<std::size_t>(plan_.part_elems) * kElementBytes);
}

void* CopyEngineRehearsal::peer_partial() const {
  return recv_.as<char>() + kPeer * static_cast<std::size_t>(plan_.part_elems) * kElementBytes;
}

gemm::EpilogueArgs CopyEngineRehearsal::epilogue(void* p) const {
  gemm::EpilogueArgs e =
      owner_epilogue_args(plan_, offsets_, counters_, tile_group_, tile_arrival_, arrived_);
  e.recv = recv_.data();
  e.own_out = p;
  e.own_out_begin_elems = plan_.own_begin_elems;
  e.world = kWorld;
  e.rank = kRank;
  e.reduce = true;
  e.wait_timeout_s = 10;
  e.timed_out = timed_out_.as<int>();
  return e;
}

gemm::SchedulerOptions CopyEngineRehearsal::scheduler() const {
  return owner_scheduler(plan_, kWorld, kRank);
}

}  // namespace overlapsim::kernels::tilewise
