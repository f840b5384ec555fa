#pragma once
// A redistribution plan: an array of `shape` over `mesh` taken from layout `from` to layout
// `to` by a sequence of steps, with the per-device figures the CLI and the tests report.
// synthesize() gives the normal form (docs/redistribution.md):
//
//   slice -> reduce-scatter -> all-reduce -> one exchange (all-to-all / permute) -> all-gather
//
// Every layout it passes through holds at most max(from, to) elements per device, and each
// step allocates at most one receive buffer (its output) beside its input, so no device
// ever holds more than max(from, to) + buffer_bytes(). Every element a device receives lies
// in its target block and arrives once. naive_plan() is the all-gather-then-slice fallback
// (XLA's): reduce pending sums, all-gather every axis that does not keep its place (leading
// axes of a dimension that source and target share stay split), then slice locally.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "redistribution/layout.hpp"
#include "redistribution/mesh.hpp"
#include "redistribution/step.hpp"

namespace overlapsim::redistribution {

struct Plan {
  std::string name;  // "synthesised", "naive"
  Mesh mesh;
  Shape shape;
  int element_bytes = 1;
  Layout from, to;
  std::vector<Step> steps;

  // Bytes every device together receives, over all steps.
  std::uint64_t bytes_moved() const;
  // The most bytes one device receives, over all steps.
  std::uint64_t max_device_bytes_received() const;
  // Per device, the most bytes held at once (input plus the step's receive buffer).
  std::uint64_t peak_bytes() const;
  // The largest receive buffer of any step, per device.
  std::uint64_t buffer_bytes() const;
  // max(from, to) local bytes per device: the bound on every layout the plan passes through.
  std::uint64_t bound_bytes() const;
  std::uint64_t from_bytes() const;
  std::uint64_t to_bytes() const;
};

// Throws config::ConfigError when `to` holds a pending sum over an axis where `from` does not
// (creating pending sums is not supported). Both layouts must be valid for mesh and shape.
Plan synthesize(const Mesh& mesh, const Shape& shape, int element_bytes, const Layout& from,
                const Layout& to);
Plan naive_plan(const Mesh& mesh, const Shape& shape, int element_bytes, const Layout& from,
                const Layout& to);

// The fastest plan whose peak_bytes() fits `cap_bytes` (ties: the earlier one), given each
// plan's time; nullopt when none fits.
std::optional<std::size_t> best_under_cap(std::span<const Plan> plans,
                                          std::span<const double> time_s,
                                          std::uint64_t cap_bytes);

}  // namespace overlapsim::redistribution
