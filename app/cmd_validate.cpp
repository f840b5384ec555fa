// `overlapsim validate --profile P --measurements HELDOUT.csv [--measurements MORE.csv ...]
// [--format table|json]`: predicts each measured row through the simulator and prints per-kind
// error statistics and the worst rows (calibration/validate.hpp). Several files are one set of
// rows: a profile whose GEMM precisions were measured by different suites is validated on all.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "app/output.hpp"
#include "app/profile_text.hpp"
#include "calibration/measurement.hpp"
#include "calibration/validate.hpp"
#include "calibration/validation_record.hpp"
#include "config/atomic_file.hpp"
#include "config/error.hpp"
#include "sim/profile/profile_load.hpp"
#include "workloads/cluster.hpp"

namespace overlapsim::app {
namespace {

struct ValidateOptions {
  std::string profile;
  std::vector<std::string> measurements;
  std::string cluster = "workloads/clusters/h200x2-nvlink.yaml";
  std::string format = "table";
  std::string output;
  int worst = 10;
  bool record = false;
};

int run_validate(const ValidateOptions& o) {
  if (o.format != "table" && o.format != "json")
    throw config::ConfigError(fmt::format("--format: '{}' (expected table or json)", o.format));
  if (o.worst < 0) throw config::ConfigError("--worst: negative (expected a count >= 0)");
  check_output(o.output, "--output");
  if (o.record) check_output(o.profile, "--record");
  const sim::Profile profile = sim::load_profile(o.profile);
  const auto rows = calibration::read_measurements(o.measurements);
  const workloads::ClusterSpec cluster = workloads::load_cluster(o.cluster);
  calibration::ValidationReport report = calibration::validate(profile, rows, cluster);
  report.measurements_path = fmt::format("{}", fmt::join(o.measurements, " + "));
  config::StagedFiles outputs;
  if (o.record) {
    // The section is committed with the profile: no machine paths in it.
    std::vector<std::string> paths = o.measurements;
    paths.push_back(o.cluster);
    paths.push_back(o.profile);
    for (const std::string& p : paths)
      if (std::filesystem::path(p).is_absolute())
        throw config::ConfigError(fmt::format(
            "--record: '{}' is an absolute path (expected one relative to the repository root)",
            p));
    outputs.add(o.profile, calibration::with_validation_section(read_profile_text(o.profile),
                                                                report, o.measurements, o.cluster));
  }
  const std::string text = o.format == "json"
                               ? calibration::format_validation_json(report, o.worst)
                               : calibration::format_validation_table(report, o.worst);
  // The recorded profile and the report land together or not at all.
  if (!o.output.empty()) outputs.add(o.output, text);
  outputs.commit();
  if (o.output.empty()) print_or_write(text, o.output);
  return kExitOk;
}

}  // namespace

void add_validate_command(CLI::App& app, Runner& selected) {
  auto opts = std::make_shared<ValidateOptions>();
  auto* sub = app.add_subcommand(
      "validate", "predict held-out measurements through the simulator and report the errors");
  sub->add_option("--profile", opts->profile, "profile YAML to validate")->required();
  sub->add_option("--measurements", opts->measurements,
                  "overlap-bench CSV (e.g. heldout.csv); repeat to validate on several")
      ->required()
      ->take_all();
  sub->add_option("--cluster", opts->cluster,
                  "cluster YAML of the measured machine (its GPUs host the communicators)")
      ->capture_default_str();
  sub->add_option("--format", opts->format, "table|json")->capture_default_str();
  sub->add_option("--worst", opts->worst, "worst rows to list")->capture_default_str();
  sub->add_option("--output", opts->output, "write the report here (atomically) instead of stdout");
  sub->add_flag("--record", opts->record,
                "write the held-out errors into the profile's validation section (projections "
                "size their uncertainty bands from it)");
  sub->callback([opts, &selected] { selected = [opts] { return run_validate(*opts); }; });
}

}  // namespace overlapsim::app
