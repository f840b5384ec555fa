#pragma once
// The machinery the four overlapping designs share. Each turns one (compute op, dependent
// collective) pair — OpNode::pair_partner — into a PairSchedule; this base runs the
// schedule as events through ExecContext:
//   - the compute op runs group after group on its stream (compute_for), each group for
//     its time on the SMs the design leaves it, slowed while a part of the pair's
//     collective is in flight (interference);
//   - the collective runs as parts on the network (launch_comm_part), part j carrying the
//     bytes group j produced; parts go one after another (one NCCL stream) or all at once
//     (fused: every CTA pushes its own tile), each stretched by the design's CTA limit and
//     preceded by its signalling/launch delay;
//   - producer pairs (op -> collective): part j starts when group j is done; the op
//     finishes with its last group, the collective with its last part (the tail);
//   - consumer pairs (collective -> op): the op is released to its stream at once
//     (ExecContext::release_consumer) and group j runs once part j has arrived; the
//     collective finishes when its last part has landed, like a producer's.
// Pairs a design does not apply to run as under `sequential`; stats() says how many.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/collectives/collective_cost_model.hpp"
#include "sim/exec/overlap_design.hpp"
#include "sim/overlap/design_parameters.hpp"

namespace overlapsim::sim {

struct PairSchedule {
  std::vector<double> compute_s;   // per group: time alone on the SMs the design gives the op
  std::vector<double> comm_share;  // per group: share of the collective's bytes (sum 1)
  double compute_slowdown = 1;     // factor on a group's time when it starts with a part in flight
  // Factor on a part's transfer for the time a group of the op runs beside it (the GEMM's
  // memory traffic slows NCCL's copies on the SMs left to it).
  double comm_slowdown_beside_compute = 1;
  double comm_stretch = 1;         // factor on a part's network time (NCCL CTA limit)
  // Per part, where NCCL's slowdown depends on the part's size (else comm_stretch).
  std::vector<double> part_stretch;
  double part_delay_s = 0;            // before every part after the first (wait kernel, launch)
  double first_part_delay_s = 0;      // before the first part
  double last_part_delay_s = -1;      // before the last part (of several); < 0: part_delay_s
  std::vector<double> part_delays_s;  // per part, where set (instead of the three above)
  // Per part, where set: the part takes this long off the collective model and the network
  // (the copy engines of the tile-wise copy_engine transport).
  std::vector<double> part_time_s;
  bool serial_parts = true;  // parts one after another (false: all may run at once)
  // A part ready while a group of the op runs waits until that group ends: the op holds
  // every SM and stream priority never preempts resident blocks (papers.md §3).
  bool comm_waits_for_running_group = false;
};

// Counts over simulated programs (a folded program counts once).
struct PairStats {
  int overlapped = 0;
  std::map<std::string, int> sequential;  // reason -> pairs left sequential
};

// What a design needs to know about a pair to schedule it.
struct PairView {
  const OpNode* compute = nullptr;
  const OpNode* comm = nullptr;
  bool producer = true;    // compute -> collective (else collective -> compute)
  bool intra_host = true;  // the collective's communicator lies inside one host
  // Seconds per byte the collective's earlier parts on this communicator took on the
  // network, before any CTA-limit stretch (learned during the run, or the hint); < 0 when
  // unknown. Designs may use it to plan groups.
  double comm_s_per_byte = -1;
  int comm_ranks = 0;         // size of the collective's communicator (0: unknown)
  double comm_latency_s = 0;  // fixed time per call besides bytes x rate (hint only)
  // The collective model charges NCCL's fixed cost on each call (measured curves do).
  bool call_latency_in_collective = false;
  // The collective's time for a message of `bytes` with NCCL's default CTAs, where known
  // ahead (simulate_pair: the measured curve); empty otherwise.
  std::function<double(double bytes)> comm_time_at;
  // The model timing the collectives (bind()); null when unbound.
  const CollectiveCostModel* costs = nullptr;
};

// How a design plans the collective of a pair and how many of its parts run on the network.
struct PairPlanning {
  // Plan with the collective's time of a call (its fixed cost included) where the cost
  // model knows it ahead (a measured curve or measured times), as validate's pairs do, so a
  // step plans each pair as the validated predictor does; else, and with false, with the
  // rate the communicator's earlier parts took on the network (no fixed cost).
  bool plan_with_call_times = true;
  // Simulation speed: on communicators of at least this many ranks only a pair's first
  // part runs on the network; later parts take the time the first part took per byte. A
  // 1,024-rank all-to-all is ~10^6 flows, so every part simulated costs ~0.3 s each.
  // 0: every part on the network.
  int scaled_parts_min_ranks = 0;
};

class PairedDesign : public OverlapDesign {
 public:
  explicit PairedDesign(int device_sms) : sms_(device_sms) {}
  void start(ExecContext& ctx, int program, OpVertex v) final;

