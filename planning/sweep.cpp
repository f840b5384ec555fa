#include "planning/sweep.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <optional>
#include <stdexcept>
#include <thread>

namespace overlapsim::planning {

void parallel_for(std::size_t n, int threads, const std::function<void(std::size_t)>& fn) {
  if (threads < 1) throw std::invalid_argument("parallel_for: threads must be >= 1");
  std::vector<std::exception_ptr> errors(n);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        fn(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const std::size_t workers = std::min<std::size_t>(static_cast<std::size_t>(threads), n);
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

std::vector<sim::ScenarioResult> run_sweep(const std::vector<sim::Scenario>& scenarios,
                                           const SweepOptions& options) {
  if (options.threads < 1) throw std::invalid_argument("run_sweep: threads must be >= 1");
  std::vector<std::optional<sim::ScenarioResult>> results(scenarios.size());
  parallel_for(scenarios.size(), options.threads,
               [&](std::size_t i) { results[i] = sim::run_scenario(scenarios[i]); });
  std::vector<sim::ScenarioResult> out;
  out.reserve(results.size());
  for (auto& r : results) out.push_back(std::move(*r));
  return out;
}

}  // namespace overlapsim::planning
