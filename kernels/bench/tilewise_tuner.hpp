#pragma once
// The tile-wise tuner: per transport, the candidate configurations of one pair shape
// timed (each also a detail line) and the fastest returned. A tuning-cache hit times only
// the cached configuration; *search then stays "cached", else it says how the candidates
// were chosen ("exhaustive" or "predictive").
#include <optional>
#include <string>

#include "kernels/bench/tilewise_context.hpp"

namespace overlapsim::kernels::bench {

// Transport nccl: for every SM count in --tilewise-comm-sms and wait mode in
// --tilewise-wait, the candidate partitions of group_predictor.hpp (all of them up to
// --tilewise-exhaustive waves, else the --tilewise-keep predicted best).
Status search_nccl_transport(TilewiseShapeContext& sc, std::optional<TilewiseCandidate>* best,
                             std::string* search);

// Transport copy_engine: every groups-per-part count in --tilewise-groups and phase-2
// mode in --tilewise-phase2 the shape allows, predicted from the interleaved
// GEMM-with-signals time and the peer-copy (and tail-kernel) curves. *other (optional): the
// fastest candidate of the other slab family than *best's (with slabs where *best has none,
// without where it has), for the final loop's like-for-like comparison.
Status search_copy_engine(TilewiseShapeContext& sc, std::optional<TilewiseCandidate>* best,
                          std::string* search, std::optional<TilewiseCandidate>* other = nullptr);

}  // namespace overlapsim::kernels::bench
