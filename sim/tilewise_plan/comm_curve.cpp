#include "sim/tilewise_plan/comm_curve.hpp"

#include <algorithm>

namespace overlapsim::tilewise_plan {

TimeOfBytes linear_time(double latency_s, double bytes_per_s) {
  return [latency_s, bytes_per_s](double bytes) { return latency_s + bytes / bytes_per_s; };
}

TimeOfBytes tail_exchange_time(int world, double latency_s, double bytes_per_s) {
  const int peers = world - 1;
  return [peers, latency_s, bytes_per_s](double b) { return latency_s + peers * b / bytes_per_s; };
}

void CommCurve::add_point(double bytes, double time_s) {
  const auto at = std::lower_bound(bytes_.begin(), bytes_.end(), bytes);
  const auto i = at - bytes_.begin();
  if (at != bytes_.end() && *at == bytes) {
    times_s_[static_cast<std::size_t>(i)] = time_s;
    return;
  }
  bytes_.insert(at, bytes);
  times_s_.insert(times_s_.begin() + i, time_s);
}

double CommCurve::time_s(double bytes) const {
  if (bytes_.empty()) return 0;
  if (bytes_.size() == 1) return times_s_[0] * std::max(1.0, bytes / bytes_[0]);
  std::size_t hi = static_cast<std::size_t>(
      std::lower_bound(bytes_.begin(), bytes_.end(), bytes) - bytes_.begin());
  hi = std::clamp<std::size_t>(hi, 1, bytes_.size() - 1);
  const std::size_t lo = hi - 1;
  const double slope = (times_s_[hi] - times_s_[lo]) / (bytes_[hi] - bytes_[lo]);
  // Below the smallest point a call never gets cheaper than that point's latency share.
  const double t = times_s_[lo] + slope * (bytes - bytes_[lo]);
  return std::max(t, bytes < bytes_[0] ? times_s_[0] * 0.5 : 0.0);
}

TimeOfBytes CommCurve::as_function() const {
  return [curve = *this](double bytes) { return curve.time_s(bytes); };
}

}  // namespace overlapsim::tilewise_plan
