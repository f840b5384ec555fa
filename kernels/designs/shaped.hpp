#pragma once
// Design `shaped` (occupancy shaping with a prioritised collective): the decomposed
// design's chunks (pair_op.hpp), but each chunk's GEMM is planned by cuBLASLt for
// SMs − free_sms SMs (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET) and each chunk's collective
// runs on the high-priority comm stream over a communicator with exactly comm_ctas CTAs
// (minCTAs = maxCTAs, cgaClusterSize 1). GEMM and NCCL then share the GPU by
// construction instead of NCCL waiting for GEMM CTAs to retire.
//
// (free_sms 0, comm_ctas 0, chunks k) is only a look-alike of the decomposed design with k
// chunks: its chunk GEMMs ask cuBLASLt for no split-K, where decomposed's take the heuristic's
// first answer (the same algorithm on every shape of the shaped suite on 2 x H200, but not
// promised), they are other objects, and chunks 1 runs the collective on the comm stream,
// where sequential runs both on one. A tuner's choice is therefore a ShapedChoice (below), which
// may be the decomposed design or the sequential pair themselves: chosen, shaped then runs their
// code on their objects and cannot differ from them but by timing noise. Pairs: gemm+allreduce,
// gemm+reducescatter, gemm+alltoall. The chunked result equals the unchunked one element for
// element as long as cuBLASLt sums over K in the same order (the chunk GEMMs ask for no split-K,
// GemmRunOptions::no_split_k) and NCCL reduces each element in the same order at the chunk's size,
// which holds for 2 ranks and for reduce-scatter and all-to-all; NCCL's all-reduce over more ranks
// orders its sums by the message size and CTA count (measured: 4 x H100), so chunks differ there in
// the last bits, as the decomposed design's do.
//
// Host API: initialize (GEMM plan) -> prepare (loads the kernels on every rank before any
// collective of this design may start: CUDA_MODULE_LOADING=LAZY) -> run. C++17.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "kernels/designs/decomposed.hpp"
#include "kernels/designs/pair_kernels.hpp"

namespace overlapsim::kernels {

struct ShapedConfig {
  int free_sms = 0;   // SMs the GEMM leaves free; 0: cuBLASLt's default plan (every SM)
  int comm_ctas = 0;  // NCCL CTAs of the communicator passed to initialize (0: default config)
  int chunks = 1;

  // "s16:c8:k2", the CSV's design suffix.
  std::string name() const;
};

// A communicator split from `parent` whose collectives use exactly `ctas` CTAs
// (minCTAs = maxCTAs = ctas, cgaClusterSize 1, blocking). Collective over the parent's
// ranks: every rank calls it in the same order, with streams drained (harness quiesce).
// Keep it for the life of the process: finalizing a split between shapes hung a rank
// (kernels/bench/tilewise_context.hpp says when).
Status make_shaped_comm(CommHandle& parent, int ctas, CommHandle* out);

// The cuBLASLt plan of the decomposed design's chunk GEMM at `chunks` (PairKernels::prepare's
// query: the same shape, batching and alignment, no run options), built again so it can be
// compared with a grid point's; *batches: the row blocks one call covers.
Status decomposed_chunk_gemm(cublasLtHandle_t lt, PairOp op, const PairShape& shape, int world,
                             DType dtype, void* workspace, std::size_t workspace_bytes, int chunks,
                             CublasLtGemm* out, int* batches);

class ShapedDesign {
 public:
  ShapedDesign() = default;
  ~ShapedDesign();
  ShapedDesign(const ShapedDesign&) = delete;
  ShapedDesign& operator=(const ShapedDesign&) = delete;

  static bool supports(PairOp op);

  // `comm`: the communicator the collectives run on (make_shaped_comm's for comm_ctas > 0);
  // `device_sms`: the GPU's SM count. The GEMM plan is made here (outside timed regions).
  Status initialize(CommHandle* comm, cublasLtHandle_t lt, PairOp op, const PairShape& shape,
                    DType dtype, void* workspace, std::size_t workspace_bytes, int device_sms,
                    const ShapedConfig& config);
  // Runs every chunk's GEMM once on `compute_stream` (no collective), then meets the other
  // ranks (quiesce on `barrier_comm`, the run's communicator), so a lazily loaded GEMM
  // kernel is never loaded while a peer's NCCL kernel waits for this rank.
  Status prepare(const PairBuffers& buffers, cudaStream_t compute_stream, CommHandle& barrier_comm);
  // Starts and ends on `compute_stream` (fork and join events), like one kernel.
  Status run(const PairBuffers& buffers, cudaStream_t compute_stream,
             cudaStream_t comm_stream) const;

  // The chunks' GEMMs alone, in order on `stream` (the surface's GEMM-with-S-taken time).
  Status run_gemms(const PairBuffers& buffers, cudaStream_t stream) const;

  const ShapedConfig& config() const { return config_; }
  // One chunk's cuBLASLt GEMM (every chunk runs the same plan): its shape, how many row
  // blocks one call covers, and the algorithm the heuristic chose for it.
  const CublasLtGemm& gemm() const { return gemm_; }
  int gemm_batches() const { return gemm_batches_; }

 private:
  void destroy();
  Status enqueue_gemm(const PairBuffers& buffers, int chunk, cudaStream_t stream) const;

  ShapedConfig config_;
  PairOp op_ = PairOp::GemmAllReduce;
  PairShape shape_;
  DType dtype_ = DType::BF16;
  int world_ = 1;
  PairKernels collective_;  // its collectives only, on `comm`
  CublasLtGemm gemm_;       // one chunk's GEMM, SM target applied
  int gemm_batches_ = 1;
  std::vector<cudaEvent_t> chunk_done_;
  cudaEvent_t fork_ = nullptr;
  cudaEvent_t join_ = nullptr;
};

// What the shaped tuner hands back: one of its grid points, or the decomposed design with
// k chunks, or the sequential pair. The last two borrow the baseline's own objects (the
// PairKernels with its GEMM plans, the DecomposedDesign with its events), so the shaped
// design's fallback is the baseline's very code path, not a grid point at S = 0 that
// resembles it. Borrowed objects must outlive the choice.
class ShapedChoice {
 public:
  enum class Kind { Grid, Decomposed, Sequential };

  // `design` initialized (and prepared, where lazy loading matters).
  static ShapedChoice grid(const ShapedDesign& design);
  // `pair.prepare(chunks)` done, `design` initialized for at least `chunks`.
  static ShapedChoice decomposed(const PairKernels& pair, DecomposedDesign& design, int chunks);
  // `pair.prepare(1)` done.
  static ShapedChoice sequential(const PairKernels& pair);

  Kind kind() const { return kind_; }
  int chunks() const;
  // The CSV's design suffix: "s16:c8" for a grid point (its chunks go to the chunks
  // column), "decomposed" or "sequential" for the baselines' own code paths.
  std::string name() const;
  // The grid point's design; nullptr for the other kinds.
  const ShapedDesign* design() const { return grid_; }

  // Starts and ends on `compute_stream`, like ShapedDesign::run.
  Status run(const PairBuffers& buffers, cudaStream_t compute_stream,
             cudaStream_t comm_stream) const;

 private:
  ShapedChoice() = default;
  Kind kind_ = Kind::Grid;
  const ShapedDesign* grid_ = nullptr;
  const PairKernels* pair_ = nullptr;
  DecomposedDesign* decomposed_ = nullptr;
  int chunks_ = 1;
};

}  // namespace overlapsim::kernels
