#pragma once
// The output of `overlapsim simulate`: the breakdown table and the JSON of the CLI contract
// (docs/simulate.md), rendered from a scenario's inputs and result.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/scenario_inputs.hpp"

namespace overlapsim::app {

struct SimulateReport {
  const workloads::ScenarioInputs& inputs;
  const sim::ScenarioResult& result;
  const workloads::MemoryEstimate& memory;  // per GPU, of the resolved configuration
  std::vector<std::string> trace_files;  // per run, "" where none was written
  bool background_images = false;
  std::uint64_t peak_rss_bytes = 0;
  double wall_s = 0;  // the whole command: loading, generation and every design's run
};

std::string simulate_table(const SimulateReport& report);
std::string simulate_json(const SimulateReport& report);

}  // namespace overlapsim::app
