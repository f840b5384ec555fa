#pragma once
// The four overlapping designs of design.md as PairedDesign schedules. Each reads its
// parameters from the profile's `designs:` section (docs/designs.md lists them with
// their meaning and sources) and says which pairs it applies to; the rest run as under
// `sequential`.
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "sim/overlap/fused_model.hpp"
#include "sim/overlap/paired_design.hpp"
#include "sim/tilewise_plan/allgather.hpp"
#include "sim/tilewise_plan/copy_engine.hpp"
#include "sim/tilewise_plan/ring.hpp"
#include "sim/tilewise_plan/wave_groups.hpp"

namespace overlapsim::sim {

// NCCL's slowdown when limited to the CTAs a design leaves it, per collective (profile
// keys comm_slowdown_allreduce|reducescatter|alltoall); other collectives take the
// reduce-scatter factor, the closest in per-byte work.
struct CommSlowdown {
  double allreduce = 1, reducescatter = 1, alltoall = 1;
  static CommSlowdown read(DesignParameters& p);
  double for_op(CollectiveOp op) const;
};

// Op split into k chunks along M, chunk i's collective on a second stream after chunk i.
// Charges: per-chunk efficiency (each chunk timed by the compute model, with its launch),
// NCCL's SMs taken from the op while a chunk's collective runs, interference, the wait of
// a collective for SMs until the running GEMM chunk ends (priority never preempts), an
// NCCL call per chunk, pipeline fill (first chunk) and drain (last collectives).
class DecomposedDesign final : public PairedDesign {
 public:
  explicit DecomposedDesign(const Profile& profile);
  const char* name() const override { return "decomposed"; }
  void set_chunks(int chunks) { chunks_ = chunks; }

 protected:
  std::optional<PairSchedule> schedule(const ComputeModel& model, const PairView& pair,
                                       std::string& why_not) const override;

 private:
  int chunks_;
  double comm_ctas_, interference_, call_latency_s_;
};

// One persistent GEMM on SMs - s that signals per tile; per group of waves, a wait and
// one NCCL call on a communicator limited to s CTAs. Charges: the own GEMM against the
// vendor's, signalling, wave quantisation on SMs - s, interference while NCCL runs,
// NCCL's lower bandwidth on s CTAs (intra-host), a wait + NCCL call per group, the last
// group's tail. GEMM + AllReduce / ReduceScatter / All-to-All, producer side.
//
// Transport `copy_engine` (a constructor option): no NCCL; the GEMM keeps every SM and computes
// the other ranks' parts first (rank-rotated tile order); the copy engines carry each
// finished group to its owner; the owner's epilogue adds the peers' tiles to its own part
// (plan_copy_engine below). With allgather_push_bandwidth_Bps and allgather_push_latency_s
// in the profile it also takes the consumer side, AllGather + GEMM (sequence parallelism's
// column-parallel inputs): each rank's copy engines push its row block to the peers in
// rotated order, chunk by chunk, while its GEMM visits the blocks in arrival order, own
// block first (sim/tilewise_plan/allgather.hpp, allgather_schedule below).
class TilewiseDesign final : public PairedDesign {
 public:
  enum class Transport { Nccl, CopyEngine };
  // The copy-engine all-reduce's phase 2 (the kernel's CopyEngineOptions::phase2): Auto takes
  // the faster of the copy engines and, where the profile has its rates, the tail kernel.
  enum class AllReducePhase2 { Auto, CopyEngine, TailKernel };

  // The copy-engine transport reads copy_engine_bandwidth_Bps, copy_engine_latency_s and
  // epilogue_reduce_overhead_fraction from `profile` (missing: std::invalid_argument), and
  // epilogue_reduce_bandwidth_Bps and copy_engine_phase2_contention where it has them.
  // With it, tail_kernel_bandwidth_Bps and tail_kernel_latency_s where the profile has them
  // (both or neither).
  TilewiseDesign(const Profile& profile, Transport transport = Transport::Nccl);
  const char* name() const override { return "tilewise"; }
  Transport transport() const { return transport_; }
  // TailKernel without the profile's tail-kernel rates: std::invalid_argument naming them.
  void set_allreduce_phase2(AllReducePhase2 mode);
  // The copy-engine route on more than 2 ranks (the kernel's CopyEngineRoute): Auto takes
  // the faster of the direct route and the ring, as the kernel's tuner does; Direct replays
  // a measured direct-route row, Ring a measured ring row (set_ring_replay).
  enum class Route { Auto, Direct, Ring };
  void set_route(Route route) { route_ = route; }
  // A measured ring configuration (the kernel's `*_ring*` rows; its phase 2 by
  // set_allreduce_phase2): groups per part, row chunks or the slab order, phase 2 on a
  // clock of its own (a stream a peer, or one side stream), the tail kernel over the whole
  // own part.
  struct RingReplay {
    int groups_per_part = 2;
    int row_chunks = 1;
    int slabs = 1;
    bool slab_skew = false;
    bool phase2_own_streams = false;
    bool tail_whole_part = false;
  };
  void set_ring_replay(const RingReplay& ring) {
    route_ = Route::Ring;
    ring_replay_ = ring;
  }
  // Replays a measured configuration: waves per group, and the SMs left to NCCL.
  void set_partition(std::vector<int> waves_per_group) { partition_ = std::move(waves_per_group); }
  void set_max_groups(int groups) { max_groups_ = groups; }
  // The SMs left to NCCL and NCCL's slowdown on that many CTAs (0: the profile's).
  // A measured carve-out: used as is (without it, the design tries comm_sms, /2 and /4
  // like a tuner would and keeps the fastest).
  void set_comm_sms(int sms, double comm_stretch = 0) {
    comm_sms_ = sms;
    stretch_override_ = comm_stretch;
    search_carve_out_ = false;
  }

