#pragma once
// One GPU rehearses rank 0 of a 2-rank copy-engine all-reduce (copy_engine_layout.hpp) with no
// communication: the peer's partial of our part lies in the receive buffer's slot 1 and
// its arrival flags are already at the call's epoch, so the owner epilogue reduces
// without waiting. What the one-GPU test of the epilogue (tilewise_test) and
// owner-epilogue-bench share. Host only, C++17.
#include <cstdint>

#include "kernels/common/status.hpp"
#include "kernels/gemm/own_gemm.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/tilewise/copy_engine_layout.hpp"

namespace overlapsim::kernels::tilewise {

class CopyEngineRehearsal {
 public:
  // The epoch OwnGemm::run must be given (the preset flags hold it).
  static constexpr std::uint32_t kEpoch = 1;

  // Plans m x n for this GPU's SMs (default group_m) and uploads the tables, zeroed
  // counters and the preset flags; the peer's partial is left for the caller to fill.
  Status initialize(std::int64_t m, std::int64_t n, int groups_per_part);

  const CopyEngineLayout& plan() const { return plan_; }
  // part_elems elements of the peer's partial of our part (receive buffer slot 1).
  void* peer_partial() const;
  // The reducing owner epilogue writing P = p (m x n elements), system-scope signal,
  // no peer_out, prefetch per EpilogueArgs' default; callers change what they test.
  gemm::EpilogueArgs epilogue(void* p) const;
  // The rank-rotated order of rank 0 of 2 on the plan's CTAs.
  gemm::SchedulerOptions scheduler() const;
  const std::uint32_t* counters() const { return counters_.as<std::uint32_t>(); }
  const int* timed_out() const { return timed_out_.as<int>(); }

 private:
  CopyEngineLayout plan_;
  DeviceBuffer offsets_, tile_group_, tile_arrival_, counters_, arrived_, recv_, timed_out_;
};

}  // namespace overlapsim::kernels::tilewise
