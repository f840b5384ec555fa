#pragma once
// Per-design overhead parameters of a profile (the design models read them):
// e.g. decomposed.chunks, tilewise.signal_overhead_s, fused.per_tile_latency_s,
// shaped.comm_ctas. Keys carry their unit suffix (_s, _bytes, _Bps, _flops, or none for
// counts and fractions); each value keeps its source.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sim/profile/provenance.hpp"

namespace overlapsim::sim {

struct DesignParams {
  // design name -> parameter key -> value
  std::map<std::string, std::map<std::string, Sourced>> by_design;

  // nullptr when the profile does not set it.
  const Sourced* find(const std::string& design, const std::string& key) const;
};

}  // namespace overlapsim::sim
