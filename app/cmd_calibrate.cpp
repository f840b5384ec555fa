// `overlapsim calibrate --out DIR [--suite FILE] [--gpus N] [--bench PATH]`: measures a
// calibration suite with overlap-bench on the local GPUs (calibration/calibrate.hpp).
// Exit 2 when there is no GPU or overlap-bench, or a resume would mix measurements.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "app/commands.hpp"
#include "calibration/calibrate.hpp"
#include "config/error.hpp"
#include "config/text.hpp"

namespace overlapsim::app {
namespace {

// overlap-bench beside this binary in a build tree (build/app/overlapsim ->
// build/kernels/bench/overlap-bench), else on PATH's usual name.
std::string default_bench() {
  char self[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    const std::filesystem::path exe(std::string(self, static_cast<std::size_t>(n)));
    const auto candidate = exe.parent_path().parent_path() / "kernels" / "bench" / "overlap-bench";
    if (std::filesystem::exists(candidate)) return candidate.string();
  }
  return "overlap-bench";
}

int run_calibrate(const calibration::CalibrateOptions& o) {
  if (o.out_dir.empty()) throw config::ConfigError("--out: missing (expected a directory)");
  try {
    const auto r = calibration::run_calibration(
        o, [](const std::string& line) { fmt::print(stderr, "{}\n", line); });
    if (o.dry_run)
      fmt::print(
          "suite {}: {} case(s), {} already measured in {}, ~{:.0f} s of device time "
          "estimated for the rest\n",
          o.suite_path, r.cases_total, r.cases_skipped, o.out_dir, r.estimate_s);
    return kExitOk;
  } catch (const calibration::CalibrateUnavailable& e) {
    fmt::print(stderr, "error: calibrate: {}\n", config::printable(e.what()));
    return kExitBadInput;
  }
}

}  // namespace

void add_calibrate_command(CLI::App& app, Runner& selected) {
  auto opts = std::make_shared<calibration::CalibrateOptions>();
  auto* sub = app.add_subcommand("calibrate", "measure a calibration suite on the local GPUs");
  sub->add_option("--out", opts->out_dir, "data directory (CSV + manifest.yaml); reruns resume")
      ->required();
  sub->add_option("--suite", opts->suite_path, "suite YAML")->capture_default_str();
  // 0 is the options' "the suite's", never a GPU count to pass.
  sub->add_option("--gpus", opts->gpus,
                  "GPUs (ranks) per overlap-bench call (default: the suite's)")
      ->check(CLI::Range(1, 1'000'000));
  sub->add_option("--bench", opts->bench, "overlap-bench binary (default: the build tree's)");
  sub->add_option("--case-timeout", opts->timeout_s, "seconds one overlap-bench call may take")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_flag("--dry-run", opts->dry_run,
                "print the cases left and their estimated device time; run nothing");
  sub->callback([opts, &selected] {
    selected = [opts] {
      calibration::CalibrateOptions o = *opts;
      if (o.bench.empty()) o.bench = default_bench();
      return run_calibrate(o);
    };
  });
}

}  // namespace overlapsim::app