 protected:
  std::optional<PairSchedule> schedule(const ComputeModel& model, const PairView& pair,
                                       std::string& why_not) const override;

 private:
  void set_transport(Transport transport, const Profile& profile);
  std::optional<PairSchedule> copy_engine_schedule(const ComputeModel& model, const PairView& pair,
                                                   std::string& why_not) const;
  std::optional<PairSchedule> allgather_schedule(const ComputeModel& model, const PairView& pair,
                                                 std::string& why_not) const;
  Transport transport_ = Transport::Nccl;
  double copy_Bps_ = 0, copy_latency_s_ = 0, epilogue_ = 0, epilogue_Bps_ = 0;
  double phase2_contention_ = 0;
  double tail_Bps_ = 0, tail_latency_s_ = 0;
  double push_Bps_ = 0, push_latency_s_ = 0;  // 0: AllGather + GEMM left sequential
  AllReducePhase2 phase2_ = AllReducePhase2::Auto;
  Route route_ = Route::Auto;
  std::optional<RingReplay> ring_replay_;
  int comm_sms_, max_groups_;
  double tile_m_, tile_n_, gemm_vs_vendor_ = 0, signal_, interference_, wait_s_, call_latency_s_;
  // Copy engines: the measured stream operations per copy (copy_engine_stream_ops_s), which
  // include the group's wait; 0 where the profile lacks it (then wait_s_ per group).
  double copy_ops_s_ = 0;
  // The own GEMM's time: its measured tables (compute.own_gemm_tables) when the profile
  // has them, else the vendor model's time x own_gemm_time_ratio.
  double own_gemm_s(const ComputeModel& vendor, const OpNode& op) const;
  std::shared_ptr<const ComputeProfile> own_profile_;
  std::shared_ptr<const ComputeModel> own_model_;
  CommSlowdown slowdown_;
  struct Plan {
    int comm_sms = 0, waves = 0;
    double stretch = 1;
    std::vector<int> groups;
  };
  double stretch_for(const CollectiveCostModel* costs, int comm_sms, CollectiveOp coll,
                     std::uint64_t bytes, int ranks) const;
  double stretch_override_ = 0;
  std::vector<int> partition_;
  bool search_carve_out_ = true;
  // (tiles, wave_s, bytes, comm rate, intra-host, ranks, collective, call latency included)
  mutable std::map<std::tuple<double, double, double, float, int, int, int, int>, Plan> plans_;
};

// The tile-wise partition of a GEMM's waves into groups that FlashOverlap's predictor
// finds best (at most max_groups): the comm of a group takes wait_s + its bytes times
// comm_s_per_byte; with the rate unknown (< 0), a one-wave head then near-equal groups.
struct WaveGroupProblem {
  int waves = 0;  // on the SMs left to the GEMM
  int sms = 0;    // those SMs (tiles per full wave)
  double tiles = 0;
  double wave_s = 0;
  double compute_slowdown = 1;  // on groups after the first (NCCL running beside them)
  double wait_s = 0;
  double bytes = 0;
  double comm_s_per_byte = -1;  // on the network with NCCL's default CTAs
  double comm_stretch = 1;      // NCCL on the CTAs left to it
  double comm_latency_s = 0;    // per call, besides bytes x rate
  int max_groups = 1;
  // Where set, NCCL's slowdown on those CTAs for a group of `bytes` (instead of comm_stretch).
  std::function<double(double bytes)> stretch_at;
  // Where set, a group's collective takes stretch x comm_time_at(bytes) (the measured curve),
  // instead of comm_latency_s + bytes x comm_s_per_byte.
  std::function<double(double bytes)> comm_time_at;
};
// The plan itself comes from the one tile-wise planner the kernels' tuner also uses
// (sim/tilewise_plan/wave_groups.hpp); this states the problem in the profile's terms.
using WaveGroupPlan = tilewise_plan::WaveGroupPlan;
WaveGroupPlan plan_wave_groups(const WaveGroupProblem& problem);

// The copy-engine transport's timeline for one pair on `world` ranks (symmetric ranks), in
// closed form by the planner the kernel's tuner also uses (sim/tilewise_plan/). The output
// is cut into world parts of groups_per_part groups; the GEMM (gemm_s on all SMs, waves of
// tiles / sms) finishes group k at the end of its wave, A_k, peers' parts first.
//   peer group k:  E_k = max(A_k, E_{k-1}) + wait_s + X(b), X(b) = copy_latency_s + b /
//                  copy_Bps, one copy stream; b = bytes / (world x groups_per_part)
//   own group j:   its peers' group j arrives at D_j = E of the last peer position's group j
//                  (symmetry); with a reduction (allreduce, reducescatter) the epilogue adds
//                  them: 2 ranks F_j = max(F_{j-1} + (A_j - A_{j-1}) (1 + epilogue_fraction),
//                  D_j); more ranks F_j = max(F_{j-1} + (A_j - A_{j-1}) + (R_j - R_{j-1}),
//                  D_j + r), r = (world + 2) (bytes / tiles) sms / epilogue_reduce_Bps per
//                  own tile, R_j = ceil(own tiles through group j / sms) r (the kernel spins
//                  until they arrive); all-to-all: F_j = F_{j-1} + (A_j - A_{j-1})
//   allreduce:     own group j then goes to the world - 1 peers: E = max(F_j, E) + wait_s +
//                  (world - 1) X(b) (1 + phase2_contention (world - 2)); with the tail
//                  kernel (tail_Bps > 0) the last own group instead leaves by a kernel
//                  behind the GEMM, after any copy still on the link: E = max(F_last, E) +
//                  (world - 1) Y(b), Y(b) = tail_latency_s + b / tail_Bps (no stream wait)
//   end:           max(F_last, E_last).
struct CopyEngineProblem {
  CollectiveOp op = CollectiveOp::AllReduce;
  int world = 2;
  int groups_per_part = 1;
  double tiles = 0;
  int sms = 0;
  double gemm_s = 0;  // own GEMM with signals on every SM
  double bytes = 0;   // the collective's bytes (nccl-tests convention)
  double copy_Bps = 0;
  double copy_latency_s = 0;  // per copy, besides bytes / copy_Bps
  double wait_s = 0;          // per group on the copy stream, before its copies
  double copy_ops_s = 0;      // per copy: its stream operations (flag, counter wait and reset)
  // 2 ranks: the owner epilogue's reduction, spread over the next tile's first k-blocks,
  // costs this fraction of the own part's time.
  double epilogue_fraction = 0;
  // > 2 ranks: the kernel's general epilogue path stores the own tile, then adds each
  // peer's partial in place, not overlapped with the mainloop: n + 2 passes over the tile
  // (its store, the own re-read and write, the n - 1 partials) at this rate over all SMs.
  // 0: not known (an older profile): the 2-rank fraction per peer's partial instead.
  double epilogue_reduce_Bps = 0;
  // AllReduce's phase 2 (every rank copying its reduced groups to its n - 1 peers back to
  // back, all at once) measured slower than a lone peer copy as ranks grow: each such copy
  // takes 1 + phase2_contention (n - 2) times X(b). Empirical (docs/designs.md); 0: none.
  double phase2_contention = 0;
  // AllReduce: the last own group by the kernel's tail kernel (CopyEnginePhase2::TailKernel) at
  // this two-way exchange rate and fixed time; 0: by the copy engines like the others.
  double tail_Bps = 0;
  double tail_latency_s = 0;
};
// Per group (peer groups in item order, then own groups), as a PairSchedule takes them;
// computed by the one tile-wise planner (sim/tilewise_plan/copy_engine.hpp) from uniform
// groups, linear copy times and the stream's wait once per group.
using CopyEnginePlan = tilewise_plan::CopyEnginePlan;
CopyEnginePlan plan_copy_engine(const CopyEngineProblem& problem);

// One kernel: each CTA computes its rows or tiles and stores them into its NVLink peers'
// buffers itself (sim/overlap/fused_model.hpp). Charges: what the stores cost the op, and
// the receivers' finish after its last store; no NCCL call. GEMV+AllReduce,
// embedding+All-to-All, GEMM+All-to-All (producer side) and the embedding backward's
// All-to-All into the gradient expansion (consumer side, where the profile has its keys),
// communicators inside one host.
class FusedDesign final : public PairedDesign {
 public:
  explicit FusedDesign(const Profile& profile);
  const char* name() const override { return "fused"; }

 protected:
  std::optional<PairSchedule> schedule(const ComputeModel& model, const PairView& pair,
                                       std::string& why_not) const override;

 private:
  FusedCosts costs_;
};

// Op and collective on two streams, the op's residency limited to SMs - s (occupancy
// shaping), the collective at high priority on its s SMs: no wait for SMs, but the op
// runs on fewer SMs throughout (slowed in proportion) and NCCL on s CTAs; chunked like
// decomposed so the dependent collective has something to run beside.
class ShapedDesign final : public PairedDesign {
 public:
  explicit ShapedDesign(const Profile& profile);
  const char* name() const override { return "shaped"; }

 protected:
  std::optional<PairSchedule> schedule(const ComputeModel& model, const PairView& pair,
                                       std::string& why_not) const override;

 private:
  int chunks_, comm_sms_;
  double interference_, comm_interference_, call_latency_s_;
  CommSlowdown slowdown_;
};

}  // namespace overlapsim::sim
