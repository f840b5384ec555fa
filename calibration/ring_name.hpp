#pragma once
// The kernels' names of a copy-engine ring configuration (kernels/bench/tilewise_context.cpp):
// after "_ring", [_c<n>|_s<n>[d]][_par][_side][_whole] — row chunks, the slab order (skewed
// with d), phase 2 on a stream a peer or one side stream (both a clock of their own in the
// planner), the tail kernel over the whole own part. Both the overlap-bench design names
// (tilewise_ce_ring..., tilewise_ce_tk_ring...) and the tuner's wait names
// (copy_engine_ring..., tail_kernel_ring...) end so.
#include <optional>
#include <string_view>

#include "sim/overlap/designs.hpp"

namespace overlapsim::calibration {

// The configuration `name` gives, with `groups` groups per part, where `name` ends in
// "_ring" and one of the suffixes above; nothing for any other name or token (the split
// last wave's _k<n>, which the planner does not have, and anything newer).
std::optional<sim::TilewiseDesign::RingReplay> parse_ring_name(std::string_view name, int groups);

}  // namespace overlapsim::calibration
