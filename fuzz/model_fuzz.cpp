// Model YAML (workloads/model.hpp): load and validate, then resolve for a 64-GPU cluster of
// 8-GPU nodes, the step every simulate and plan run takes next.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_contract.hpp"
#include "workloads/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string file = "fuzz-model.yaml";
  overlapsim::fuzz::expect_contract(file, [&] {
    const auto spec = overlapsim::workloads::load_model_string(text, file);
    overlapsim::workloads::resolve_for_world(spec, 64, 8);
  });
  return 0;
}
