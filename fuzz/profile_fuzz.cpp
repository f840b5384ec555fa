// Profile YAML (docs/profile-format.md, sim/profile/profile_load.hpp).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_contract.hpp"
#include "sim/profile/profile_load.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string file = "fuzz-profile";
  overlapsim::fuzz::expect_contract(file,
                                    [&] { overlapsim::sim::load_profile_string(text, file); });
  return 0;
}
