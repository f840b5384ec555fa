#pragma once
// Time of one transfer against its bytes: the callable form every planner here takes, a
// fixed cost plus a rate, and a curve through measured points. C++17, host only.
#include <cstddef>
#include <functional>
#include <vector>

namespace overlapsim::tilewise_plan {

// Seconds for a transfer of `bytes`.
using TimeOfBytes = std::function<double(double bytes)>;

// latency_s + bytes / bytes_per_s (the simulator's profile rates).
TimeOfBytes linear_time(double latency_s, double bytes_per_s);

// The all-reduce tail kernel's exchange of b bytes with every peer at once at `world` ranks:
// one latency, and b bytes to each of the world - 1 peers through the rank's links,
// latency_s + (world - 1) b / bytes_per_s (the line calibration/fit_copy_engine.hpp fits).
TimeOfBytes tail_exchange_time(int world, double latency_s, double bytes_per_s);

// Measured points, piecewise linear between them; beyond the ends, linear through the two
// nearest; below the smallest point never under half its time (a call keeps its latency).
// One point: that time, scaled up with bytes above it.
class CommCurve {
 public:
  void add_point(double bytes, double time_s);
  double time_s(double bytes) const;
  bool empty() const { return bytes_.empty(); }
  std::size_t size() const { return bytes_.size(); }
  // This curve as a TimeOfBytes (a copy: the callable outlives the curve).
  TimeOfBytes as_function() const;

 private:
  std::vector<double> bytes_;
  std::vector<double> times_s_;
};

}  // namespace overlapsim::tilewise_plan
