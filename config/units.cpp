#include "config/units.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <fmt/format.h>

namespace overlapsim::config {
namespace {

struct Split {
  double value;
  std::string suffix;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits "1.5 GiB" into (1.5, "GiB"). Rejects NaN/inf and empty numbers.
std::optional<Split> split_number(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr == text.data() || !std::isfinite(value)) return std::nullopt;
  std::string_view rest = trim(std::string_view(ptr, text.data() + text.size() - ptr));
  return Split{value, std::string(rest)};
}

std::optional<double> scale_of(const std::string& s, bool binary_allowed) {
  if (s.empty()) return 1.0;
  if (s == "K" || s == "k") return 1e3;
  if (s == "M") return 1e6;
  if (s == "G") return 1e9;
  if (s == "T") return 1e12;
  if (s == "P") return 1e15;
  if (binary_allowed) {
    if (s == "Ki") return 1024.0;
    if (s == "Mi") return 1024.0 * 1024;
    if (s == "Gi") return 1024.0 * 1024 * 1024;
    if (s == "Ti") return 1024.0 * 1024 * 1024 * 1024;
  }
  return std::nullopt;
}

// Strips a trailing unit word from suffix; returns the prefix part or nullopt.
std::optional<std::string> strip(const std::string& suffix, std::string_view unit) {
  if (suffix.size() < unit.size()) return std::nullopt;
  if (suffix.compare(suffix.size() - unit.size(), unit.size(), unit) != 0) return std::nullopt;
  return suffix.substr(0, suffix.size() - unit.size());
}

}  // namespace

std::optional<std::uint64_t> parse_bytes(std::string_view text) {
  auto split = split_number(text);
  if (!split || split->value < 0) return std::nullopt;
  std::string suffix = split->suffix;
  std::optional<double> scale;
  if (suffix.empty()) {
    scale = 1.0;
  } else if (auto prefix = strip(suffix, "B")) {
    scale = scale_of(*prefix, true);
  }
  if (!scale) return std::nullopt;
  const double bytes = std::round(split->value * *scale);
  // 2^63: llround (and every signed byte count downstream) would overflow above it.
  if (!(bytes < 9223372036854775808.0)) return std::nullopt;
  return static_cast<std::uint64_t>(bytes);
}

std::optional<double> parse_bandwidth_Bps(std::string_view text) {
  auto split = split_number(text);
  if (!split || split->value < 0) return std::nullopt;
  const std::string& s = split->suffix;
  if (s.empty()) return split->value;
  struct Form {
    std::string_view unit;
    double factor;
  };
  // Longest unit first so "GB/s" is not read as "G" + "B/s" wrongly; both work anyway.
  const Form forms[] = {{"Bps", 1.0}, {"B/s", 1.0}, {"bps", 0.125}, {"b/s", 0.125}};
  for (const auto& form : forms) {
    if (auto prefix = strip(s, form.unit)) {
      if (auto scale = scale_of(*prefix, true)) return split->value * *scale * form.factor;
    }
  }
  return std::nullopt;
}

std::optional<double> parse_duration_s(std::string_view text) {
  auto split = split_number(text);
  if (!split || split->value < 0) return std::nullopt;
  const std::string& s = split->suffix;
  if (s.empty() || s == "s") return split->value;
  if (s == "ms") return split->value * 1e-3;
  if (s == "us" || s == "\xC2\xB5s") return split->value * 1e-6;
  if (s == "ns") return split->value * 1e-9;
  return std::nullopt;
}

std::optional<double> parse_flops_per_s(std::string_view text) {
  auto split = split_number(text);
  if (!split || split->value < 0) return std::nullopt;
  std::string s = split->suffix;
  if (s.empty()) return split->value;
  for (std::string_view unit : {"FLOPS", "flops", "FLOP/s", "flop/s"}) {
    if (auto prefix = strip(s, unit)) {
      if (auto scale = scale_of(*prefix, false)) return split->value * *scale;
    }
  }
  return std::nullopt;
}

std::optional<double> parse_power_W(std::string_view text) {
  auto split = split_number(text);
  if (!split || split->value < 0) return std::nullopt;
  const std::string& s = split->suffix;
  if (s.empty() || s == "W") return split->value;
  if (s == "kW") return split->value * 1e3;
  if (s == "MW") return split->value * 1e6;
  return std::nullopt;
}

std::string format_bytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", v, units[u]);
}

std::string format_duration(double seconds) {
  double a = std::fabs(seconds);
  if (a >= 1.0) return fmt::format("{:.3f} s", seconds);
  if (a >= 1e-3) return fmt::format("{:.3f} ms", seconds * 1e3);
  if (a >= 1e-6) return fmt::format("{:.2f} us", seconds * 1e6);
  return fmt::format("{:.1f} ns", seconds * 1e9);
}

std::string format_bandwidth(double bytes_per_s) {
  if (bytes_per_s >= 1e12) return fmt::format("{:.2f} TB/s", bytes_per_s / 1e12);
  if (bytes_per_s >= 1e9) return fmt::format("{:.2f} GB/s", bytes_per_s / 1e9);
  if (bytes_per_s >= 1e6) return fmt::format("{:.2f} MB/s", bytes_per_s / 1e6);
  return fmt::format("{:.0f} B/s", bytes_per_s);
}

}  // namespace overlapsim::config
