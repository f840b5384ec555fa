// Cluster YAML (workloads/cluster.hpp) from arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config_node.hpp"
#include "fuzz/fuzz_contract.hpp"
#include "workloads/cluster.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string file = "fuzz-cluster.yaml";
  overlapsim::fuzz::expect_contract(file, [&] {
    overlapsim::workloads::parse_cluster(overlapsim::config::ConfigNode::load_string(text, file));
  });
  return 0;
}
