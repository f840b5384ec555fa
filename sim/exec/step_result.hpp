#pragma once
// What one simulated training step produced, per simulated rank and for the step.
#include <cstdint>
#include <string>
#include <vector>

namespace overlapsim::sim {

// Compute time by kind of kernel, each with its own cost model and its own validation
// (sim/scenario/step_band.hpp sizes the step's band by these shares).
struct ComputeByKind {
  double gemm_s = 0;          // GEMMs and GEMVs (the profile's GEMM tables or curves)
  double attention_s = 0;     // fused attention (the attention table or curves)
  double memory_bound_s = 0;  // elementwise kernels and embedding lookups (memory curves)
};

// The compute stream's time splits exactly into compute_s + exposed_comm_s + bubble_s +
// host_wait_s.
struct RankResult {
  int rank = 0;                  // global rank of the simulated program
  int multiplicity = 1;          // ranks it stands for
  double step_time_s = 0;        // when its last op finished (every rank starts at 0)
  double compute_s = 0;          // busy time of the compute stream
  double exposed_comm_s = 0;     // compute idle while communication it waits on was moving
                                 // data (or queued behind other communication)
  double bubble_s = 0;           // compute idle while waiting for another rank to reach a
                                 // collective or send (pipeline bubbles, stragglers)
  double comm_s = 0;             // time any communication of this rank was moving data
  double overlapped_comm_s = 0;  // part of comm_s hidden under compute
  // Parts of exposed_comm_s by what the compute stream waited on: collectives or sends whose
  // ranks span hosts, and collectives paired with a compute op (the overlap designs act on
  // those). The rest waited on intra-host communication or on compute of another stream.
  double exposed_inter_host_s = 0;
  double exposed_paired_s = 0;
  double paired_compute_s = 0;  // part of compute_s spent in ops paired with a collective
  // The compute ops' time by kind (sums of op durations, so within rounding of compute_s),
  // and the part of it in paired ops.
  ComputeByKind compute_by_kind;
  ComputeByKind paired_by_kind;
  // Compute idle while its next op's inputs were ready but the host had not issued it yet
  // (OpNode::host_s, host_sync); 0 where the graph carries no host times.
  double host_wait_s = 0;
};

struct StepResult {
  std::string design;
  double step_time_s = 0;  // the slowest rank's step time
  int critical_rank = 0;   // that rank (global); the breakdown below is its own
  double compute_s = 0;
  double exposed_comm_s = 0;
  double bubble_s = 0;
  double comm_s = 0;
  double overlapped_comm_s = 0;
  double exposed_inter_host_s = 0;
  double exposed_paired_s = 0;
  double paired_compute_s = 0;
  double host_wait_s = 0;
  ComputeByKind compute_by_kind;
  ComputeByKind paired_by_kind;
  std::uint64_t events = 0;                  // discrete events the engine processed
  std::uint64_t collectives = 0;             // collectives and sends launched for simulated ranks
  std::uint64_t background_collectives = 0;  // symmetric images launched for folded ranks
  double sim_wall_s = 0;                     // wall-clock seconds the simulation took
  std::vector<RankResult> ranks;
  // ExecOptions::period_chunks: per simulated rank (in `ranks` order), its times when its
  // marked forward chunks began (step_time_s: the time of the mark); empty unless every
  // rank passed both marks.
  std::vector<RankResult> period_start, period_end;
};

// Makes `rank` the step's critical rank: its step time and breakdown become the step's.
inline void take_critical(StepResult& step, const RankResult& rank) {
  step.step_time_s = rank.step_time_s;
  step.critical_rank = rank.rank;
  step.compute_s = rank.compute_s;
  step.exposed_comm_s = rank.exposed_comm_s;
  step.bubble_s = rank.bubble_s;
  step.comm_s = rank.comm_s;
  step.overlapped_comm_s = rank.overlapped_comm_s;
  step.exposed_inter_host_s = rank.exposed_inter_host_s;
  step.exposed_paired_s = rank.exposed_paired_s;
  step.paired_compute_s = rank.paired_compute_s;
  step.host_wait_s = rank.host_wait_s;
  step.compute_by_kind = rank.compute_by_kind;
  step.paired_by_kind = rank.paired_by_kind;
}

}  // namespace overlapsim::sim
