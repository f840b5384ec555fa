#pragma once
// Human units in YAML and on the command line. Every parser accepts a bare number
// (taken in the base unit: bytes, bytes/s, seconds) or a number with a suffix.
//   bytes:     B, KB MB GB TB (10^3), KiB MiB GiB TiB (2^10)
//   bandwidth: Bps KBps MBps GBps TBps, B/s GB/s ... (bytes/s); bps Kbps Mbps Gbps Tbps, Gb/s (bits/s)
//   duration:  s, ms, us, ns
//   rate:      flops, Kflops ... Pflops, TFLOPS (floating-point operations per second)
//   power:     W, kW, MW (watts)
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace overlapsim::config {

// Each returns nullopt when the text is not of the form; callers turn that into a
// ConfigError naming the key and the expected form (kExpected*).
std::optional<std::uint64_t> parse_bytes(std::string_view text);
std::optional<double> parse_bandwidth_Bps(std::string_view text);
std::optional<double> parse_duration_s(std::string_view text);
std::optional<double> parse_flops_per_s(std::string_view text);
std::optional<double> parse_power_W(std::string_view text);

// Sizes shown in GiB divide by this.
inline constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

inline constexpr const char* kExpectedBytes = "a size such as 4096, \"64KiB\", \"1.5GiB\" or \"2GB\"";
inline constexpr const char* kExpectedBandwidth =
    "a bandwidth such as \"400Gbps\", \"50GBps\" or \"450GB/s\"";
inline constexpr const char* kExpectedDuration = "a duration such as \"25us\", \"1.5ms\" or 2e-6";
inline constexpr const char* kExpectedFlops = "a rate such as \"989TFLOPS\" or 9.89e14";
inline constexpr const char* kExpectedPower = "a power such as \"700W\", \"0.7kW\" or 700";

// Formatting for tables and reports: "1.50 GiB", "400 Gbps"-free SI forms, "25.0 us".
std::string format_bytes(std::uint64_t bytes);
std::string format_duration(double seconds);
std::string format_bandwidth(double bytes_per_s);

}  // namespace overlapsim::config
