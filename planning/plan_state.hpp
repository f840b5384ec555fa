#pragma once
// The plan's resume file: one JSON line per simulated configuration, appended and flushed
// as each finishes, after a header line with the inputs' fingerprint. `--resume` reads the
// finished configurations back instead of simulating them again; a half-written last line
// (a killed run) is ignored. Results travel through the same JSON text either way, so a
// resumed plan reports the very same numbers as an uninterrupted one.
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "planning/plan_result.hpp"
#include "planning/ranks.hpp"

namespace overlapsim::planning {

// What the simulator gave for one configuration (costs are computed later).
struct SimulatedPoint {
  std::string key;  // PlanConfig::key()
  double tokens_per_step = 0;
  std::vector<PlanRun> runs;
};

std::string to_state_line(const SimulatedPoint& point);  // one line, no newline
// nullopt for a line that does not parse (a run killed mid-write).
std::optional<SimulatedPoint> from_state_line(const std::string& line);

// 64-bit FNV-1a of the text, as 16 hex digits: the inputs' fingerprint.
std::string fingerprint(const std::string& text);

class PlanState {
 public:
  // Opens `path` for appending. resume: keeps the finished points of a file with the same
  // fingerprint (config::ConfigError for another fingerprint); otherwise starts it afresh.
  // Under MPI (a collective: every rank constructs it) rank r > 0 appends to its own file,
  // `path` + ".rank<r>", and rank 0 first folds every such file of an earlier run into
  // `path`, so a run resumes whatever ranks finished, at any rank count.
  PlanState(const std::string& path, const std::string& fingerprint, bool resume,
            const Ranks& ranks = Ranks());

  const SimulatedPoint* find(const std::string& key) const;
  // Thread-safe; the line is flushed before it returns.
  void append(const SimulatedPoint& point);
  std::size_t resumed() const { return finished_.size(); }

 private:
  std::string path_;
  std::map<std::string, SimulatedPoint> finished_;
  std::ofstream out_;
  std::mutex mutex_;
};

}  // namespace overlapsim::planning
