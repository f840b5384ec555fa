#include "calibration/ring_name.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace overlapsim::calibration {

std::optional<sim::TilewiseDesign::RingReplay> parse_ring_name(std::string_view name, int groups) {
  const std::size_t ring = name.find("_ring");
  if (ring == std::string_view::npos) return std::nullopt;
  sim::TilewiseDesign::RingReplay r;
  r.groups_per_part = std::max(1, groups);
  std::string_view rest = name.substr(ring + 5);
  while (!rest.empty()) {
    if (rest.front() != '_') return std::nullopt;
    rest.remove_prefix(1);
    const std::string_view token = rest.substr(0, rest.find('_'));
    rest.remove_prefix(token.size());
    if (token == "par" || token == "side") {
      r.phase2_own_streams = true;
    } else if (token == "whole") {
      r.tail_whole_part = true;
    } else if (token.size() >= 2 && (token[0] == 'c' || token[0] == 's')) {
      const bool skew = token[0] == 's' && token.back() == 'd';
      const std::string_view digits = token.substr(1, token.size() - 1 - (skew ? 1 : 0));
      if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char ch) {
            return std::isdigit(static_cast<unsigned char>(ch)) != 0;
          }))
        return std::nullopt;
      (token[0] == 'c' ? r.row_chunks : r.slabs) = std::stoi(std::string(digits));
      r.slab_skew = skew;
    } else {
      return std::nullopt;  // _k<n> and anything newer
    }
  }
  return r;
}

}  // namespace overlapsim::calibration
