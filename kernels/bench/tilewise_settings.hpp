#pragma once
// How overlap-bench runs design `tilewise` (tilewise_runner.hpp): parsed once from the
// command line (flags.cpp, --tilewise-*) and handed to every rank.
#include <string>
#include <vector>

#include "kernels/tilewise/allgather_gemm.hpp"
#include "kernels/tilewise/copy_engine_layout.hpp"
#include "kernels/tilewise/signal_wait.hpp"

namespace overlapsim::kernels::bench {

struct TilewiseSettings {
  // --tilewise-comm-sms: SM counts left to NCCL (the limited communicators) to search.
  std::vector<int> comm_sms{16};
  // --tilewise-wait: how the NCCL transport's comm stream waits for a group.
  std::vector<tilewise::WaitMode> waits{tilewise::WaitMode::Kernel,
                                        tilewise::WaitMode::StreamMemOp};
  int keep = 6;               // --tilewise-keep: predicted-best partitions timed
  int exhaustive_limit = 16;  // --tilewise-exhaustive: waves up to which every partition is timed
  std::string cache_path;     // --tilewise-cache: tuning cache YAML (empty: none)
  std::string detail_path;    // --tilewise-detail: every candidate's predicted and measured time
  std::string timeline_path;  // --tilewise-timeline: the chosen copy-engine call's steps
  bool nccl = true;           // --tilewise-transport nccl (tilewise_design.hpp)
  bool copy_engine = true;    // --tilewise-transport copy_engine (copy_engine_design.hpp)
  // --tilewise-groups: the copy-engine transport's groups per part to time.
  std::vector<int> ce_groups{2, 4, 8, 16};
  // --tilewise-slabs: the copy-engine ring all-reduce's slab counts to time
  // (CopyEngineOptions::slabs; 1: the rotated order over all rows).
  std::vector<int> ce_slabs{1, 2, 4};
  // --tilewise-split-tail: the own GEMM's split last wave (SchedulerOptions::split_k_tail) the
  // copy-engine and AllGather+GEMM tuners time on their best candidate (1: unsplit, always).
  std::vector<int> split_tail{1, 2, 4};
  // --tilewise-slab-skew: the slab orders to time with slabs > 1 (0: plain, 1: skewed).
  std::vector<int> ce_slab_skew{0, 1};
  // --tilewise-phase2: the all-reduce phase-2 modes of the copy-engine transport the tuner
  // may time (CopyEngineOptions::phase2; the epilogue's needs 2 ranks).
  std::vector<tilewise::CopyEnginePhase2> phase2_modes{tilewise::CopyEnginePhase2::CopyEngine,
                                                       tilewise::CopyEnginePhase2::Epilogue,
                                                       tilewise::CopyEnginePhase2::TailKernel};
  // The copy-engine routes of a reduction's partial tiles the tuner times (the ring where
  // it differs from the direct route: more than 2 ranks, reducescatter or allreduce).
  std::vector<tilewise::CopyEngineRoute> routes{tilewise::CopyEngineRoute::Direct,
                                                tilewise::CopyEngineRoute::Ring};
  // AllGather+GEMM (allgather_tilewise_runner.hpp): the chunks a row block is pushed in
  // (--tilewise-ag-chunks) and how the pushes are issued (--tilewise-ag-push) to time.
  std::vector<int> ag_chunks{1, 2, 4};
  std::vector<tilewise::AllGatherPush> ag_push{tilewise::AllGatherPush::Rotated,
                                               tilewise::AllGatherPush::PerPeer};
  // --tilewise-vendor-chunks: the per-chunk vendor (cuBLASLt) candidates on the copy-engine
  // transport, one per count of chunks a row block is cut into (AllGather+GEMM:
  // AllGatherGemmOptions::vendor_gemm; GEMM+ReduceScatter: vendor_reduce_scatter.hpp); empty
  // ("0"): none.
  std::vector<int> vendor_chunks{1};
  // --tilewise-vendor-streams: AllGather+GEMM's vendor candidates once per stream count
  // (AllGatherGemmOptions::vendor_streams: 1, or 2 alternating as PyTorch's pair does).
  std::vector<int> vendor_streams{1};
  // --tilewise-ag-align: AllGather+GEMM candidates with the start barrier (1) and/or without
  // (0; AllGatherGemmOptions::align_start). The search loop starts every variant aligned, so
  // an unaligned candidate only shows its back-to-back cost among the finalists below.
  std::vector<int> ag_align{1};
  // --tilewise-ag-finalists: AllGather+GEMM's search keeps up to this many candidates within
  // kFinalistSpread of the fastest (and more than 1 % faster than sequential there), times
  // each back to back steady and burst (clock_states.hpp), and chooses the one whose worse
  // state is nearest that state's fastest finalist; 0 or 1: the search's choice alone.
  int ag_finalists = 0;
  // --tilewise-clock-states: gemm+reducescatter also times the sequential pair, the GEMM
  // alone and each family's choice steady and burst (clock_states.hpp).
  bool clock_states = false;
};

}  // namespace overlapsim::kernels::bench
