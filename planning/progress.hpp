#pragma once
// The plan's progress line on stderr: "plan: 12/40 configurations, 0.35/s, ETA 1m 08s",
// redrawn in place (carriage return) at most every half second, and ended with a newline.
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <mutex>

namespace overlapsim::planning {

class ProgressLine {
 public:
  // enabled false: prints nothing. `total` may shrink later (pruned points).
  ProgressLine(bool enabled, std::size_t total, std::FILE* stream = stderr);
  void set_total(std::size_t total);
  void advance();  // one more done; thread-safe
  void finish();   // the final line and a newline

 private:
  void draw(bool force);
  bool enabled_;
  std::size_t total_, done_ = 0;
  std::FILE* stream_;
  std::chrono::steady_clock::time_point start_, last_;
  std::mutex mutex_;
};

}  // namespace overlapsim::planning
