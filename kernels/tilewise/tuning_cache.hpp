#pragma once
// The tile-wise design's tuning cache: the best measured configuration (group partition,
// SMs left to NCCL, wait mechanism) per problem, keyed by GPU, dtype, M, N, K, world size
// and collective. A YAML file (benchmarks/results/h200x2/tilewise_tuning.yaml):
//
//   entries:
//     - {gpu: NVIDIA H200, dtype: bf16, m: 8192, n: 8192, k: 8192, world: 2,
//        collective: allreduce, partition: 1+2+4+8, comm_sms: 16, wait: kernel,
//        time_s: 1.5e-3, predicted_s: 1.48e-3, search: exhaustive}
//
// load() reports bad files as a one-line error naming file, key, line:column and the
// expected form (config::ConfigNode); save() writes atomically. Host only, C++20.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/status.hpp"

namespace overlapsim::kernels::tilewise {

struct TuningKey {
  std::string gpu;
  std::string dtype;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  int world = 0;
  std::string collective;

  bool operator==(const TuningKey&) const = default;
};

struct TuningEntry {
  TuningKey key;
  std::vector<int> partition;  // waves per group
  int comm_sms = 0;            // SMs the GEMM leaves to NCCL
  // kernel | stream_memop | copy_engine | epilogue_phase2 | tail_kernel; the copy-engine
  // names with "_ring" (ring route) and/or "_c2" / "_c4" (row chunks) appended.
  std::string wait = "kernel";
  double time_s = 0;           // measured median
  double predicted_s = 0;      // the predictor's estimate for this partition
  std::string search;          // exhaustive | predictive | cached
};

class TuningCache {
 public:
  // A missing file is an empty cache; a malformed one is a failure naming the problem.
  Status load(const std::string& path);
  Status save(const std::string& path) const;
  std::optional<TuningEntry> find(const TuningKey& key) const;
  void put(const TuningEntry& entry);  // replaces the entry with the same key
  const std::vector<TuningEntry>& entries() const { return entries_; }

  static std::optional<TuningCache> parse(const std::string& text, const std::string& name,
                                          std::string* error);
  std::string to_yaml() const;

 private:
  std::vector<TuningEntry> entries_;
};

}  // namespace overlapsim::kernels::tilewise
