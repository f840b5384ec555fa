#pragma once
// Predicted time of the copy-engine transport (copy_engine_layout.hpp) for one groups_per_part,
// from the GEMM's measured time with remapped stores and signals (all SMs: the transport
// takes none), the measured peer-copy curve X (copy time against bytes) and, for phase 2
// by the tail kernel, its measured curve Y. The timeline is the tile-wise planner's
// (sim/tilewise_plan/copy_engine.hpp, the simulator's too) on the layout's own groups
// (item i done at the end of its wave, ⌈(i + 1) / num_ctas⌉ · wave_time), with the
// tuner's options: no reduction cost in the epilogue, phase-2 copies timed from 0 rather
// than behind the peer copies, the tail kernel's Y (X without stream_ops_s where none is
// given).
// stream_ops_s: what each group's stream operations add to the copy stream beyond its copy
// (the flag write, the next counter wait and reset; ~8–10 µs on 2 × H100/H200 by the
// design's timeline, docs/kernels/log.md, "the first 2 × H100 run"): every copy costs X(bytes) +
// stream_ops_s, and phase 2 by the epilogue ends with X(0) + stream_ops_s. 0 leaves them out.
// C++17, host only.
#include "kernels/tilewise/copy_engine_layout.hpp"
#include "kernels/tilewise/group_predictor.hpp"
#include "sim/tilewise_plan/copy_engine.hpp"

namespace overlapsim::kernels::tilewise {

// The planner's problem for `plan`'s groups (predict_owner_time_s's arguments).
tilewise_plan::CopyEngineProblem copy_engine_problem(
    const CopyEngineLayout& plan, double gemm_time_s, const CommCurve& copy, int element_bytes,
    CopyEnginePhase2 phase2, double stream_ops_s, const CommCurve* tail_copy);

double predict_owner_time_s(const CopyEngineLayout& plan, double gemm_time_s, const CommCurve& copy,
                            int element_bytes = 2, CopyEnginePhase2 phase2 = CopyEnginePhase2::CopyEngine,
                            double stream_ops_s = 0.0, const CommCurve* tail_copy = nullptr);

}  // namespace overlapsim::kernels::tilewise
