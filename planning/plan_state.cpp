#include "planning/plan_state.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <nlohmann/json.hpp>

#include "config/atomic_file.hpp"
#include "config/error.hpp"

namespace overlapsim::planning {

using nlohmann::ordered_json;

std::string to_state_line(const SimulatedPoint& p) {
  ordered_json runs = ordered_json::array();
  for (const PlanRun& r : p.runs)
    runs.push_back({{"design", r.design},
                    {"step_time_s", r.step_time_s},
                    {"band_low_s", r.band_low_s},
                    {"band_high_s", r.band_high_s},
                    {"compute_s", r.compute_s},
                    {"exposed_comm_s", r.exposed_comm_s},
                    {"bubble_s", r.bubble_s},
                    {"mfu", r.mfu}});
  ordered_json j = {{"key", p.key}, {"tokens_per_step", p.tokens_per_step}, {"runs", runs}};
  return j.dump();
}

std::optional<SimulatedPoint> from_state_line(const std::string& line) {
  try {
    const auto j = ordered_json::parse(line);
    SimulatedPoint p;
    p.key = j.at("key").get<std::string>();
    p.tokens_per_step = j.at("tokens_per_step").get<double>();
    for (const auto& r : j.at("runs")) {
      PlanRun run;
      run.design = r.at("design").get<std::string>();
      run.step_time_s = r.at("step_time_s").get<double>();
      run.band_low_s = r.at("band_low_s").get<double>();
      run.band_high_s = r.at("band_high_s").get<double>();
      run.compute_s = r.at("compute_s").get<double>();
      run.exposed_comm_s = r.at("exposed_comm_s").get<double>();
      run.bubble_s = r.at("bubble_s").get<double>();
      run.mfu = r.at("mfu").get<double>();
      p.runs.push_back(std::move(run));
    }
    return p;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

std::string fingerprint(const std::string& text) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

PlanState::PlanState(const std::string& path, const std::string& fp, bool resume) : path_(path) {
  const std::string header = ordered_json{{"fingerprint", fp}}.dump();
  bool keep = false;
  if (resume) {
    std::ifstream in(path);
    std::string line;
    if (in && std::getline(in, line)) {
      if (line != header)
        throw config::ConfigError(fmt::format(
            "--resume: {}: written for other inputs (expected the same model, clusters, "
            "profiles and designs as the interrupted run; drop --resume to start afresh)",
            path));
      keep = true;
      while (std::getline(in, line))
        if (auto p = from_state_line(line)) finished_[p->key] = std::move(*p);
    }
  }
  // Rewrite the good lines (atomically), so a torn last line does not glue onto the next
  // append.
  std::string text = header + '\n';
  if (keep)
    for (const auto& [key, p] : finished_) text += to_state_line(p) + '\n';
  config::write_file_atomic(path, text);
  out_.open(path, std::ios::app);
  if (!out_) throw std::runtime_error(fmt::format("{}: cannot open for appending", path));
}

const SimulatedPoint* PlanState::find(const std::string& key) const {
  auto it = finished_.find(key);
  return it == finished_.end() ? nullptr : &it->second;
}

void PlanState::append(const SimulatedPoint& p) {
  std::lock_guard<std::mutex> lock(mutex_);
  out_ << to_state_line(p) << '\n';
  out_.flush();
}

}  // namespace overlapsim::planning
