// Measurement suite YAML (calibration/suite.hpp), what calibrate and overlap-bench read.
#include <cstddef>
#include <cstdint>
#include <string>

#include "calibration/suite.hpp"
#include "fuzz/fuzz_contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string file = "fuzz-suite.yaml";
  overlapsim::fuzz::expect_contract(file,
                                    [&] { overlapsim::calibration::parse_suite(text, file); });
  return 0;
}
