#include "planning/plan_state.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
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

namespace {

// Reads a state file's finished points into `into`; false where there is no file.
// config::ConfigError for a file written for other inputs.
bool read_state(const std::string& path, const std::string& header,
                std::map<std::string, SimulatedPoint>& into) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return false;
  if (line != header)
    throw config::ConfigError(
        fmt::format("--resume: {}: written for other inputs (expected the same model, clusters, "
                    "profiles and designs as the interrupted run; drop --resume to start afresh)",
                    path));
  while (std::getline(in, line))
    if (auto p = from_state_line(line)) into[p->key] = std::move(*p);
  return true;
}

// The files other ranks of an earlier run appended to: `path` + ".rank<r>".
std::vector<std::string> rank_files(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string prefix = p.filename().string() + ".rank";
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

PlanState::PlanState(const std::string& path, const std::string& fp, bool resume,
                     const Ranks& ranks)
    : path_(ranks.root() ? path : fmt::format("{}.rank{}", path, ranks.rank())) {
  const std::string header = ordered_json{{"fingerprint", fp}}.dump();
  std::string failure;
  if (ranks.root()) {
    try {
      // Rewrite the good lines (atomically), so a torn last line does not glue onto the next
      // append; the other ranks' files are folded in and removed.
      bool keep = resume && read_state(path, header, finished_);
      const std::vector<std::string> others = rank_files(path);
      if (resume)
        for (const auto& f : others) keep = read_state(f, header, finished_) || keep;
      std::string text = header + '\n';
      if (keep)
        for (const auto& [key, p] : finished_) text += to_state_line(p) + '\n';
      config::write_file_atomic(path, text);
      for (const auto& f : others) std::filesystem::remove(f);
    } catch (const std::exception& e) {
      failure = e.what();
      if (ranks.size() == 1) throw;
    }
  }
  // Every rank waits for rank 0's merge and fails with it.
  const std::string root_failure = ranks.all_gather(failure).front();
  if (!root_failure.empty()) throw config::ConfigError(root_failure);
  if (!ranks.root()) {
    if (resume) read_state(path, header, finished_);
    config::write_file_atomic(path_, header + '\n');
  }
  out_.open(path_, std::ios::app);
  if (!out_) throw std::runtime_error(fmt::format("{}: cannot open for appending", path_));
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
