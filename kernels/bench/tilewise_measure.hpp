#pragma once
// The measurements behind the tile-wise tuner's predictions and acceptance 3, each
// emitting its rows (tilewise_runner.hpp lists them) and storing what it found in the
// shape context (GEMM times) or the rank's state (copy and tail-kernel curves).
#include "kernels/bench/tilewise_context.hpp"

namespace overlapsim::kernels::bench {

// Own GEMM alone, natural stores on every SM: the GEMM the tile-wise design builds on
// (row gemm/own once per shape; sets sc.own_gemms, sc.t_own_s).
Status measure_own_alone(TilewiseShapeContext& sc);

// The plain own GEMM, the NCCL transport's GEMM (remapped stores + signals, every SM) and
// the copy-engine transport's (rotated order, remapped stores, signals, own part placed
// without waiting) in ONE interleaved loop: acceptance 3 compares them under one clock.
// Also in the loop: the previous own GEMM version (v2: 4-byte epilogue stores, no
// cluster; own_v2_interleaved) and the copy-engine GEMM with a GPU-scope signal beside the
// system-scope one (own_signal_ce_gpu, own_signal_ce), so the version gain and the signal
// scope's cost are measured under the same clock as the rest; the faster scope is the one
// the copy-engine candidates then use (sc.ce_system_scope, sc.t_signal_ce_s).
Status measure_signal_interleaved(TilewiseShapeContext& sc);

// cudaMemcpyAsync of `bytes` to the next rank, every rank at once (as the transport
// does), at sizes spanning one group to one part, and a group's stream operations on top:
// the copy-engine predictor's copy curve and per-group cost, once per rank.
Status measure_copy_curve(TilewiseShapeContext& sc);

// The tail kernel (tail_exchange.hpp) exchanging `bytes` with every peer, every rank at
// once and each from its GEMM's end as in the design: what the predictor charges for the
// last own group in phase-2 mode tail_kernel (rows peer_copy/tail_kernel), once per rank.
Status measure_tail_curve(TilewiseShapeContext& sc);

// Wave time (GEMM with signalling on SMs − sms, alone) and the NCCL curve at the sizes
// of 1, 2, 4, ... waves and of the whole output.
Status measure_inputs(TilewiseShapeContext& sc, int sms, CommHandle* comm, tw::PredictorInputs* in);

}  // namespace overlapsim::kernels::bench
