#include "config/integers.hpp"

#include <charconv>

namespace overlapsim::config {

std::optional<std::int64_t> parse_int(std::string_view text) {
  // One optional sign, then digits only ("+-1" is not a number).
  if (!text.empty() && text.front() == '+') {
    text.remove_prefix(1);
    if (!text.empty() && text.front() == '-') return std::nullopt;
  }
  if (text.empty()) return std::nullopt;
  std::int64_t v = 0;
  // from_chars reports out-of-range instead of wrapping, and stops at the first
  // non-digit: both are rejected here.
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace overlapsim::config
