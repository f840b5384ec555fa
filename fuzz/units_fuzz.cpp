// The unit parsers (config/units.hpp) on one text, and the formatters on what they accept.
// They return nullopt for text not of their form; any crash, UB or exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config/units.hpp"
#include "fuzz/fuzz_contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace config = overlapsim::config;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    if (const auto bytes = config::parse_bytes(text)) config::format_bytes(*bytes);
    if (const auto bw = config::parse_bandwidth_Bps(text)) config::format_bandwidth(*bw);
    if (const auto s = config::parse_duration_s(text)) config::format_duration(*s);
    config::parse_flops_per_s(text);
    config::parse_power_W(text);
  } catch (const std::exception& e) {
    overlapsim::fuzz::finding("a unit parser threw (expected nullopt)", e.what());
  }
  return 0;
}
