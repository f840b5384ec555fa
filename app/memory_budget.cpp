#include "app/memory_budget.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include "config/error.hpp"
#include "config/units.hpp"

namespace overlapsim::app {

void add_max_memory_option(CLI::App* sub, std::string& text) {
  sub->add_option("--max-memory", text,
                  "refuse a run whose estimated peak memory is above SIZE (e.g. 4GiB; default 80% "
                  "of physical memory)");
}

void check_memory_budget(const sim::RunSize& size, const std::string& text,
                         const std::string& what) {
  std::uint64_t limit_bytes = sim::default_memory_limit_bytes();
  std::string limit_from = "80% of physical memory";
  if (!text.empty()) {
    const auto v = config::parse_bytes(text);
    if (!v || *v == 0)
      throw config::ConfigError(fmt::format("--max-memory: '{}' is not a size (expected {} > 0)",
                                            text, config::kExpectedBytes));
    limit_bytes = *v;
    limit_from = "--max-memory";
  }
  const auto reason = sim::over_memory_budget(sim::estimate_run_memory(size), limit_bytes);
  if (reason)
    throw config::ConfigError(
        fmt::format("{}: {} ({}) (expected a smaller run, or --max-memory SIZE above the estimate)",
                    what, *reason, limit_from));
}

std::uint64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace overlapsim::app
