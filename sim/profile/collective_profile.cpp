#include "sim/profile/collective_profile.hpp"

#include <cstdlib>

namespace overlapsim::sim {

const char* to_string(CommScope scope) {
  return scope == CommScope::IntraNode ? "intra_node" : "inter_node";
}

std::optional<CommScope> parse_comm_scope(std::string_view text) {
  if (text == "intra_node") return CommScope::IntraNode;
  if (text == "inter_node") return CommScope::InterNode;
  return std::nullopt;
}

const CollectiveSegment& CollectiveCurve::segment_for(std::uint64_t bytes) const {
  const CollectiveSegment* seg = &segments.front();
  for (const auto& s : segments)
    if (s.min_bytes <= bytes) seg = &s;
  return *seg;
}

double CollectiveCurve::time_s(std::uint64_t bytes, int n) const {
  const CollectiveSegment& seg = segment_for(bytes);
  return seg.latency_s + static_cast<double>(bytes) * busbw_factor(op, n) / seg.bus_bandwidth_Bps;
}

const CollectiveCurve* CollectiveProfile::find(CollectiveOp op, Algorithm algo, CommScope scope,
                                               int ranks, int ctas) const {
  const CollectiveCurve* best = nullptr;
  long best_score = 0;
  for (const auto& c : curves) {
    if (c.op != op || c.algo != algo || c.scope != scope) continue;
    // Lower is better: exact rank/CTA matches first, then "any", then the nearest measured.
    const long rank_score = c.ranks == ranks ? 0
                            : c.ranks == 0   ? 1
                                             : 2 + std::labs(c.ranks - ranks);
    const long cta_score = c.ctas == ctas ? 0 : c.ctas == 0 ? 1 : 2 + std::labs(c.ctas - ctas);
    const long score = rank_score * 100000 + cta_score;
    if (!best || score < best_score) {
      best = &c;
      best_score = score;
    }
  }
  return best;
}

}  // namespace overlapsim::sim
