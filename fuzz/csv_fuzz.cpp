// Measurement CSV: the RFC 4180 reader (calibration/csv.hpp) and then the typed rows
// (calibration/measurement.hpp), which read from a path, so the input goes through one
// temporary file per process.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "calibration/csv.hpp"
#include "calibration/measurement.hpp"
#include "fuzz/fuzz_contract.hpp"

namespace {

const std::string& scratch_path() {
  static const std::string path =
      (std::filesystem::temp_directory_path() /
       ("overlapsim-csv-fuzz." + std::to_string(::getpid()) + ".csv"))
          .string();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string file = "fuzz.csv";
  overlapsim::fuzz::expect_contract(file,
                                    [&] { overlapsim::calibration::parse_csv(text, file); });
  const std::string& path = scratch_path();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  overlapsim::fuzz::expect_contract(path,
                                    [&] { overlapsim::calibration::read_measurements(path); });
  std::filesystem::remove(path);
  return 0;
}
