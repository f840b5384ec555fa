// `overlapsim fit DATA_DIR --out PROFILE.yaml`: fits a profile from a calibration data
// directory (calibration/fit.hpp). Deterministic, CPU-only; the profile is written
// atomically and only after it loaded back through the profile loader.
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "app/commands.hpp"
#include "calibration/fit.hpp"
#include "calibration/manifest.hpp"
#include "config/atomic_file.hpp"
#include "config/error.hpp"

namespace overlapsim::app {
namespace {

struct FitOptionsCli {
  std::string data_dir;
  std::string out;
  std::string base;
  bool write_heldout = false;
  bool quiet = false;
};

int run_fit(const FitOptionsCli& o) {
  if (o.out.empty()) throw config::ConfigError("--out: missing (expected a profile YAML path)");
  config::check_writable(o.out, "--out");
  if (o.write_heldout) {
    const calibration::Manifest m = calibration::load_manifest(o.data_dir);
    if (m.heldout.empty())
      throw config::ConfigError(fmt::format(
          "--write-heldout: {} names no heldout file (expected heldout: heldout.csv)", m.file));
    const std::string csv = calibration::make_heldout_csv(o.data_dir);
    const std::string path = (std::filesystem::path(o.data_dir) / m.heldout).string();
    config::write_file_atomic(path, csv);
    if (!o.quiet) fmt::print(stderr, "fit: wrote {}\n", path);
  }
  calibration::FitOptions options;
  options.base_profile = o.base;
  const calibration::FitResult r = calibration::fit_profile(o.data_dir, options);
  config::write_file_atomic(o.out, r.yaml);
  if (!o.quiet) {
    for (const auto& n : r.notes) fmt::print(stderr, "fit: {}\n", n);
    fmt::print(stderr, "fit: wrote {} (base {})\n", o.out, r.base_profile);
  }
  return kExitOk;
}

}  // namespace

void add_fit_command(CLI::App& app, Runner& selected) {
  auto opts = std::make_shared<FitOptionsCli>();
  auto* sub = app.add_subcommand("fit", "fit a device profile from calibration measurements");
  sub->add_option("data_dir", opts->data_dir, "calibration data directory (manifest.yaml + CSVs)")
      ->required();
  sub->add_option("--out", opts->out, "profile YAML to write")->required();
  sub->add_option("--base", opts->base,
                  "profile whose unmeasured numbers (peaks, attention, ...) are carried over "
                  "(default: the datasheet profile of the manifest's GPU)");
  sub->add_flag(
      "--write-heldout", opts->write_heldout,
      "first write the manifest's heldout file by the split rule (calibration/split.hpp)");
  sub->add_flag("--quiet", opts->quiet, "print nothing on success");
  sub->callback([opts, &selected] { selected = [opts] { return run_fit(*opts); }; });
}

}  // namespace overlapsim::app
