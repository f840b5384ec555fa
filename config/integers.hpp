#pragma once
// Overflow-checked integers: the one place a YAML, CSV or command-line integer is parsed,
// narrowed to a smaller type or multiplied, so 4294967297 is never read as 1 and
// pp x virtual_stages never wraps to 0. Each returns nullopt where C++ would wrap or
// truncate; callers turn that into a ConfigError naming the key.
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace overlapsim::config {

// The whole text as a decimal integer ("-12", "+3", "4096"); nullopt on anything else
// (empty, spaces, a fraction, an exponent, a value outside int64).
std::optional<std::int64_t> parse_int(std::string_view text);

// v as T when T holds it exactly.
template <class T>
std::optional<T> narrow_int(std::int64_t v) {
  if (!std::in_range<T>(v)) return std::nullopt;
  return static_cast<T>(v);
}

// a * b, or nullopt when the product does not fit int64.
inline std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

}  // namespace overlapsim::config
