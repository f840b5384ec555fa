#pragma once
// What every case runner of one rank shares: the rank, a cuBLASLt handle and workspace,
// the run's seed, and where finished rows go (rank 0 keeps them; every rank computes the
// same row because times and wrong counts are reduced over ranks first).
#include <cublasLt.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "kernels/bench/bench_case.hpp"
#include "kernels/bench/bench_row.hpp"
#include "kernels/bench/tilewise_settings.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/multi_gpu.hpp"

namespace overlapsim::kernels::bench {

struct TilewiseRankState;  // tilewise_context.hpp
class TilewiseReports;     // tilewise_report.hpp
struct ShapedRankState;    // shaped_runner.hpp

struct BenchEnv {
  RankContext* ctx = nullptr;
  cublasLtHandle_t lt = nullptr;
  DeviceBuffer workspace;
  std::uint64_t seed = 0;
  std::size_t l2_bytes = 0;
  std::function<void(const BenchRow&)> emit;  // called on every rank; rank 0 records
  std::set<std::string> measured;             // keys of single-op rows already emitted
  TilewiseSettings tilewise_settings;         // design tilewise (overlap-bench's flags)
  // The tile-wise runner's state of this rank across shapes (tuning cache, curves,
  // limited communicators) and its side files, one for every rank of a run; created on
  // first use when the caller left them empty.
  std::shared_ptr<TilewiseRankState> tilewise_state;
  std::shared_ptr<TilewiseReports> tilewise_reports;
  // The shaped runner's communicators per NCCL CTA count, kept across shapes.
  std::shared_ptr<ShapedRankState> shaped_state;
  // --shaped-algos: where the shaped runner appends its GEMMs' cuBLASLt algorithms.
  std::string shaped_algos_path;
  // --shaped-paired: where the shaped runner appends its paired loop's rounds.
  std::string shaped_paired_path;

  int rank() const { return ctx->comm.rank; }
  int world() const { return ctx->comm.world; }
  // Input sets to rotate through so the inputs of consecutive iterations exceed L2 3x.
  int rotation_sets(std::size_t input_bytes) const;
};

// Key of a single-op row, so an op measured by several cases is timed once.
std::string single_op_key(const std::string& op, const std::string& design, DType dtype,
                          const PairShape& shape);

Status open_env(RankContext& ctx, std::uint64_t seed, BenchEnv* env);
void close_env(BenchEnv* env);

Status run_collective_case(BenchEnv& env, const BenchCase& c);
Status run_compute_case(BenchEnv& env, const BenchCase& c);
Status run_pair_case(BenchEnv& env, const BenchCase& c);

}  // namespace overlapsim::kernels::bench
