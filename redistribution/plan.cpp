#include "redistribution/plan.hpp"

#include <algorithm>

namespace overlapsim::redistribution {

std::uint64_t Plan::bytes_moved() const {
  std::uint64_t total = 0;
  for (const Step& s : steps)
    for (std::int64_t e : s.received_elements) total += static_cast<std::uint64_t>(e);
  return total * static_cast<std::uint64_t>(element_bytes);
}

std::uint64_t Plan::max_device_bytes_received() const {
  std::vector<std::int64_t> per(static_cast<std::size_t>(mesh.num_devices()), 0);
  for (const Step& s : steps)
    for (std::size_t d = 0; d < per.size(); ++d) per[d] += s.received_elements[d];
  const std::int64_t m = per.empty() ? 0 : *std::max_element(per.begin(), per.end());
  return static_cast<std::uint64_t>(m) * static_cast<std::uint64_t>(element_bytes);
}

std::uint64_t Plan::peak_bytes() const {
  std::int64_t peak = std::max(local_elements(mesh, shape, from), local_elements(mesh, shape, to));
  for (const Step& s : steps) peak = std::max(peak, s.peak_elements());
  return static_cast<std::uint64_t>(peak) * static_cast<std::uint64_t>(element_bytes);
}

std::uint64_t Plan::buffer_bytes() const {
  std::int64_t b = 0;
  for (const Step& s : steps) b = std::max(b, s.buffer_elements);
  return static_cast<std::uint64_t>(b) * static_cast<std::uint64_t>(element_bytes);
}

std::uint64_t Plan::from_bytes() const {
  return static_cast<std::uint64_t>(local_elements(mesh, shape, from)) *
         static_cast<std::uint64_t>(element_bytes);
}

std::uint64_t Plan::to_bytes() const {
  return static_cast<std::uint64_t>(local_elements(mesh, shape, to)) *
         static_cast<std::uint64_t>(element_bytes);
}

std::uint64_t Plan::bound_bytes() const { return std::max(from_bytes(), to_bytes()); }

std::optional<std::size_t> best_under_cap(std::span<const Plan> plans,
                                          std::span<const double> time_s,
                                          std::uint64_t cap_bytes) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (plans[i].peak_bytes() > cap_bytes) continue;
    if (!best || time_s[i] < time_s[*best]) best = i;
  }
  return best;
}

}  // namespace overlapsim::redistribution
