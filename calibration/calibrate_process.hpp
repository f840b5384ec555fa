#pragma once
// How calibrate runs overlap-bench so that no call outlives it: the child leads a process
// group of its own and gets SIGKILL when calibrate dies (prctl PR_SET_PDEATHSIG, checked
// against the race where calibrate dies before the prctl), and calibrate kills that group on
// a timeout and, through BenchSignalGuard, on SIGINT, SIGTERM, SIGHUP and SIGQUIT before it
// dies of them. An orphaned call would keep the GPUs busy under the next run's
// measurements, and could write its rows where the next run looks for its own.
#include <string>
#include <vector>

namespace overlapsim::calibration {

// Runs `bench args...` with NCCL_MAX_CTAS set when ctas > 0, stdout and stderr appended to
// `log`. Returns the exit code (128 + signal when killed, 124 on timeout: the whole group
// is killed then).
int run_bench(const std::string& bench, const std::vector<std::string>& args, int ctas,
              const std::string& log, double timeout_s);

// While one lives, a SIGINT, SIGTERM, SIGHUP or SIGQUIT to this process first kills the
// running overlap-bench call's process group, then takes its default action. One at a time
// (the handlers are process-wide); the previous handlers come back on destruction.
class BenchSignalGuard {
 public:
  BenchSignalGuard();
  ~BenchSignalGuard();
  BenchSignalGuard(const BenchSignalGuard&) = delete;
  BenchSignalGuard& operator=(const BenchSignalGuard&) = delete;
};

}  // namespace overlapsim::calibration
