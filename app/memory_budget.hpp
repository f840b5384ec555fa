#pragma once
// `--max-memory SIZE` for commands that simulate: the run's peak memory is estimated from its
// counts before it starts (sim/scenario/run_budget.hpp), and a run over the limit is refused
// with one line instead of exhausting the machine minutes later.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "sim/scenario/run_budget.hpp"

namespace overlapsim::app {

// Adds --max-memory to `sub`, stored in `text` (empty: 80% of physical memory).
void add_max_memory_option(CLI::App* sub, std::string& text);

// Throws config::ConfigError (exit 2) when `size` is estimated over the limit `text` names
// (or the default); `what` names the run ("workloads/models/x.yaml on cluster.yaml").
void check_memory_budget(const sim::RunSize& size, const std::string& text,
                         const std::string& what);

// This process's peak resident set so far, bytes (what a run reports beside its estimate).
std::uint64_t peak_rss_bytes();

}  // namespace overlapsim::app
