// `overlapsim fit-shaped --gpu h100|h200 --profile P --out O`: fits the shaped design's
// parameters from the shaped runner's measured grids (calibration/fit_shaped.hpp) and writes
// P with its designs.shaped block replaced by them, with their provenance, to O
// (atomically; O may be P). Deterministic, CPU-only.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "app/profile_text.hpp"
#include "calibration/fit_shaped.hpp"
#include "config/atomic_file.hpp"
#include "config/error.hpp"
#include "sim/profile/profile_load.hpp"

namespace overlapsim::app {
namespace {

struct FitShapedCli {
  std::string gpu;
  std::vector<std::string> surfaces;
  std::string profile;
  std::string timing;
  std::string out;
  bool quiet = false;
};

int run_fit_shaped(const FitShapedCli& o) {
  config::check_writable(o.out, "--out");
  std::vector<std::string> files = o.surfaces;
  if (files.empty()) {
    if (o.gpu == "h100")
      files = calibration::shaped_surface_files_h100();
    else if (o.gpu == "h200")
      files = calibration::shaped_surface_files_h200();
    else
      throw config::ConfigError(fmt::format(
          "--gpu: '{}' (expected h100 or h200, whose shaped runs the repository holds, or "
          "--surfaces FILES)",
          o.gpu));
  }
  const std::string text = read_profile_text(o.profile);
  const sim::Profile base = calibration::shaped_timing_profile(
      sim::load_profile(o.timing.empty() ? o.profile : o.timing));
  const calibration::ShapedFit fit =
      calibration::fit_shaped(calibration::load_shaped_points(".", files), base);
  config::write_file_atomic(o.out, calibration::with_shaped_designs(text, o.profile, fit));
  if (!o.quiet)
    fmt::print(stderr, "fit-shaped: {} pairs at S {}, {} chunks, relative RMS {:.2f}%; wrote {}\n",
               fit.fitted.size(), fit.comm_sms, fit.chunks, 100 * fit.relative_rms, o.out);
  return kExitOk;
}

}  // namespace

void add_fit_shaped_command(CLI::App& app, Runner& selected) {
  auto opts = std::make_shared<FitShapedCli>();
  auto* sub = app.add_subcommand(
      "fit-shaped", "fit the shaped design's parameters from the shaped runner's grids");
  sub->add_option("--gpu", opts->gpu, "h100 or h200: the repository's shaped runs of that GPU");
  sub->add_option("--surfaces", opts->surfaces,
                  "surface.csv files of the shaped runner, relative to the working directory "
                  "(instead of --gpu)");
  sub->add_option("--profile", opts->profile, "profile whose designs.shaped block is replaced")
      ->required();
  sub->add_option("--timing", opts->timing,
                  "profile that times the replayed pairs (its collective curves; default "
                  "--profile)");
  sub->add_option("--out", opts->out, "profile YAML to write (may be --profile)")->required();
  sub->add_flag("--quiet", opts->quiet, "print nothing on success");
  sub->callback([opts, &selected] { selected = [opts] { return run_fit_shaped(*opts); }; });
}

}  // namespace overlapsim::app
