#pragma once
// The tile-wise rows' side files, written atomically as they grow:
//   --tilewise-detail: one line per timed candidate and per final configuration (rank 0),
//                      predicted against measured time;
//   --tilewise-timeline: the chosen copy-engine configuration's step times (every rank).
// One TilewiseReports serves every rank of the run (its lines are shared, under a mutex).
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kernels/bench/tilewise_context.hpp"

namespace overlapsim::kernels::bench {

class TilewiseReports {
 public:
  // A detail line for `cand` of this shape (rank 0 only; other ranks' calls do nothing).
  // bit_mismatches / fused_mismatches < 0: left empty.
  void detail(const TilewiseShapeContext& s, const char* record, const TilewiseCandidate& cand,
              const std::string& search, long long bit_mismatches, long long fused_mismatches);
  // Every detail line so far to `path` (none when empty).
  Status write_detail(const std::string& path);
  // One rank's timeline: per call, per step (name, microseconds); then the whole file.
  Status add_timeline(const TilewiseShapeContext& s, const TilewiseCandidate& best,
                      const std::vector<std::vector<std::pair<std::string, double>>>& calls,
                      const std::string& path);

 private:
  std::mutex mutex_;
  std::vector<std::string> detail_lines_;
  std::vector<std::string> timeline_lines_;
};

}  // namespace overlapsim::kernels::bench
