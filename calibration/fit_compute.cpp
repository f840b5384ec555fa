// Compute stages of the fit: the cuBLAS GEMM model (rate grid or wave model, chosen by
// cross-validation, fit_gemm_model.hpp), and the GEMV / embedding-bag
// bandwidth folded into the memory and embedding efficiency curves.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "calibration/fit.hpp"
#include "calibration/fit_gemm_model.hpp"
#include "calibration/ops.hpp"
#include "calibration/pair_loop.hpp"
#include "sim/profile/compute_model.hpp"

namespace overlapsim::calibration {
namespace {

using Shape = GemmShape3;

double flops_of(const Shape& s) {
  return 2.0 * static_cast<double>(std::get<0>(s)) * static_cast<double>(std::get<1>(s)) *
         static_cast<double>(std::get<2>(s));
}

// What the rate grid says about itself, for the profile comment.
struct RateTableInfo {
  std::size_t measured = 0;
  int from_base = 0;
  double base_scale = 1;
};

// The rate grid over the measured M, N, K: rate = 2mnk / (median time - launch) at measured
// shapes, IDW elsewhere; below the smallest measured value of an axis, nodes at /4 and /16
// carry the base efficiency curve scaled to the measured level.
sim::GemmTable rate_table(const std::vector<GemmShapeTimes>& shapes, double launch_s,
                          const sim::LogCurve* base_curve, double peak,
                          RateTableInfo* info = nullptr) {
  std::map<Shape, double> rate;
  std::set<double> ms, ns, ks;
  for (const auto& st : shapes) {
    const auto [m, n, k] = st.shape;
    rate[st.shape] = flops_of(st.shape) / std::max(st.median_s - launch_s, 1e-9);
    ms.insert(static_cast<double>(m));
    ns.insert(static_cast<double>(n));
    ks.insert(static_cast<double>(k));
  }
  sim::GemmTable table;
  if (rate.empty()) return table;
  // The table is held constant beyond its edges, so small GEMMs would get the big ones'
  // rate. Two axis values below the smallest measured (/4, /16) carry the base profile's
  // efficiency curve there, its level scaled to these measurements (geometric mean of
  // measured / base rate over the measured shapes).
  double base_scale = 1;
  if (base_curve && peak > 0) {
    double log_sum = 0;
    for (const auto& [s, r] : rate) log_sum += std::log(r / (peak * base_curve->at(flops_of(s))));
    base_scale = std::exp(log_sum / static_cast<double>(rate.size()));
    for (std::set<double>* axis : {&ms, &ns, &ks}) {
      const double lo = *axis->begin();
      for (double f : {4.0, 16.0})
        if (lo / f >= 16) axis->insert(std::round(lo / f));
    }
  }
  double m_lo = 1e300, n_lo = 1e300, k_lo = 1e300;
  for (const auto& [s, r] : rate) {
    m_lo = std::min(m_lo, static_cast<double>(std::get<0>(s)));
    n_lo = std::min(n_lo, static_cast<double>(std::get<1>(s)));
    k_lo = std::min(k_lo, static_cast<double>(std::get<2>(s)));
  }
  int from_base = 0;
  table.m_values.assign(ms.begin(), ms.end());
  table.n_values.assign(ns.begin(), ns.end());
  table.k_values.assign(ks.begin(), ks.end());
  const IdwLogMeanGrid grid(rate, table.m_values, table.n_values, table.k_values);
  for (std::size_t i = 0; i < table.m_values.size(); ++i)
    for (std::size_t j = 0; j < table.n_values.size(); ++j)
      for (std::size_t l = 0; l < table.k_values.size(); ++l) {
        const double m = table.m_values[i], n = table.n_values[j], k = table.k_values[l];
        double r = 0;
        if (base_curve && peak > 0 && (m < m_lo || n < n_lo || k < k_lo)) {
          r = base_scale * peak * base_curve->at(2 * m * n * k);
          ++from_base;
        } else {
          r = grid.at(i, j, l);
        }
        // Six significant digits: the YAML stays readable and reloads to these values.
        table.achieved_flops_per_s.push_back(std::stod(fmt::format("{:.6g}", r)));
      }
  if (info) *info = {rate.size(), from_base, base_scale};
  return table;
}

struct GemmCandidate {
  std::string name;
  GemmModelBuilder build;
  CrossValidation cv;
};

std::string percent(double v) { return fmt::format("{:.2f}%", 100 * v); }

// Split-K parts the best-of model tries per data-parallel tile (cuBLASLt's heuristics go
// further, but beyond 4 parts every tile count above a few tiles fills the SMs' waves to
// within 6 % at 132 SMs, and stream-K covers the rest).
constexpr int kMaxSplitK = 4;

// How often each choice of a best-of model is the fastest over the shapes, for the comment.
std::string choice_counts(const sim::GemmWaveModel& w, const std::vector<GemmShapeTimes>& shapes) {
  std::map<std::string, int> count;
  for (const auto& st : shapes) {
    const auto [m, n, k] = st.shape;
    const sim::GemmCharge c =
        w.charge(static_cast<double>(m), static_cast<double>(n), static_cast<double>(k));
    ++count[c.tile_m == 0 ? std::string("stream-K")
                          : fmt::format("{}x{} split {}", c.tile_m, c.tile_n, c.split_k)];
  }
  std::string out;
  for (const auto& [name, n] : count)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", name, n);
  return out;
}

// The GEMM tables of one kernel: overlap-bench design `cublas` into compute.gemm_tables,
// `own` (this project's GEMM) into compute.own_gemm_tables, by the same candidates.
// `b2b_time_s`, when given, also admits the rows timed inside pair loops, at the time it
// returns for them (the back-to-back clock's); otherwise those rows are left out.
void fit_gemm_tables(const FitData& data, FitOutput& out, const std::string& design,
                     const std::function<double(const Measurement&)>& b2b_time_s = {}) {
  const bool own = design == "own";
  const std::string key = own ? "own_gemm_tables" : "gemm_tables";
  const std::string kernel = own ? "own Hopper GEMM (kernels/gemm)" : "cuBLASLt";
  auto& tables = own ? out.profile.compute.own_gemm_tables : out.profile.compute.gemm_tables;
  const auto time_of = [&](const Measurement& r) {
    return b2b_time_s && measured_in_pair_loop(r) ? b2b_time_s(r) : r.time_s;
  };
  std::map<std::string, std::vector<const Measurement*>> by_dtype;
  for (const auto& r : data.rows)
    // Back-to-back GEMMs, unless told how to bring the others to that clock: those timed
    // between collectives run faster (fit_idle_clock_boost).
    if (r.op == "gemm" && r.design == design && (b2b_time_s || !measured_in_pair_loop(r)))
      by_dtype[r.dtype].push_back(&r);
  const double launch_s = out.profile.compute.launch_overhead_s.value;
  const int sms = out.profile.device.sms;
  for (const auto& [dtype, rows] : by_dtype) {
    const sim::Precision prec = precision_of(dtype);
    std::map<Shape, std::vector<double>> times;
    for (const Measurement* r : rows) times[{r->m, r->n, r->k}].push_back(time_of(*r));
    std::vector<GemmShapeTimes> shapes;
    for (const auto& [s, t] : times) shapes.push_back({s, t, median(t)});
    const sim::LogCurve* base_curve = nullptr;
    if (auto it = out.profile.compute.gemm_efficiency.find(prec);
        it != out.profile.compute.gemm_efficiency.end())
      base_curve = &it->second;
    const double peak = out.profile.compute.peak_flops_per_s.count(prec)
                            ? out.profile.compute.peak_flops_per_s.at(prec).value
                            : 0;

    // Candidates, the rate grid first: a later one must score strictly better to be chosen.
    std::vector<GemmCandidate> candidates;
    candidates.push_back({"table", [&](const std::vector<GemmShapeTimes>& s) {
                            return rate_table(s, launch_s, base_curve, peak);
                          }});
    // The wave model has three coefficients: each leave-one-out fit needs three shapes.
    if (shapes.size() >= 4) {
      // cuBLAS picks its tile per shape: no quantisation, or the least-quantised of its
      // tiles; a fixed tile is what one kernel (our own GEMM) does. The grid cannot tell
      // these apart (power-of-two shapes round up by <= 3 % with any of them), the
      // training shapes between its points can (sim/profile/gemm_table.hpp).
      const std::vector<std::pair<int, int>> tiles =
          own ? std::vector<std::pair<int, int>>{{0, 0},
                                                 {128, 128},
                                                 {128, 256},
                                                 {256, 128},
                                                 {256, 256}}
              : std::vector<std::pair<int, int>>{{0, 0}, {-1, -1}};
      // cuBLAS per shape: the fastest of its tiles (each at its own fitted efficiency),
      // split-K and stream-K, quantised on the real SM count (fit_gemm_best_of_model).
      if (!own && sms > 0)
        for (bool corrected : {false, true})
          candidates.push_back({corrected ? std::string("best of tiles x split-K + correction")
                                          : std::string("best of tiles x split-K"),
                                [&, corrected](const std::vector<GemmShapeTimes>& s) {
                                  const sim::GemmWaveModel w =
                                      fit_gemm_best_of_model(s, launch_s, sms, kMaxSplitK, true);
                                  if (corrected) return with_time_correction(w, s, launch_s);
                                  sim::GemmTable t;
                                  t.waves = w;
                                  return t;
                                }});
      for (bool corrected : {false, true})
        for (bool partial : {false, true})
          for (const auto& [tm, tn] : tiles) {
            if (tm != 0 && sms <= 0) continue;
            // One kernel's fixed tile: also with the partial last wave's cost fitted.
            if (partial && !(own && tm > 0)) continue;
            const std::string name = (tm > 0   ? fmt::format("waves {}x{}", tm, tn)
                                      : tm < 0 ? std::string("waves (tile per shape)")
                                               : std::string("waves (no tile)")) +
                                     (partial ? ", partial wave fitted" : "");
            candidates.push_back(
                {corrected ? name + " + correction" : name,
                 [&, tm = tm, tn = tn, corrected, partial](const std::vector<GemmShapeTimes>& s) {
                   // Our GEMM never splits K: a fixed tile costs a whole wave below one.
                   const sim::GemmWaveModel w =
                       fit_gemm_wave_model(s, launch_s, tm, tn, sms, own, partial);
                   if (corrected) return with_time_correction(w, s, launch_s);
                   sim::GemmTable t;
                   t.waves = w;
                   return t;
                 }});
          }
    }
    std::size_t chosen = 0;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      candidates[i].cv = leave_one_shape_out(shapes, launch_s, candidates[i].build);
      // Better by more than 0.01 points: equal scores in floating point stay with the earlier.
      if (candidates[i].cv.score() < candidates[chosen].cv.score() - 1e-4) chosen = i;
    }
    std::string cv_text;
    for (std::size_t i = 0; i < candidates.size(); ++i)
      cv_text +=
          fmt::format("{}  {}: {} / {}", i ? ",\n" : "", candidates[i].name,
                      percent(candidates[i].cv.median_abs), percent(candidates[i].cv.p90_abs));

    RateTableInfo info;
    sim::GemmTable table = chosen == 0 ? rate_table(shapes, launch_s, base_curve, peak, &info)
                                       : candidates[chosen].build(shapes);
    table.source.kind = sim::SourceKind::Measured;
    table.source.citation =
        fmt::format("overlap-bench gemm {} rows, ", design) + cite_rows(data.label, rows);
    tables[prec] = table;

    sim::ComputeProfile timed = out.profile.compute;
    if (own) timed = *sim::own_gemm_profile(timed);
    const sim::ComputeModel model(timed);
    std::vector<double> pred, meas;
    for (const Measurement* r : rows) {
      pred.push_back(model.time_s(compute_op(*r, "gemm")));
      meas.push_back(time_of(*r));
    }
    const double err = relative_rms(pred, meas);
    tables[prec].source.fit_error = std::stod(fmt::format("{:.4g}", err));
    const std::string choice = fmt::format(
        "Model chosen by leave-one-shape-out on these rows (median/p90 |error| of each shape's\n"
        "rows predicted from the other shapes; the lowest median + p90 wins, by more than\n"
        "0.01 points over the candidates listed before it):\n{}\n",
        cv_text);
    std::string how;
    if (chosen == 0) {
      const std::size_t nodes = table.achieved_flops_per_s.size();
      how = fmt::format(
          "{} {} GEMM rates (overlap-bench design {}): rate = 2mnk / (median time -\n"
          "launch_overhead_s) at the {} measured shapes ({} rows); {} nodes with an axis value "
          "below\n"
          "the measured ones (added at /4 and /16) from the base efficiency curve x {:.4f} (its\n"
          "level against these shapes); the other {} of the {} nodes by inverse-square-distance\n"
          "weighting of the measured log rates in log2 shape space.",
          kernel, dtype, design, info.measured, rows.size(), info.from_base, info.base_scale,
          nodes - info.measured - static_cast<std::size_t>(info.from_base), nodes);
    } else {
      const sim::GemmWaveModel& w = table.waves;
      how = fmt::format(
          "{} {} GEMM time (overlap-bench design {}), wave model over {} shapes\n"
          "({} rows): time = launch_overhead_s + fixed_s + A * output_s_per_element\n"
          "+ 2 A k / mainloop_flops_per_s, A = m n{}; coefficients >= 0 by least squares on\n"
          "the relative error of the median times.{}",
          kernel, dtype, design, shapes.size(), rows.size(),
          !w.quantised() ? std::string()
          : w.best_of_choices()
              ? fmt::format(
                    ",\nper shape the fastest choice: a tile (128x128, 128x256, 256x128, 256x256) "
                    "split along K\n"
                    "into s = 1..{} parts, A = its units rounded up to whole waves on {} SMs "
                    "and its main\nloop 2 A (k / s), or stream-K (A = m n unrounded); each "
                    "choice's main loop at\nmainloop_flops_per_s x its efficiency (choices: "
                    "[tile_m, tile_n, efficiency], 0 x 0 =\nstream-K), fitted by coordinate "
                    "search; fastest over the fitted shapes: {}",
                    w.max_split_k, w.sms, choice_counts(w, shapes))
          : w.tile_per_shape
              ? fmt::format(" rounded up to whole waves on {} SMs of the tile (128x128,\n"
                            "128x256, 256x128 or 256x256) that rounds least (from one "
                            "full wave on;\nbelow it cuBLAS splits K)",
                            w.sms)
          : w.whole_tiles_below_one_wave && w.partial_wave_floor != 1
              ? fmt::format(" in waves of {}x{} tiles on {} SMs, a partial last wave\n"
                            "charged {} + (1 - {}) x its share of a full one (the floor fitted "
                            "in steps of 0.05;\nbelow one wave too: the kernel never splits K)",
                            w.tile_m, w.tile_n, w.sms, w.partial_wave_floor, w.partial_wave_floor)
          : w.whole_tiles_below_one_wave
              ? fmt::format(" rounded up to whole waves of {}x{} tiles on {} SMs\n"
                            "(below one wave too: the kernel never splits K)",
                            w.tile_m, w.tile_n, w.sms)
              : fmt::format(" rounded up to whole waves of {}x{} tiles on {} SMs\n"
                            "(from one full wave on; below it cuBLAS splits K)",
                            w.tile_m, w.tile_n, w.sms),
          table.time_factor.empty()
              ? ""
              : fmt::format(
                    "\ncorrection: measured / wave-model kernel time at the measured shapes "
                    "(a {}x{}x{}\ngrid over their M, N, K), other nodes by inverse-square-"
                    "distance weighting of\nthe log factors; log-trilinear, held at the edges.",
                    table.m_values.size(), table.n_values.size(), table.k_values.size()));
    }
    out.comments[fmt::format("compute.{}.{}", key, dtype)] =
        how + "\n" + choice +
        "fit_error: relative RMS of the compute model's time against every row (repeats\n"
        "included: the run-to-run spread).";
    out.notes.push_back(
        fmt::format("compute.{}.{}: {} shapes, {} rows, {} (leave-one-shape-out {} / {}), fit "
                    "error {:.1f}%",
                    key, dtype, shapes.size(), rows.size(), candidates[chosen].name,
                    percent(candidates[chosen].cv.median_abs),
                    percent(candidates[chosen].cv.p90_abs), 100 * err));
  }
}

// Memory-bound ops measured by overlap-bench (GEMV, embedding bags): the efficiency
// bytes / (peak bandwidth * (time - launch)) at each measured size (median of repeats)
// replaces the base curve over the measured range; beyond it the base curve's shape is
// kept, scaled to meet the first (below) or last (above) measured point, so the spliced
// curve is continuous. An optional curve the base lacks (`efficiency.gemv`) starts from
// `start`.
void fit_bandwidth_curve(const FitData& data, FitOutput& out, const std::string& op,
                         sim::LogCurve& curve, const std::string& key, const sim::LogCurve& start) {
  std::vector<const Measurement*> rows;
  for (const auto& r : data.rows)
    if (r.op == op && r.dtype != "") rows.push_back(&r);
  if (rows.empty()) return;
  if (curve.empty()) curve = start;
  const double bw = out.profile.compute.memory_bandwidth_Bps.value;
  const double launch_s = out.profile.compute.launch_overhead_s.value;
  std::map<double, std::vector<double>> eff_at;
  for (const Measurement* r : rows) {
    const double bytes = sim::ComputeModel::op_bytes(compute_op(*r, op));
    eff_at[bytes].push_back(std::min(1.0, bytes / (bw * std::max(r->time_s - launch_s, 1e-9))));
  }
  const double x_lo = eff_at.begin()->first, x_hi = eff_at.rbegin()->first;
  const double scale_lo = median(eff_at.begin()->second) / curve.at(x_lo);
  const double scale_hi = median(eff_at.rbegin()->second) / curve.at(x_hi);
  std::vector<std::pair<double, double>> pts;
  for (const auto& [x, y] : curve.points) {
    if (x >= x_lo && x <= x_hi) continue;
    const double scaled = y * (x < x_lo ? scale_lo : scale_hi);
    pts.emplace_back(x, std::stod(fmt::format("{:.4g}", std::clamp(scaled, 1e-6, 1.0))));
  }
  for (const auto& [x, effs] : eff_at)
    pts.emplace_back(std::round(x), std::stod(fmt::format("{:.4g}", median(effs))));
  std::sort(pts.begin(), pts.end());
  const std::string kept = fmt::format("x {:.4g} below {:.3g} B, x {:.4g} above {:.3g} B", scale_lo,
                                       x_lo, scale_hi, x_hi);
  const std::string base_citation = curve.source.citation;
  curve.points = pts;
  curve.source.kind = sim::SourceKind::Measured;
  curve.source.citation = fmt::format("overlap-bench {} rows, {}; beyond them scaled from: {}", op,
                                      cite_rows(data.label, rows), base_citation);
  const sim::ComputeModel model(out.profile.compute);
  std::vector<double> pred, meas;
  for (const Measurement* r : rows) {
    pred.push_back(model.time_s(compute_op(*r, op)));
    meas.push_back(r->time_s);
  }
  const double err = relative_rms(pred, meas);
  curve.source.fit_error = std::stod(fmt::format("{:.4g}", err));
  out.comments["compute.efficiency." + key] = fmt::format(
      "{}: efficiency = bytes / (memory_bandwidth_Bps * (median time - launch_overhead_s)) at\n"
      "the {} measured size(s) ({} rows); beyond them the base curve scaled {}.",
      op, eff_at.size(), rows.size(), kept);
  out.notes.push_back(
      fmt::format("compute.efficiency.{}: {} size(s) from {} {} rows, fit error {:.1f}%", key,
                  eff_at.size(), rows.size(), op, 100 * err));
}

// compute.fp8_block_scaling_time_factor: the geometric mean over shapes timed both ways
// (overlap-bench design cublas_block128 and cublas, fp8) of block-scaled / per-tensor
// kernel time; ratios, so a geometric mean.
void fit_fp8_block_scaling(const FitData& data, FitOutput& out) {
  const double launch_s = out.profile.compute.launch_overhead_s.value;
  std::map<Shape, const Measurement*> tensor;
  for (const auto& r : data.rows)
    if (r.op == "gemm" && r.dtype == "fp8" && r.design == "cublas" && !measured_in_pair_loop(r))
      tensor.emplace(Shape{r.m, r.n, r.k}, &r);
  std::vector<const Measurement*> cited;
  std::vector<double> ratios;
  for (const auto& r : data.rows) {
    if (r.op != "gemm" || r.dtype != "fp8" || r.design != "cublas_block128") continue;
    const auto t = tensor.find({r.m, r.n, r.k});
    if (t == tensor.end()) continue;
    ratios.push_back(std::max(r.time_s - launch_s, 1e-9) /
                     std::max(t->second->time_s - launch_s, 1e-9));
    cited.push_back(t->second);
    cited.push_back(&r);
  }
  if (ratios.empty()) return;
  const double factor = std::stod(fmt::format("{:.4g}", geometric_mean(ratios)));
  std::sort(cited.begin(), cited.end());
  const double err = relative_rms(std::vector<double>(ratios.size(), factor), ratios);
  out.profile.compute.fp8_block_scaling_time_factor = measured_value(
      factor, "overlap-bench gemm fp8 rows, cublas_block128 vs cublas, " + cite_rows(data.label, cited),
      err);
  out.comments["compute.fp8_block_scaling_time_factor"] = fmt::format(
      "Block-scaled fp8 GEMM time (1 x 128 activation runs, 128 x 128 weight blocks: the\n"
      "DeepSeek-V3 recipe) / per-tensor-scaled time, geometric mean over the {} shapes timed\n"
      "both ways (kernel times: median - launch_overhead_s); fit_error = relative RMS of the\n"
      "factor against the shapes' ratios ({:.3g} .. {:.3g}).",
      ratios.size(), *std::min_element(ratios.begin(), ratios.end()),
      *std::max_element(ratios.begin(), ratios.end()));
  out.notes.push_back(fmt::format(
      "compute.fp8_block_scaling_time_factor: {:.4g} from {} shapes, fit error {:.1f}%", factor,
      ratios.size(), 100 * err));
}

}  // namespace

void fit_compute(const FitData& data, FitOutput& out) {
  fit_gemm_tables(data, out, "cublas");
  fit_fp8_block_scaling(data, out);
  // GEMV rows fit a curve of their own, starting (beyond their sizes) from the base's GEMV
  // curve or, where it has none, its memory curve; the memory curve, which times every
  // streaming kernel, stays the base's (benchmarks/results/h200x1/elementwise_probe: a GEMV's
  // efficiency at 34 MB is about half a copy's).
  sim::ComputeProfile& c = out.profile.compute;
  fit_bandwidth_curve(data, out, "gemv", c.gemv_efficiency, "gemv", c.memory_efficiency);
  fit_bandwidth_curve(data, out, "embedding", c.embedding_efficiency, "embedding",
                      c.embedding_efficiency);
}

void fit_own_gemm_tables(const FitData& data, FitOutput& out) {
  const PairLoops loops(data.rows);
  const sim::ComputeProfile& c = out.profile.compute;
  fit_gemm_tables(data, out, "own", [&](const Measurement& r) {
    const auto loop = loops.of(r);
    return loop ? r.time_s * c.clock_speedup(loop_idle_fraction(out.profile, r, *loop)) : r.time_s;
  });
}

}  // namespace overlapsim::calibration
