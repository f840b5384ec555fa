#pragma once
// Design `tilewise` (FlashOverlap-style, papers.md §1): one persistent GEMM that
// stores each finished tile densely in its group's region of P (group_plan.hpp) and bumps
// the group's counter (after all of the tile's stores, a barrier and a device-scope fence:
// epilogue.cuh); on the high-priority communication stream, per group, a wait on that
// counter (signal_wait.hpp, which also resets it) and then one plain NCCL call on the
// region: ncclAllReduce, ncclReduceScatter, or grouped ncclSend/ncclRecv (All-to-All).
// The GEMM runs on (SMs − comm_sms) CTAs so NCCL's kernels find free SMs while it runs.
// This is transport `nccl`; transport `copy_engine` (no SM for communication, reduction in
// the GEMM's epilogue) is copy_engine_design.hpp.
//
// Host API: initialize (plans, tables, kernel preloading) → prepare(a, b, p) per input
// set (optional; run() does it on first use) → run (any number of times, back to back,
// no host synchronisation) → unpermute / result_view for the natural layout. Every call
// returns a Status; nothing throws. C++17.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/common/status.hpp"
#include "kernels/gemm/gemm_config.hpp"
#include "kernels/gemm/own_gemm.hpp"
#include "kernels/harness/comm.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/dtype.hpp"
#include "kernels/tilewise/group_plan.hpp"
#include "kernels/tilewise/signal_wait.hpp"
#include "kernels/tilewise/tilewise_problem.hpp"
#include "kernels/tilewise/unpermute.hpp"

namespace overlapsim::kernels::tilewise {

struct TilewiseOptions {
  std::vector<int> group_waves;  // waves per group; empty = one group per wave
  WaitMode wait = WaitMode::Kernel;
  int comm_sms = 0;              // SMs left to NCCL: the GEMM gets SMs − comm_sms CTAs
  int group_m = gemm::GemmConfig::kDefaultGroupM;
  double wait_timeout_s = 60.0;  // a kernel wait gives up (and flags it) after this
};

// A communicator split from `parent` whose NCCL kernels use at most `max_ctas` CTAs
// (ncclConfig_t::maxCTAs), and at least `min_ctas` where > 0 (minCTAs; NCCL's default
// otherwise), launched without clusters (cgaClusterSize 1), so they fit beside a GEMM that
// leaves that many SMs free. Collective: every rank calls it in the same order.
Status make_limited_comm(CommHandle& parent, int max_ctas, CommHandle* out, int min_ctas = 0);
Status destroy_comm(CommHandle* comm);

class TilewiseDesign {
 public:
  TilewiseDesign() = default;
  ~TilewiseDesign();
  TilewiseDesign(const TilewiseDesign&) = delete;
  TilewiseDesign& operator=(const TilewiseDesign&) = delete;

  static Status can_implement(CollectiveOp op, std::int64_t m, std::int64_t n, std::int64_t k,
                              int world, const TilewiseOptions& options);
  Status initialize(CommHandle* comm, CollectiveOp op, std::int64_t m, std::int64_t n,
                    std::int64_t k, DType dtype, const TilewiseOptions& options);
  // Builds the GEMM for this (a, b, p) triple (tensor maps) outside any timed region.
  Status prepare(const void* a, const void* b, void* p);
  // One overlapped call. a: M×K, b: N×K, p: M×N elements (the GEMM's permuted output),
  // r: plan().recv_elems elements (ignored for allreduce, whose result stays in p).
  // Starts and ends on compute_stream (the comm work is forked and joined by events).
  Status run(const void* a, const void* b, void* p, void* r, cudaStream_t compute_stream,
             cudaStream_t comm_stream);
  // The GEMM alone with remapped stores and signals (no communication); the counters are
  // reset by a memset on the same stream afterwards.
  Status run_gemm_only(const void* a, const void* b, void* p, cudaStream_t stream);
  // The result in the tile-wise layout (r, or p for allreduce), and back to natural.
  TileView result_view(const void* p, const void* r) const;
  Status unpermute(const void* p, const void* r, void* natural, cudaStream_t stream) const;
  // Host-synchronising check that no kernel wait timed out.
  Status check_waits();

  const RemapPlan& plan() const { return plan_; }
  const TileGrid& grid() const { return grid_; }
  const TilewiseOptions& options() const { return options_; }

 private:
  void destroy();
  Status enqueue_group_collective(int group, void* p, void* r, cudaStream_t stream);

  CommHandle* comm_ = nullptr;
  TilewiseProblem problem_;
  TilewiseOptions options_;
  TileGrid grid_;
  RemapPlan plan_;
  DeviceBuffer tile_offsets_;   // int64 [tiles]
  DeviceBuffer tile_groups_;    // int32 [tiles]
  DeviceBuffer counters_;       // uint32 [groups]
  DeviceBuffer out_offsets_;    // int64 [out tiles]
  DeviceBuffer timed_out_;      // int
  std::map<std::tuple<const void*, const void*, void*>, std::unique_ptr<gemm::OwnGemm>> gemms_;
  cudaEvent_t fork_ = nullptr;
  cudaEvent_t join_ = nullptr;
};

}  // namespace overlapsim::kernels::tilewise
