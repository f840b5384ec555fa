#include "calibration/fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "calibration/fit_copy_engine.hpp"
#include "sim/profile/profile_load.hpp"
#include "calibration/profile_yaml.hpp"
#include "calibration/split.hpp"
#include "config/error.hpp"

namespace overlapsim::calibration {
namespace {

namespace fs = std::filesystem;

std::string strip_slash(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// The datasheet profile for the manifest's GPU when --base is not given.
std::string default_base(const Manifest& m) {
  for (const char* model : {"H200", "H100", "A100"})
    if (m.gpu.find(model) != std::string::npos) {
      std::string name = model;
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      return "calibration/profiles/datasheet-" + name + ".yaml";
    }
  throw config::ConfigError(fmt::format(
      "{}: gpu: no shipped base profile for '{}' (expected --base PROFILE with its peak rates)",
      m.file, m.gpu));
}

// Every word of the measured GPU's name (but the vendor) must appear in the base
// profile's device name: H200 data is not fitted onto an H100 datasheet.
void check_same_gpu(const Manifest& m, const sim::Profile& base) {
  std::istringstream words(m.gpu);
  std::string w;
  while (words >> w) {
    if (w == "NVIDIA") continue;
    if (base.device.name.find(w) == std::string::npos)
      throw config::ConfigError(fmt::format(
          "{}: device.name '{}' is not the measured GPU '{}' of {} (expected the base profile "
          "of the same GPU)",
          base.path, base.device.name, m.gpu, m.file));
  }
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double relative_rms(const std::vector<double>& predicted, const std::vector<double>& measured) {
  if (measured.empty()) return 0;
  double s = 0;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    const double r = (predicted[i] - measured[i]) / measured[i];
    s += r * r;
  }
  return std::sqrt(s / static_cast<double>(measured.size()));
}

double geometric_mean(const std::vector<double>& values) {
  double s = 0;
  for (double v : values) s += std::log(v);
  return std::exp(s / static_cast<double>(values.size()));
}

double rounded(double v, int digits) { return std::stod(fmt::format("{:.{}g}", v, digits)); }

sim::Sourced measured_value(double value, std::string citation, double fit_error) {
  sim::Sourced s;
  s.value = value;
  s.source.kind = sim::SourceKind::Measured;
  s.source.citation = std::move(citation);
  s.source.fit_error = std::stod(fmt::format("{:.4g}", fit_error));
  return s;
}

std::string cite_rows(const std::string& label, const std::vector<const Measurement*>& rows) {
  std::map<std::string, std::set<int>> lines;
  for (const Measurement* r : rows) lines[r->file].insert(r->line);
  std::string out = label + ": ";
  bool first_file = true;
  for (const auto& [file, set] : lines) {
    if (!first_file) out += "; ";
    first_file = false;
    out += file + ":";
    std::vector<int> v(set.begin(), set.end());
    for (std::size_t i = 0; i < v.size();) {
      std::size_t j = i;
      while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
      if (i) out += ',';
      out += j > i ? fmt::format("{}-{}", v[i], v[j]) : std::to_string(v[i]);
      i = j + 1;
    }
  }
  return out;
}

std::vector<Measurement> load_all_rows(const Manifest& manifest) {
  std::vector<Measurement> all;
  for (const ManifestFile& f : manifest.files) {
    const fs::path path = fs::path(manifest.dir) / f.path;
    if (!fs::exists(path))
      throw config::ConfigError(
          fmt::format("{}: files: '{}' does not exist (expected a CSV beside manifest.yaml)",
                      manifest.file, f.path));
    for (Measurement r : read_measurements(path.string())) {
      const std::string at = fmt::format("{}:{}:1", path.string(), r.line);
      if (r.gpu != manifest.gpu)
        throw config::ConfigError(fmt::format(
            "{}: gpu '{}' is not the manifest's '{}' ({}; expected rows measured on the GPU "
            "manifest.yaml names)",
            at, r.gpu, manifest.gpu, manifest.file));
      if (r.world != f.gpus)
        throw config::ConfigError(fmt::format(
            "{}: world {} but manifest.yaml says {} GPU(s) for {} (expected world = gpus)", at,
            r.world, f.gpus, f.path));
      r.file = f.path;
      all.push_back(std::move(r));
    }
  }
  return all;
}

std::string make_heldout_csv(const std::string& data_dir) {
  const Manifest m = load_manifest(data_dir);
  const auto rows = load_all_rows(m);
  return format_heldout_csv(rows, heldout_keys(rows));
}

FitData load_fit_data(const std::string& data_dir) {
  FitData d;
  d.manifest = load_manifest(data_dir);
  d.label = strip_slash(data_dir);
  std::set<std::string> held;
  if (!d.manifest.heldout.empty()) {
    const fs::path path = fs::path(data_dir) / d.manifest.heldout;
    if (fs::exists(path))
      for (const auto& r : read_measurements(path.string())) held.insert(split_key(r));
  }
  for (Measurement& r : load_all_rows(d.manifest)) {
    if (r.wrong > 0) {
      d.excluded.push_back(fmt::format("{}: wrong = {} (incorrect results)", r.where(), r.wrong));
      continue;
    }
    if (held.count(split_key(r)) && !split_group(r).empty()) {
      d.heldout_rows.push_back(std::move(r));
      continue;
    }
    if (r.time_s > 2 * r.time_min_s) {
      d.excluded.push_back(
          fmt::format("{}: median {:.2f} us > 2 x its minimum {:.2f} us (unstable)", r.where(),
                      r.time_s * 1e6, r.time_min_s * 1e6));
      continue;
    }
    d.rows.push_back(std::move(r));
  }
  return d;
}

// Base curves of an (op, algorithm, scope) at rank counts the fit measured none of keep
// their numbers and sources, so one profile can hold every GPU count calibrated.
void carry_other_rank_curves(const std::vector<sim::CollectiveCurve>& base_curves,
                             const std::string& carried, FitOutput& out) {
  std::vector<sim::CollectiveCurve> kept;
  for (const auto& b : base_curves) {
    bool measured = false;
    for (const auto& c : out.profile.collectives.curves)
      measured = measured ||
                 (c.op == b.op && c.algo == b.algo && c.scope == b.scope && c.ranks == b.ranks);
    if (measured || b.ranks == 0) continue;
    kept.push_back(b);
    kept.back().source.citation += carried;
    if (kept.back().in_compute_loop_factor)
      kept.back().in_compute_loop_factor->source.citation += carried;
  }
  for (auto& k : kept) out.profile.collectives.curves.push_back(std::move(k));
  if (!kept.empty())
    out.notes.push_back(
        fmt::format("collectives: {} curve(s) at other rank counts{}", kept.size(), carried));
}

FitResult fit_profile(const std::string& data_dir, const FitOptions& options) {
  FitData data = load_fit_data(data_dir);
  FitResult result;
  result.base_profile =
      options.base_profile.empty() ? default_base(data.manifest) : options.base_profile;
  const sim::Profile base = sim::load_profile(result.base_profile);
  check_same_gpu(data.manifest, base);

  sim::Profile& p = result.profile;
  p = base;
  p.name = "";
  p.path = "";
  const Manifest& m = data.manifest;
  p.device.driver = m.driver;
  p.device.cuda = m.cuda;
  p.device.nccl = m.nccl;
  p.device.date = m.date;
  p.device.host = m.host;
  // The measurements replace the base's curves; a base curve at a communicator size this
  // data never measured (a 4-GPU profile as the base of a 2-GPU fit) is carried below.
  const std::vector<sim::CollectiveCurve> base_curves = p.collectives.curves;
  p.collectives.curves.clear();
  p.measurements = data.label;

  // Carried numbers keep their source; the citation says they were carried.
  const std::string carried = fmt::format(" [carried from {}]", result.base_profile);
  for (auto& [prec, s] : p.compute.peak_flops_per_s) s.source.citation += carried;
  for (sim::Sourced* s : {&p.compute.memory_bandwidth_Bps, &p.compute.memory_capacity_bytes,
                          &p.compute.launch_overhead_s})
    s->source.citation += carried;
  if (p.compute.idle_clock_boost) p.compute.idle_clock_boost->source.citation += carried;
  if (p.compute.fp8_block_scaling_time_factor)
    p.compute.fp8_block_scaling_time_factor->source.citation += carried;
  if (p.compute.concurrent_comm_slowdown)
    p.compute.concurrent_comm_slowdown->source.citation += carried;
  for (const sim::KernelTimeCurveKey& k : sim::kKernelTimeCurves)
    if (!(p.compute.*k.curve).empty()) (p.compute.*k.curve).source.citation += carried;
  for (auto& [prec, c] : p.compute.gemm_efficiency) c.source.citation += carried;
  for (auto* tables : {&p.compute.gemm_tables, &p.compute.own_gemm_tables})
    for (auto& [prec, t] : *tables) t.source.citation += carried;
  if (p.compute.attention_table) p.compute.attention_table->source.citation += carried;
  for (sim::LogCurve* c :
       {&p.compute.attention_forward_efficiency, &p.compute.attention_backward_efficiency,
        &p.compute.memory_efficiency, &p.compute.gemv_efficiency, &p.compute.embedding_efficiency})
    if (!c->empty()) c->source.citation += carried;
  for (auto& [design, params] : p.designs.by_design)
    for (auto& [key, s] : params) s.source.citation += carried;

  std::map<std::string, std::string> comments;
  FitOutput out{p, comments, result.notes};
  fit_compute(data, out);
  fit_collectives(data, out);
  fit_idle_clock_boost(data, out);
  fit_concurrent_comm_slowdown(data, out);
  fit_own_gemm_tables(data, out);
  anchor_carried_gemm_tables(data, base, out);
  fit_designs(data, out);
  fit_copy_engine(data, out);
  carry_other_rank_curves(base_curves, carried, out);

  ProfileYamlOptions yo;
  yo.kind = "measured";
  yo.description =
      fmt::format("{} x {} calibrated by overlapsim fit from {}", m.gpus, m.gpu, data.label);
  yo.device_source = {sim::SourceKind::Measured,
                      fmt::format("overlap-bench gpu column and manifest.yaml of {}; SM count "
                                  "carried from {}",
                                  data.label, result.base_profile),
                      -1};
  std::string header = fmt::format(
      "Profile fitted by `overlapsim fit {} --out ...` (calibration/fit.hpp; formulas in\n"
      "docs/calibration.md). Do not edit by hand: rerun the fit.\n"
      "Measured on {} x {} ({}), driver {}, CUDA {}, NCCL {}, {}.\n"
      "Data: {} rows fitted, {} held out for `overlapsim validate` ({}), {} left out:\n",
      data.label, m.gpus, m.gpu, m.host, m.driver, m.cuda, m.nccl, m.date, data.rows.size(),
      data.heldout_rows.size(), m.heldout.empty() ? "no split" : m.heldout, data.excluded.size());
  for (const auto& e : data.excluded) header += "  " + e + "\n";
  const bool interference_measured =
      std::any_of(data.rows.begin(), data.rows.end(),
                  [](const Measurement& r) { return r.op == "interference"; });
  header += fmt::format(
      "Not measured here, so carried from {} with their own sources: peak rates,\n"
      "HBM bandwidth and size, launch overhead, attention and fp8/fp16 curves. Not known\n"
      "from this data: inter-node links (the cluster YAML supplies them, cited), other GPU\n"
      "counts than measured.{}",
      result.base_profile,
      interference_measured
          ? "\nInterference rows (a GEMM beside NCCL) give compute.concurrent_comm_slowdown and,\n"
            "over enough GEMM shapes, compute.concurrent_comm_gemm_slowdown (docs/calibration.md)."
          : "");
  yo.header = header;
  yo.comments = comments;
  result.yaml = format_profile_yaml(p, yo);
  // The written YAML is the contract: what it loads back to is the result.
  result.profile = sim::load_profile_string(result.yaml, "fitted");
  return result;
}

}  // namespace overlapsim::calibration
