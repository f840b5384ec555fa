#pragma once
// What the pieces of overlap-bench's `tilewise` rows share for one pair shape: the case,
// the buffers, the GEMM times measured so far (tilewise_measure.hpp), the rank's state
// kept across shapes, and the row and option builders. The tuner (tilewise_tuner.hpp),
// the reports (tilewise_report.hpp) and the final round (tilewise_runner.cpp) each take
// it by reference.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/bench/bench_env.hpp"
#include "kernels/bench/tilewise_runner.hpp"
#include "kernels/bench/tilewise_settings.hpp"
#include "kernels/bench/timing.hpp"
#include "kernels/gemm/own_gemm.hpp"
#include "kernels/tilewise/copy_engine_design.hpp"
#include "kernels/tilewise/group_predictor.hpp"
#include "kernels/tilewise/tilewise_design.hpp"
#include "kernels/tilewise/tuning_cache.hpp"

namespace overlapsim::kernels::bench {

namespace tw = overlapsim::kernels::tilewise;

// One configuration the tuner times: the NCCL transport's (SMs, wait mode, partition) or,
// with ce_groups > 0, the copy-engine transport's (groups per part, phase-2 mode).
struct TilewiseCandidate {
  int comm_sms = 0;
  tw::WaitMode wait = tw::WaitMode::Kernel;
  std::vector<int> partition;
  double predicted_s = 0;
  double measured_s = 0;
  int ce_groups = 0;  // > 0: transport copy_engine with this many groups a part
  tw::CopyEnginePhase2 phase2 = tw::CopyEnginePhase2::CopyEngine;  // copy_engine all-reduce
  tw::CopyEngineRoute route = tw::CopyEngineRoute::Direct;         // copy_engine reductions
  int row_chunks = 1;            // copy_engine all-reduce: calls on row chunks back to back
  bool parallel_phase2 = false;  // copy_engine all-reduce: phase 2 on one stream a peer
  bool tail_whole_part = false;  // copy_engine all-reduce, tail kernel: the whole own part
  int slabs = 1;                 // copy_engine ring all-reduce: the slab order's slab count
  bool slab_skew = false;        // with slabs: the skewed slab order
  bool phase2_side_stream = false;  // copy_engine all-reduce: phase 2 on one stream of its own
  int split_k_tail = 1;  // copy_engine: the GEMM's last wave split in this many ranges of K
};

// Per all-reduce phase-2 mode: the detail CSV's and tuning cache's `wait` of a copy-engine
// candidate, and its pair rows' design. Each mode other than the copy engines' has its own
// design name, so validate predicts every row with the mode it measured and fit reads the
// copy engines' rows only.
struct Phase2Names {
  tw::CopyEnginePhase2 mode;
  const char* wait;
  const char* design;
};
inline constexpr Phase2Names kPhase2Names[] = {
    {tw::CopyEnginePhase2::CopyEngine, "copy_engine", "tilewise_ce"},
    {tw::CopyEnginePhase2::Epilogue, "epilogue_phase2", "tilewise_ce_ep"},
    {tw::CopyEnginePhase2::TailKernel, "tail_kernel", "tilewise_ce_tk"}};
const Phase2Names& phase2_names(tw::CopyEnginePhase2 mode);
// A copy-engine candidate's `wait` (detail CSV, tuning cache) and pair-row design: its
// phase-2 mode's, with "_ring" appended for the ring route (copy_engine_layout.hpp) and
// "_c<n>" for n row chunks (CopyEngineOptions::row_chunks) or "_s<n>" for the slab order's n
// slabs (CopyEngineOptions::slabs; "_s<n>d" skewed, CopyEngineOptions::slab_skew), then "_par"
// for phase 2 on one stream of its own ("_side", CopyEngineOptions::phase2_side_stream) or one
// stream a peer (CopyEngineOptions::parallel_phase2) or "_whole" for the tail kernel carrying
// the whole own part (CopyEngineOptions::tail_whole_part), then "_k<n>" for the GEMM's last wave
// split in n ranges of K (CopyEngineOptions::split_k_tail).
std::string copy_engine_wait(const TilewiseCandidate& cand);
std::string copy_engine_design(const TilewiseCandidate& cand);
// The candidate a cached `wait` names (phase 2 and route), nullopt for an unknown name.
std::optional<TilewiseCandidate> parse_copy_engine_wait(const std::string& wait);
// The row-chunk counts the tuner times for a copy-engine all-reduce (1: one call).
inline constexpr int kRowChunkChoices[] = {1, 2, 4};
// The slab counts a cached `wait` may name (parse_copy_engine_wait).
inline constexpr int kSlabChoices[] = {1, 2, 3, 4, 6, 8};
// The split last wave's part counts a cached `wait` may name (1 = off; "_k<n>").
inline constexpr int kSplitTailChoices[] = {1, 2, 3, 4, 5, 6, 7, 8};

// What one rank keeps across shapes and cases (BenchEnv::tilewise_state). Every rank
// updates its copy identically: each rank's decisions must match, or the ranks would
// issue different NCCL calls.
struct TilewiseRankState {
  std::optional<tw::TuningCache> cache;     // loaded once from TilewiseSettings::cache_path
  std::optional<tw::CommCurve> copy_curve;  // peer copy bytes -> seconds, measured once
  double stream_ops_s = 0;                  // what each group's stream operations add to a copy
  std::optional<tw::CommCurve> tail_curve;  // the tail kernel's exchange, measured on first use
  // Limited communicators per SM count, never destroyed: finalizing one between shapes
  // hung rank 0 while rank 1 went on to the next shape's collectives on the parent
  // (measured on 2 x H200, NCCL 2.28.9); process exit frees them.
  std::map<int, CommHandle> comms;
};

class TilewiseReports;

struct TilewiseShapeContext {
  TilewiseShapeContext(BenchEnv& env, const BenchCase& c, PairOp op, const PairShape& shape,
                       const TilewiseCaseIo& io, const TilewiseSettings& settings,
                       TilewiseRankState& state, TilewiseReports& reports);