  const PairStats& stats() const { return stats_; }
  // Which pairs of the step this design would overlap and which it leaves sequential,
  // without running it (a design that applies to none gives sequential's step exactly).
  // With `stop_at_overlap` it returns at the first pair it would overlap (overlapped 1,
  // the counts so far): enough to tell whether it overlaps any.
  PairStats scan(const StepGraph& step, const ComputeModel& model,
                 bool stop_at_overlap = false) const;
  const std::vector<ParameterUse>& parameters() const { return parameters_; }
  // The schedule this design would give the pair of compute op `compute` of program
  // `program` (paired with a collective), planned as before the step runs; nullopt with
  // `why_not` where it leaves the pair sequential.
  std::optional<PairSchedule> preview(const StepGraph& step, const ComputeModel& model,
                                      int program, OpVertex compute, std::string& why_not) const;

  // Binds the design to a step's communicators and to the collective cost model that will
  // time them: which communicators lie inside one host, whether the model charges NCCL's
  // fixed cost on each call (the measured paths do; the cluster's links do not: then the
  // designs charge it on every call beyond the one sequential makes), and what the
  // designs plan a pair's collective with. Without it every communicator counts as
  // intra-host, no call latency is in the collectives, and plans use the learned rate.
  // Keeps a reference to `costs`: it must outlive the design's runs.
  void bind(const StepGraph& step, const CollectiveCostModel& costs, PairPlanning planning = {});

 protected:
  // The schedule of one pair, or nullopt with `why_not` set (then the pair runs as under
  // sequential and is counted under that reason).
  virtual std::optional<PairSchedule> schedule(const ComputeModel& model, const PairView& pair,
                                               std::string& why_not) const = 0;
  int sms() const { return sms_; }
  // NCCL's fixed cost for each call beyond sequential's one, or 0 where the collective
  // model charges every call itself.
  static double extra_call_s(const PairView& pair, double latency_s) {
    return pair.call_latency_in_collective ? 0 : latency_s;
  }
  std::vector<ParameterUse> parameters_;

 private:
  struct Pair;
  // A pair, shared by its two ops' entries in pairs_ and by the events under way for it.
  // Counted without atomics: a design runs on one thread, and std::shared_ptr's atomic
  // count on every event of a pair was several percent of a planned step.
  class PairRef {
   public:
    PairRef() = default;
    explicit PairRef(Pair* owned) noexcept;  // count 1
    PairRef(const PairRef& other) noexcept;
    PairRef(PairRef&& other) noexcept : p_(other.p_) { other.p_ = nullptr; }
    PairRef& operator=(PairRef other) noexcept {
      std::swap(p_, other.p_);
      return *this;
    }
    ~PairRef();
    Pair* operator->() const { return p_; }
    Pair& operator*() const { return *p_; }

   private:
    Pair* p_ = nullptr;
  };
  void begin_pair(ExecContext& ctx, int p, OpVertex compute, OpVertex comm, bool producer);
  // Finishes at once the OpNode::pair_layout ops between the pair's first op and its second.
  static void absorb_layout_ops(ExecContext& ctx, int p, OpVertex first, OpVertex second);
  void run_next_group(ExecContext& ctx, const PairRef& pair);
  void part_ready(ExecContext& ctx, const PairRef& pair, int part);
  void enqueue_part(ExecContext& ctx, const PairRef& pair, int part);
  void launch_part(ExecContext& ctx, const PairRef& pair, int part);
  void end_transfer(ExecContext& ctx, const PairRef& pair, int part, double compute0);
  void part_done(ExecContext& ctx, const PairRef& pair, int part);
  void start_segment(ExecContext& ctx, const PairRef& pair, int group, double duration_s,
                     int round);
  double comm_busy_s(const Pair& pair, double now) const;
  static double compute_busy_s(const Pair& pair, double now);
  static void run_sequential(ExecContext& ctx, int p, OpVertex v);
  PairView view_of(const OpNode& compute, const OpNode& comm, bool producer) const;
  void plan_with_call_times(PairView& view) const;

  int sms_;
  const CollectiveCostModel* costs_ = nullptr;  // set by bind()
  PairPlanning planning_;
  std::vector<char> intra_host_;
  std::unordered_map<int, double> learned_rate_;  // communicator -> s per byte
  std::vector<int> group_sizes_;
  PairStats stats_;
  std::unordered_map<std::uint64_t, PairRef> pairs_;  // (program, op) -> pair
  // Per program and op: whether pairs_ holds the op, so that start() asks the hash map
  // only for those (every op of a step passes through start()).
  std::vector<std::vector<char>> in_pairs_;
  void add_pair_op(const ExecContext& ctx, int program, OpVertex v, const PairRef& pair);
  void erase_pair_ops(const Pair& pair);
};

// Helpers the designs share.
// A piece of an op holding `share` of its work: a GEMM split along m (n for a GEMV),
// its weights still read whole; other ops scaled.
OpNode op_piece(const OpNode& op, double share);
// Output tiles of a GEMM (tile_m x tile_n, per batch).
double gemm_tiles(const OpNode& op, double tile_m, double tile_n);
// Splits `total` waves into groups of 1, 2, 4, ... waves (FlashOverlap's growing groups:
// a small head, larger groups later), merging the tail so there are at most max_groups.
std::vector<int> doubling_groups(int total, int max_groups);

}  // namespace overlapsim::sim
