// `overlapsim validate-steps workloads/reference/ [--format table|json] [-o FILE]
//  [--max-error PCT]`: predicts each published reference run (workloads/reference_run.hpp)
// and prints predicted against published, the error and the uncertainty band.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "app/output.hpp"
#include "calibration/fit.hpp"
#include "config/error.hpp"
#include "config/units.hpp"
#include "workloads/reference_run.hpp"

namespace overlapsim::app {
namespace {

struct ValidateStepsOptions {
  std::string dir = "workloads/reference";
  std::string format = "table";
  std::string output;
  std::string max_error;  // empty: report only
  bool no_timing = false;
  bool exact = false;
  bool sample_by_periods = false;
};

std::string pct(double x) { return fmt::format("{:+.1f}%", 100 * x); }

std::string table(const std::vector<workloads::ReferenceOutcome>& outs, double med, double worst,
                  int within) {
  std::string t =
      fmt::format("{:<34} {:>6} {:>12} {:>12} {:>8} {:>23} {:>7}  {}\n", "run", "GPUs",
                  "published s", "predicted s", "error", "band s", "in band", "most uncertain");
  for (const auto& o : outs)
    t += fmt::format("{:<34} {:>6} {:>12.4g} {:>12.4g} {:>8} {:>23} {:>7}  {}\n", o.run.name,
                     o.gpus, o.run.published.step_time_s, o.predicted_s, pct(o.error),
                     fmt::format("{:.4g}-{:.4g}", o.band.low_s, o.band.high_s),
                     o.in_band() ? "yes" : "no", o.band.dominant);
  t += fmt::format("{} runs: median |error| {:.1f}%, max |error| {:.1f}%, within +-10%: {} of {}\n",
                   outs.size(), 100 * med, 100 * worst, within, outs.size());
  for (const auto& o : outs) {
    t += fmt::format("\n{}: {}\n  {}; {}; design {}\n  published: {} ({})\n  derivation: {}\n",
                     o.run.name, o.run.description, o.system, o.parallelism, o.run.design,
                     o.run.published.citation, o.run.published.source, o.run.published.derivation);
    if (!o.run.gaps.empty()) {
      std::string gaps = o.run.gaps;
      while (!gaps.empty() && (gaps.back() == '\n' || gaps.back() == ' ')) gaps.pop_back();
      t += fmt::format("  gaps: {}\n", gaps);
    }
  }
  return t;
}

std::string json(const std::vector<workloads::ReferenceOutcome>& outs, double med, double worst,
                 int within) {
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (const auto& o : outs)
    runs.push_back({{"name", o.run.name},
                    {"file", o.run.file},
                    {"system", o.system},
                    {"gpus", o.gpus},
                    {"parallelism", o.parallelism},
                    {"design", o.run.design},
                    {"published_step_time_s", o.run.published.step_time_s},
                    {"published_source", o.run.published.source},
                    {"citation", o.run.published.citation},
                    {"derivation", o.run.published.derivation},
                    {"predicted_step_time_s", o.predicted_s},
                    {"error", o.error},
                    {"band_low_s", o.band.low_s},
                    {"band_high_s", o.band.high_s},
                    {"in_band", o.in_band()},
                    {"most_uncertain", o.band.dominant},
                    {"sim_wall_s", o.sim_wall_s},
                    {"gaps", o.run.gaps}});
  nlohmann::ordered_json j;
  j["runs"] = std::move(runs);
  j["median_abs_error"] = med;
  j["max_abs_error"] = worst;
  j["within_10_percent"] = within;
  return j.dump(2) + "\n";
}

int run_validate_steps(const ValidateStepsOptions& o) {
  if (o.format != "table" && o.format != "json")
    throw config::ConfigError(fmt::format("--format: '{}' (expected table or json)", o.format));
  double bar = -1;
  if (!o.max_error.empty()) {
    std::string text = o.max_error;
    if (!text.empty() && text.back() == '%') text.pop_back();
    try {
      std::size_t used = 0;
      bar = std::stod(text, &used) / 100;
      if (used != text.size() || !(bar > 0)) bar = -1;
    } catch (const std::exception&) {
      bar = -1;
    }
    if (bar < 0)
      throw config::ConfigError(
          fmt::format("--max-error: '{}' (expected a percentage > 0 such as 10%)", o.max_error));
  }
  check_output(o.output, "--output");
  const auto runs = workloads::load_reference_runs(o.dir);
  std::vector<workloads::ReferenceOutcome> outs;
  std::vector<double> abs_errors;
  int within = 0;
  for (const auto& run : runs) {
    outs.push_back(workloads::predict_reference_run(run, o.no_timing,
                                                    o.exact ? workloads::Sampling::Whole
                                                    : o.sample_by_periods
                                                        ? workloads::Sampling::Periods
                                                        : workloads::Sampling::Runs));
    abs_errors.push_back(std::fabs(outs.back().error));
    if (abs_errors.back() <= 0.10) ++within;
  }
  const double med = calibration::median(abs_errors);
  const double worst = *std::max_element(abs_errors.begin(), abs_errors.end());
  print_or_write(
      o.format == "json" ? json(outs, med, worst, within) : table(outs, med, worst, within),
      o.output);
  return bar > 0 && worst > bar ? kExitFailure : kExitOk;
}

}  // namespace

void add_validate_steps_command(CLI::App& app, Runner& selected) {
  auto opts = std::make_shared<ValidateStepsOptions>();
  auto* sub = app.add_subcommand(
      "validate-steps",
      "predict published training runs (workloads/reference/) and report the errors");
  sub->add_option("dir", opts->dir, "folder of <name>/run.yaml reference runs")
      ->capture_default_str();
  sub->add_option("--format", opts->format, "table|json")->capture_default_str();
  sub->add_option("-o,--output", opts->output, "write the report to FILE (atomically)");
  sub->add_option("--max-error", opts->max_error,
                  "exit 1 when a run's |error| is above this percentage (e.g. 10%)");
  sub->add_flag("--no-timing", opts->no_timing, "report sim_wall_s as 0 (byte-identical output)");
  sub->add_flag("--exact", opts->exact,
                "simulate each run as simulate does (default: long steps from two short runs, "
                "extrapolated, and each send's background images aggregated)");
  sub->add_flag("--sample-by-periods", opts->sample_by_periods,
                "sampled steps: the first short run is the second less its last period where "
                "an interleaved pipeline, or none, is steady, as plan does (default: both "
                "short runs simulated)");
  sub->callback([opts, &selected] { selected = [opts] { return run_validate_steps(*opts); }; });
}

}  // namespace overlapsim::app