  BenchEnv& env;
  const BenchCase& bench_case;
  PairOp op;
  CollectiveOp coll;
  PairShape shape;
  const TilewiseCaseIo& io;
  const TilewiseSettings& settings;
  TilewiseRankState& state;
  TilewiseReports& reports;
  DeviceTags tags;

  DeviceBuffer p, r, natural, natural_out;
  std::vector<std::unique_ptr<gemm::OwnGemm>> own_gemms;  // natural stores, per input set
  bool ce_ok = false;                // the copy-engine transport can run this shape
  double t_own_s = 0;                // own GEMM alone
  std::map<int, double> t_signal_s;  // NCCL transport's GEMM with signals, per comm SMs
  double t_signal_ce_s = 0;          // the copy-engine GEMM with signals of the chosen scope
  // The tuner's choice may be the sequential pair itself (never more than 1 % slower than
  // it): its time, timed like the candidates, and whether it was chosen.
  double t_sequential_search_s = 0;
  bool sequential_chosen = false;
  bool ce_system_scope = true;  // the copy-engine layout's signal scope (signal loop)

  cudaStream_t compute() const { return env.ctx->compute_stream; }
  cudaStream_t comm_stream() const { return env.ctx->comm_stream; }
  std::size_t output_elems() const { return static_cast<std::size_t>(shape.m * shape.n); }

  // A row of this shape and dtype: tag columns and times set, measurements to add.
  RowBuilder row(const std::string& op_name, const std::string& design, int chunks,
                 const Timing& t) const;
  void emit(const RowBuilder& row) const { env.emit(row.row()); }

  tw::TilewiseOptions options_for(const TilewiseCandidate& cand) const;
  tw::CopyEngineOptions copy_engine_options(int groups) const;
  tw::CopyEngineOptions copy_engine_options(const TilewiseCandidate& cand) const;
  tw::TuningKey cache_key(bool copy_engine) const;
  // Into the tuning cache, saved by rank 0 when a cache file was asked for.
  Status remember(const tw::TuningEntry& entry);

  // The communicator leaving `sms` SMs to NCCL (0: the run's own).
  Status comm_for(int sms, CommHandle** out);
  // One own GEMM per input set, natural stores into `natural`, with `sched`.
  Status natural_gemms(const gemm::SchedulerOptions& sched,
                       std::vector<std::unique_ptr<gemm::OwnGemm>>* out);

  template <class Design>
  Status prepare_sets(Design& d) {
    for (int s = 0; s < io.sets; ++s) {
      const PairBuffers b = io.set(s);
      OVERLAPSIM_TRY(d.prepare(b.a, b.b, p.data()));
    }
    return Status::success();
  }
};

}  // namespace overlapsim::kernels::bench
