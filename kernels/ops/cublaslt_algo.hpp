#pragma once
// What cuBLASLt's heuristic chose for a GEMM, read back from the algorithm descriptor
// (cublasLtMatmulAlgoConfigGetAttribute): the CTA tile, the thread-block cluster, split-K,
// stages, swizzling. The simulator's shaped model quantises a GEMM's work into waves of
// tiles over the SMs it is given, so the tile it uses should be the one cuBLASLt runs
// (benchmarks/gpu/run_shaped.sh records it per shape and SM target). C++17.
#include <cublasLt.h>

#include <string>

#include "kernels/common/status.hpp"

namespace overlapsim::kernels {

// Two extents in cuBLASLt's column-major terms: `rows` along its M, `cols` along its N.
struct CublasLtDims {
  int rows = 0;
  int cols = 0;
};

// The enumerators' extents (cublasLtMatmulTile_t, cublasLtClusterShape_t); {0, 0} for
// UNDEFINED / AUTO and any id this header does not name.
CublasLtDims cublaslt_tile_dims(int tile_id);
CublasLtDims cublaslt_cluster_dims(int cluster_id);

struct CublasLtAlgoInfo {
  int algo_id = 0;
  int tile_id = 0;
  int cluster_id = 0;
  int stages_id = 0;
  int splitk_num = 1;
  int reduction_scheme = 0;
  int swizzle = 0;
  float waves = 0;  // the heuristic's wavesCount (cublasLtMatmulHeuristicResult_t)
  CublasLtDims tile;     // cuBLASLt's M x N
  CublasLtDims cluster;  // CTAs along cuBLASLt's M x N
  // The tile in the project's convention, C[m x n] = A · Bᵀ row-major: CublasLtGemm asks
  // cuBLASLt for Cᵀ (its M is our n, its N our m), so our tile_m is its N extent.
  int tile_m() const { return tile.cols; }
  int tile_n() const { return tile.rows; }
  int cluster_m() const { return cluster.cols; }
  int cluster_n() const { return cluster.rows; }
};

// Reads the descriptor's configuration (no GPU work).
Status read_algo_info(const cublasLtMatmulAlgo_t& algo, float waves, CublasLtAlgoInfo* out);

// "128x256" (ours, m x n), "0x0" when the tile is undefined.
std::string tile_text(const CublasLtAlgoInfo& info);

}  // namespace overlapsim::kernels
