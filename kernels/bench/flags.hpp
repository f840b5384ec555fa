#pragma once
// overlap-bench's command line.
//
//   overlap-bench --suite benchmarks/suites/kernels_i.yaml [--output results.csv]
//   overlap-bench --op gemm+allreduce --shapes 8192x8192x8192,4096x4096x4096
//                 [--designs sequential,decomposed] [--chunks 2,4,8] [--dtype bf16]
//                 [--bytes 1MiB,1GiB] [--table-rows N] [--no-parts]
//   overlap-bench --op interference --shapes 8192x8192x4096 --bytes 16MiB,128MiB
//                 [--collectives allreduce,alltoall] [--ctas 4,8,16,32,0]
//   common: [--iterations N] [--warmup N] [--min-time-ms T] [--warmup-ms W] [--world N] [--mpi]
//           [--nonblocking] [--timeout 120s] [--seed S] [--output FILE] [--list-designs]
//           [--trace] [--shaped-algos FILE] [--shaped-paired FILE]
//   design tilewise: [--tilewise-transport nccl,copy_engine] [--tilewise-phase2 MODES]
//           [--tilewise-groups 2,4,8,16] [--tilewise-comm-sms 16] [--tilewise-wait MODES]
//           [--tilewise-keep 6] [--tilewise-exhaustive 16] [--tilewise-cache FILE]
//           [--tilewise-detail FILE] [--tilewise-timeline FILE]
// The tile-wise settings and --trace take their defaults from the environment variables
// older scripts set (OVERLAPSIM_TILEWISE_TRANSPORT, _CE_PHASE2, _CE_GROUPS, _COMM_SMS,
// _WAIT, _KEEP, _EXHAUSTIVE, _CACHE, _DETAIL, _TIMELINE; OVERLAPSIM_TRACE); a flag wins.
//
// Bad flags throw std::invalid_argument with a one-line message (exit code 2).
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/bench/bench_case.hpp"
#include "kernels/bench/tilewise_settings.hpp"

namespace overlapsim::kernels::bench {

struct BenchOptions {
  std::string suite;  // YAML suite, or empty when the case comes from flags
  std::optional<BenchCase> flag_case;
  std::optional<int> iterations;  // overrides every case
  std::optional<int> warmup;
  std::optional<double> min_time_s;  // --min-time-ms, overrides every case
  std::optional<double> warmup_s;    // --warmup-ms
  std::uint64_t seed = 0;
  int world = 0;
  bool use_mpi = false;
  // Timings use blocking communicators (see HarnessOptions::blocking_comms);
  // --nonblocking bounds every NCCL call instead, at ~40-80 us of host time per call.
  bool blocking_comms = true;
  double timeout_s = 120.0;
  // --trace: every stream wait and rendezvous logs its rank on stderr (comm.hpp).
  bool trace = false;
  std::string output;
  // --shaped-algos: design shaped's cuBLASLt algorithm per grid point (shaped_runner.hpp).
  std::string shaped_algos;
  // --shaped-paired: design shaped's choice, decomposed and sequential, round by round.
  std::string shaped_paired;
  TilewiseSettings tilewise;
  bool help = false;
};

// An environment variable's value, or nullopt when unset or empty.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
// The process environment (std::getenv).
std::optional<std::string> process_env(const char* name);

BenchOptions parse_flags(const std::vector<std::string>& args, const EnvLookup& env = process_env);
// "MxNxK[,MxNxK...]", every dimension an integer >= 1, read as overlap-bench's --shapes
// reads it (table_rows 0), for other tools too; std::invalid_argument otherwise, its
// message starting with `program` and naming the bad item.
std::vector<PairShape> parse_shape_list(const std::string& text, const std::string& program);
std::string usage();

}  // namespace overlapsim::kernels::bench
