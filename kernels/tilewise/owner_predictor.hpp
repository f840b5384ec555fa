#pragma once
// Predicted time of the copy-engine transport (owner_plan.hpp) for one groups_per_part,
// from the GEMM's measured time with remapped stores and signals (all SMs: the transport
// takes none) and the measured peer-copy curve (copy time against bytes). Item i is done
// at the end of its wave, ⌈(i + 1) / num_ctas⌉ · wave_time. Then
//   peer groups, in item order:  E = max(A_g, E) + X(bytes_g)       (one copy stream)
//   own group j arrives from its peers at D_j = the symmetric E of part r's group j (the
//     latest over peers); with a reduction it completes at
//     F_j = max(A_j, D_j, F_{j−1} + (A_j − A_{j−1}))   (a stalled group delays the rest)
//   reducescatter: T = F_last;  alltoall: T = max(A_last, E_last);
//   allreduce: E2 = max(F_j, E2) + (world − 1)·X(bytes_j) over own groups, T = E2_last;
//     with phase 2 by the epilogue (OwnerPhase2::Epilogue) the reduced tiles
//     reach the peer as they are stored, and only the done flag follows the last own group:
//     T = max(F_last, E_last) + X(0) (the copy curve's fixed cost stands for the flag's
//     stream write; the extra stores' cost to the GEMM is not modelled).
//     with the tail kernel (OwnerPhase2::TailKernel) the last own group leaves by a kernel
//     behind the GEMM instead: E2 over the other own groups, T = max(F_last, E2) +
//     (world − 1)·Y(bytes_last), Y = tail_copy (the tail kernel's measured curve), or X
//     without stream_ops_s when none is given.
// stream_ops_s: what each group's stream operations add to the copy stream beyond its copy
// (the flag write, the next counter wait and reset; ~8–10 µs on 2 × H100/H200 by the
// design's timeline, kernels/NOTES.md "Session 9"): every copy above costs X(bytes) +
// stream_ops_s, and phase 2 by the epilogue ends with X(0) + stream_ops_s. 0 leaves them out.
// C++17, host only.
#include "kernels/tilewise/group_predictor.hpp"
#include "kernels/tilewise/owner_plan.hpp"

namespace overlapsim::kernels::tilewise {

double predict_owner_time_s(const OwnerPlan& plan, double gemm_time_s, const CommCurve& copy,
                            int element_bytes = 2, OwnerPhase2 phase2 = OwnerPhase2::CopyEngine,
                            double stream_ops_s = 0.0, const CommCurve* tail_copy = nullptr);

}  // namespace overlapsim::kernels::tilewise
