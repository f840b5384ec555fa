// Copy-engine stage of the fit (fit_copy_engine.hpp).
#include "calibration/fit_copy_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include "calibration/split.hpp"
#include "calibration/validate.hpp"
#include "workloads/cluster.hpp"

namespace overlapsim::calibration {
namespace {

namespace fs = std::filesystem;

bool is_copy_engine_pair(const Measurement& r) {
  return is_pair_op(r.op) && (r.design == "tilewise_ce" || r.design == "tilewise_copy_engine");
}

std::string collective_of_pair(const std::string& op) { return op.substr(op.find('+') + 1); }

// The machine validate() places the pairs on: one NVLink host with the rows' GPUs. The
// copy engines' copies run off the flow network, so its link rate enters no fitted number.
workloads::ClusterSpec fit_host(int gpus) {
  workloads::ClusterSpec c;
  c.name = "copy-engine-fit";
  c.gpus_per_node = gpus;
  c.intra_node.kind = workloads::IntraNodeKind::NvSwitch;
  c.intra_node.gpu_bandwidth_Bps = 450e9;
  c.intra_node.latency_s = 0.3e-6;
  c.intra_node.source = "not used by copy-engine pairs";
  return c;
}

void set_tilewise(sim::Profile& p, const std::string& key, double value) {
  p.designs.by_design["tilewise"][key].value = value;
}

// The relative RMS error of validate()'s predictions of `rows` under `profile`, or a
// negative number when it predicts none of them.
double pair_rms(const sim::Profile& profile, const std::vector<Measurement>& rows) {
  if (rows.empty()) return -1;
  int world = 2;
  for (const auto& r : rows) world = std::max(world, r.world);
  const ValidationReport rep = validate(profile, rows, fit_host(world));
  std::vector<double> predicted, measured;
  for (const auto& v : rep.rows) {
    predicted.push_back(v.predicted_s);
    measured.push_back(v.row->time_s);
  }
  return predicted.size() == rows.size() ? relative_rms(predicted, measured) : -1;
}

struct PairRows {
  std::vector<Measurement> rows;
  std::vector<std::string> accepted_wrong;  // "file:line (wrong w)"
};

// The fit's pair rows: not held out, stable, correct by copy_engine_row_usable.
PairRows copy_engine_pairs(const FitData& data, double tile_elems) {
  std::set<std::string> held;
  if (!data.manifest.heldout.empty()) {
    const fs::path path = fs::path(data.manifest.dir) / data.manifest.heldout;
    if (fs::exists(path))
      for (const auto& r : read_measurements(path.string())) held.insert(split_key(r));
  }
  PairRows out;
  for (Measurement& r : load_all_rows(data.manifest)) {
    if (!is_copy_engine_pair(r) || (held.count(split_key(r)) && !split_group(r).empty())) continue;
    if (r.time_s > 2 * r.time_min_s || !copy_engine_row_usable(r, tile_elems)) continue;
    if (r.wrong > 0) out.accepted_wrong.push_back(fmt::format("{} ({})", r.where(), r.wrong));
    out.rows.push_back(std::move(r));
  }
  return out;
}

struct ParamSpec {
  const char* key;
  double lo, hi;
  bool log_scale;
  std::function<bool(const Measurement&)> uses;
  const char* what;  // for the comment: what the rows pin down
};

}  // namespace

CopyLine fit_copy_line(const std::vector<std::pair<double, double>>& bytes_s) {
  std::set<double> sizes;
  for (const auto& [b, t] : bytes_s) sizes.insert(b);
  if (sizes.size() < 2)
    throw std::invalid_argument("fit_copy_line: needs copies of at least two sizes");
  // Weighted least squares in (latency, 1 / Bps): each row's equation divided by its time.
  double a11 = 0, a12 = 0, a22 = 0, b1 = 0, b2 = 0;
  for (const auto& [b, t] : bytes_s) {
    a11 += 1 / (t * t);
    a12 += b / (t * t);
    a22 += b * b / (t * t);
    b1 += 1 / t;
    b2 += b / t;
  }
  double latency = (b1 * a22 - b2 * a12) / (a11 * a22 - a12 * a12);
  double s_per_byte = (a11 * b2 - a12 * b1) / (a11 * a22 - a12 * a12);
  if (latency < 0) {  // through the origin instead
    latency = 0;
    s_per_byte = b2 / a22;
  }
  CopyLine line;
  line.latency_s = latency;
  line.Bps = 1 / s_per_byte;
  std::vector<double> predicted, measured;
  for (const auto& [b, t] : bytes_s) {
    predicted.push_back(latency + b * s_per_byte);
    measured.push_back(t);
  }
  line.rel_rms = relative_rms(predicted, measured);
  return line;
}

double minimise_1d(const std::function<double(double)>& f, double lo, double hi, bool log_scale,
                   int steps) {
  auto at = [&](double u) { return log_scale ? lo * std::pow(hi / lo, u) : lo + (hi - lo) * u; };
  double best_u = 0, best = f(at(0));
  for (int i = 1; i <= steps; ++i) {
    const double u = static_cast<double>(i) / steps, v = f(at(u));
    if (v < best) best = v, best_u = u;
  }
  // Golden section on the scan's bracket around its best point.
  double a = std::max(0.0, best_u - 1.0 / steps), b = std::min(1.0, best_u + 1.0 / steps);
  const double r = (std::sqrt(5.0) - 1) / 2;
  double c = b - r * (b - a), d = a + r * (b - a), fc = f(at(c)), fd = f(at(d));
  for (int i = 0; i < 40; ++i) {
    if (fc < fd) {
      b = d, d = c, fd = fc, c = b - r * (b - a), fc = f(at(c));
    } else {
      a = c, c = d, fc = fd, d = a + r * (b - a), fd = f(at(d));
    }
  }
  const double u = fc < fd ? c : d;
  return std::min(fc, fd) < best ? at(u) : at(best_u);
}

bool copy_engine_row_usable(const Measurement& row, double tile_elems) {
  if (row.wrong == 0) return true;
  return is_copy_engine_pair(row) && row.world > 2 &&
         static_cast<double>(row.wrong) < row.world * tile_elems;
}

void fit_copy_engine(const FitData& data, FitOutput& out) {
  sim::Profile& p = out.profile;
  auto param = [&](const char* key) { return p.designs.find("tilewise", key); };
  auto comment = [&](const std::string& key, const std::string& text) {
    out.comments["designs.tilewise." + key] = text;
  };

  // A line through the peer_copy rows of one design, into <prefix>_bandwidth_Bps and
  // <prefix>_latency_s. `to_every_peer`: a row's bytes went to each of its world - 1 peers
  // through the rank's links, so it moved (world - 1) x bytes: the simulator charges the
  // tail kernel latency + (n - 1) b / bandwidth, and rows of any world fit that one line.
  auto fit_line = [&](const char* design, const std::string& prefix, const char* what,
                      const char* rows_name, const char* how, bool to_every_peer) {
    std::vector<const Measurement*> copies;
    std::vector<std::pair<double, double>> points;
    for (const auto& r : data.rows)
      if (r.op == "peer_copy" && r.design == design) {
        copies.push_back(&r);
        const double peers = to_every_peer ? std::max(1, r.world - 1) : 1;
        points.emplace_back(peers * static_cast<double>(r.bytes), r.time_s);
      }
    std::set<std::uint64_t> sizes;
    for (const auto* r : copies) sizes.insert(r->bytes);
    if (sizes.size() < 2) return;
    const CopyLine line = fit_copy_line(points);
    const std::string cite = cite_rows(data.label, copies);
    const double err = rounded(line.rel_rms, 4);
    p.designs.by_design["tilewise"][prefix + "_bandwidth_Bps"] = {
        rounded(line.Bps, 4), {sim::SourceKind::Measured, cite, err}};
    p.designs.by_design["tilewise"][prefix + "_latency_s"] = {
        rounded(line.latency_s, 4), {sim::SourceKind::Measured, cite, err}};
    const std::string text = fmt::format(
        "{}: the line latency + bytes / bandwidth through the {} {} rows ({} sizes, {}), least "
        "squares on the relative error",
        what, copies.size(), rows_name, sizes.size(), how);
    comment(prefix + "_bandwidth_Bps", text);
    comment(prefix + "_latency_s", text);
    out.notes.push_back(fmt::format(
        "designs.tilewise.{}_bandwidth_Bps / latency_s: {:.1f} GB/s, {:.2f} us from {} rows, fit "
        "error {:.1f}%",
        prefix, line.Bps / 1e9, line.latency_s * 1e6, copies.size(), 100 * line.rel_rms));
  };
  fit_line("copy_engine", "copy_engine", "copy-engine peer copies", "peer_copy",
           "every rank copying to the next at once", false);
  fit_line("tail_kernel", "tail_kernel", "the all-reduce tail kernel's exchange",
           "peer_copy tail_kernel",
           "every rank sending its bytes to each peer at once, (world - 1) x bytes a row", true);

  // The stream operations per copy (flag write, counter wait and reset): a 1 MiB copy with
  // them less the same copy alone in the same run section (the rows' case) and world, the
  // median over the sections.
  {
    std::vector<std::pair<const Measurement*, const Measurement*>> pairs;
    for (const auto& w : data.rows) {
      if (w.op != "peer_copy" || w.design != "copy_engine_with_stream_ops") continue;
      for (const auto& a : data.rows)
        if (a.op == "peer_copy" && a.design == "copy_engine" && a.case_key == w.case_key &&
            a.world == w.world && a.bytes == w.bytes) {
          pairs.emplace_back(&a, &w);
          break;
        }
    }
    std::vector<double> ops;
    std::vector<const Measurement*> cited;
    for (const auto& [a, w] : pairs) {
      ops.push_back(std::max(0.0, w->time_s - a->time_s));
      cited.push_back(a);
      cited.push_back(w);
    }
    if (!ops.empty()) {
      const double mid = median(ops);
      // Its error: the sections' relative RMS deviation from the median.
      double sq = 0;
      for (const double o : ops) sq += (o - mid) * (o - mid);
      const double err = mid > 0 ? std::sqrt(sq / static_cast<double>(ops.size())) / mid : 0;
      p.designs.by_design["tilewise"]["copy_engine_stream_ops_s"] = {
          rounded(mid, 4),
          {sim::SourceKind::Measured, cite_rows(data.label, cited), rounded(err, 4)}};
      comment("copy_engine_stream_ops_s",
              fmt::format("the stream operations each copy-engine copy takes (flag write, "
                          "counter wait and reset): peer_copy copy_engine_with_stream_ops less "
                          "copy_engine at the same size, median over {} run section(s)",
                          ops.size()));
      out.notes.push_back(
          fmt::format("designs.tilewise.copy_engine_stream_ops_s: {:.2f} us from {} pairs of rows",
                      mid * 1e6, ops.size()));
    }
  }

  // The pair rows' parameters, each where rows pin it down.
  const sim::Sourced* tile_m = param("tile_m");
  const sim::Sourced* tile_n = param("tile_n");
  if (!tile_m || !tile_n || !param("copy_engine_bandwidth_Bps")) return;
  const PairRows pairs = copy_engine_pairs(data, tile_m->value * tile_n->value);
  const ParamSpec specs[] = {
      {"epilogue_reduce_overhead_fraction", 0, 0.5, false,
       [](const Measurement& r) { return r.world == 2 && collective_of_pair(r.op) != "alltoall"; },
       "the 2-rank owner epilogue's reduction, a fraction of the own part's time: the 2-rank "
       "all-reduce and reduce-scatter pair rows"},
      {"epilogue_reduce_bandwidth_Bps", 1e11, 1e14, true,
       [](const Measurement& r) {
         return r.world > 2 && collective_of_pair(r.op) == "reducescatter";
       },
       "the > 2-rank owner epilogue's n + 2 passes over each own tile, a rate over all SMs: "
       "the reduce-scatter pair rows on more than 2 ranks (no phase 2)"},
      {"copy_engine_phase2_contention", 0, 3, false,
       [](const Measurement& r) { return r.world > 2 && collective_of_pair(r.op) == "allreduce"; },
       "all-reduce phase-2 copies take 1 + this x (n - 2) times a peer copy: the all-reduce "
       "pair rows on more than 2 ranks, given the epilogue above"},
  };
  for (const ParamSpec& spec : specs) {
    std::vector<Measurement> rows;
    for (const auto& r : pairs.rows)
      if (spec.uses(r)) rows.push_back(r);
    // Where no row depends on it the base's value stays (a key the base lacks stays absent:
    // the design's older meaning, docs/profile-format.md).
    sim::Profile trial = p;
    if (rows.empty() || pair_rms(trial, rows) < 0) continue;
    const double value = rounded(minimise_1d(
                                     [&](double v) {
                                       set_tilewise(trial, spec.key, v);
                                       return pair_rms(trial, rows);
                                     },
                                     spec.lo, spec.hi, spec.log_scale),
                                 4);
    set_tilewise(trial, spec.key, value);
    const double err = pair_rms(trial, rows);
    std::vector<const Measurement*> cited;
    for (const auto& r : rows) cited.push_back(&r);
    std::string cite = cite_rows(data.label, cited);
    std::vector<std::string> wrong;
    for (const auto& w : pairs.accepted_wrong)
      for (const auto& r : rows)
        if (w.rfind(r.where() + " ", 0) == 0) wrong.push_back(w);
    if (!wrong.empty())
      cite += fmt::format(
          "; rows with a few wrong elements kept (fewer than one tile per rank: fp32-sum vs "
          "NCCL bf16 rounding, fit_copy_engine.hpp): {}",
          fmt::join(wrong, ", "));
    p.designs.by_design["tilewise"][spec.key] = {
        value, {sim::SourceKind::Measured, cite, rounded(err, 4)}};
    comment(spec.key, fmt::format("{}; minimises the relative RMS error of the {} row(s)'s "
                                  "predictions (as overlapsim validate makes them)",
                                  spec.what, rows.size()));
    out.notes.push_back(fmt::format("designs.tilewise.{}: {:.4g} from {} rows, fit error {:.1f}%",
                                    spec.key, value, rows.size(), 100 * err));
  }
}

}  // namespace overlapsim::calibration
