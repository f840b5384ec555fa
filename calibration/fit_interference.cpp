// compute.concurrent_comm_slowdown and compute.concurrent_comm_gemm_slowdown: how much
// slower a vendor GEMM runs while NCCL moves data beside it on NCCL's default CTAs, from
// overlap-bench's interference rows (kernels/bench/interference_runner.hpp): a burst of
// GEMMs alone and the same burst while collectives run back to back on the comm stream, in
// one loop of rounds, each timed kernel one sample.
//
// A short GEMM kernel is delayed by about one or two of its tiles' time beside NCCL (a CTA
// that shares its SM with a busy NCCL CTA straggles, and the kernel ends with its last CTA:
// benchmarks/results/h200x2/interference_moe), so the slowdown falls with the kernel's time:
// about 1.9x below ~60 us, a few percent past a millisecond. Hence two numbers:
//  - the curve: per GEMM shape, the median of beside / alone over its (collective, size)
//    pairs at its time alone, made non-increasing in that time (pool adjacent violators,
//    weighted by pairs); fitted where at least kMinCurveShapes shapes were measured;
//  - the factor: the median over the pairs of long kernels (alone >= kLongKernelS, where a
//    straggling tile is a small share), or over every pair where none is that long; the
//    executor charges it to compute ops that are not GEMMs, and designs use it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <vector>

#include "calibration/fit.hpp"

namespace overlapsim::calibration {

namespace {

constexpr double kLongKernelS = 500e-6;
constexpr std::size_t kMinPairs = 3;
constexpr std::size_t kMinCurveShapes = 3;

struct InterferencePair {
  std::int64_t m = 0, n = 0, k = 0;
  double alone_s = 0;  // the GEMM kernel's time alone
  double ratio = 0;    // beside / alone
  const Measurement* alone = nullptr;
  const Measurement* beside = nullptr;
};

std::vector<InterferencePair> interference_pairs(const FitData& data) {
  // A pair is two rows of one run: the same file and case (several runs may time a shape).
  using Key = std::tuple<std::string, std::string, int, std::string, std::int64_t, std::int64_t,
                         std::int64_t, std::uint64_t>;
  std::map<Key, InterferencePair> by_key;
  for (const auto& r : data.rows) {
    if (r.op != "interference" || r.chunks != 0 || r.design.rfind("gemm|", 0) != 0) continue;
    const auto colon = r.design.find(':');
    if (colon == std::string::npos) continue;
    const std::string other = r.design.substr(5, colon - 5);
    const std::string how = r.design.substr(colon + 1);
    InterferencePair& p = by_key[Key{r.file, r.case_key, r.ctas, other, r.m, r.n, r.k, r.bytes}];
    p.m = r.m, p.n = r.n, p.k = r.k;
    if (how == "alone") p.alone = &r;
    if (how == "beside") p.beside = &r;
  }
  std::vector<InterferencePair> pairs;
  for (auto& [key, p] : by_key)
    if (p.alone && p.beside && p.alone->time_s > 0) {
      p.alone_s = p.alone->time_s;
      p.ratio = p.beside->time_s / p.alone->time_s;
      pairs.push_back(p);
    }
  return pairs;
}

// Pool adjacent violators: the least-squares non-increasing fit of ys (weights ws).
std::vector<double> non_increasing(const std::vector<double>& ys, const std::vector<double>& ws) {
  struct Block {
    double sum = 0, weight = 0;
    std::size_t count = 0;
    double mean() const { return sum / weight; }
  };
  std::vector<Block> blocks;
  for (std::size_t i = 0; i < ys.size(); ++i) {
    blocks.push_back({ys[i] * ws[i], ws[i], 1});
    while (blocks.size() > 1 && blocks[blocks.size() - 2].mean() < blocks.back().mean()) {
      Block b = blocks.back();
      blocks.pop_back();
      blocks.back().sum += b.sum, blocks.back().weight += b.weight, blocks.back().count += b.count;
    }
  }
  std::vector<double> out;
  for (const Block& b : blocks) out.insert(out.end(), b.count, b.mean());
  return out;
}

void fit_factor(const std::vector<InterferencePair>& all, const FitData& data, FitOutput& out) {
  std::vector<const InterferencePair*> used;
  for (const auto& p : all)
    if (p.alone_s >= kLongKernelS) used.push_back(&p);
  const bool long_only = used.size() >= kMinPairs;
  if (!long_only) {
    used.clear();
    for (const auto& p : all) used.push_back(&p);
  }
  if (used.size() < kMinPairs) return;
  std::vector<double> ratios;
  std::vector<const Measurement*> rows;
  for (const InterferencePair* p : used) {
    ratios.push_back(p->ratio);
    rows.push_back(p->alone);
    rows.push_back(p->beside);
  }
  // A GEMM never runs faster for NCCL beside it: a median below 1 is noise, charged as none.
  const double slowdown = rounded(std::max(1.0, median(ratios)), 4);
  // The fit's error: the median absolute relative deviation of the ratios from it.
  std::vector<double> dev;
  for (double r : ratios) dev.push_back(std::abs(r - slowdown) / r);
  const double spread = median(dev);
  const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
  const std::string which =
      long_only ? fmt::format("kernels of {:.0f} us or more alone", kLongKernelS * 1e6)
                : std::string("every shape (none as long as 500 us)");
  out.profile.compute.concurrent_comm_slowdown = measured_value(
      slowdown,
      "overlap-bench interference rows, a cuBLAS GEMM burst beside back-to-back NCCL "
      "collectives on NCCL's default CTAs over the same burst alone, median of " +
          std::to_string(ratios.size()) + " pairs, GEMM " + which + ": " +
          cite_rows(data.label, rows),
      spread);
  out.comments["compute.concurrent_comm_slowdown"] = fmt::format(
      "Median of the GEMM burst's time beside NCCL on its default CTAs / alone over {}\n"
      "(GEMM shape, collective, size) pairs, {} (ratios {:.3f} .. {:.3f}): the\n"
      "executor slows compute other than GEMMs by this factor while its rank's communication\n"
      "moves data (docs/calibration.md).",
      ratios.size(), which, *lo, *hi);
  out.notes.push_back(fmt::format(
      "compute.concurrent_comm_slowdown: {:.4g} from {} pairs, {} (ratios {:.3f} .. {:.3f}), "
      "median deviation {:.1f}%",
      slowdown, ratios.size(), which, *lo, *hi, 100 * spread));
}

void fit_curve(const std::vector<InterferencePair>& all, const FitData& data, FitOutput& out) {
  using Shape = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
  std::map<Shape, std::vector<const InterferencePair*>> by_shape;
  for (const auto& p : all) by_shape[Shape{p.m, p.n, p.k}].push_back(&p);
  if (by_shape.size() < kMinCurveShapes) return;
  struct Point {
    double time_s, slowdown, weight;
  };
  std::vector<Point> pts;
  std::vector<const Measurement*> rows;
  for (const auto& [shape, ps] : by_shape) {
    std::vector<double> times, ratios;
    for (const InterferencePair* p : ps) {
      times.push_back(p->alone_s);
      ratios.push_back(p->ratio);
      rows.push_back(p->alone);
      rows.push_back(p->beside);
    }
    pts.push_back({median(times), median(ratios), static_cast<double>(ps.size())});
  }
  std::sort(pts.begin(), pts.end(),
            [](const Point& a, const Point& b) { return a.time_s < b.time_s; });
  std::vector<double> ys, ws;
  for (const Point& p : pts) ys.push_back(p.slowdown), ws.push_back(p.weight);
  const std::vector<double> fitted = non_increasing(ys, ws);
  sim::LogCurve curve;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const double t = std::round(pts[i].time_s * 1e8) * 1e-8;  // whole 0.01 us
    const double y = rounded(std::max(1.0, fitted[i]), 4);
    if (!curve.points.empty() && !(t > curve.points.back().first)) continue;
    curve.points.emplace_back(t, y);
  }
  // A flat run keeps its two ends: interpolation between them gives the same values.
  std::vector<std::pair<double, double>> kept;
  for (std::size_t i = 0; i < curve.points.size(); ++i) {
    const bool inside_flat = i > 0 && i + 1 < curve.points.size() &&
                             curve.points[i - 1].second == curve.points[i].second &&
                             curve.points[i + 1].second == curve.points[i].second;
    if (!inside_flat) kept.push_back(curve.points[i]);
  }
  curve.points = std::move(kept);
  if (curve.points.size() < 2) return;
  // The fit's error: the median over pairs of |ratio - curve at its time alone| / ratio.
  std::vector<double> dev;
  for (const auto& p : all) {
    dev.push_back(std::abs(p.ratio - curve.at(p.alone_s)) / p.ratio);
  }
  const double spread = median(dev);
  curve.source = {sim::SourceKind::Measured,
                  fmt::format("overlap-bench interference rows, a cuBLAS GEMM burst beside "
                              "back-to-back NCCL collectives on NCCL's default CTAs over the "
                              "same burst alone: per GEMM shape the median of its pairs, made "
                              "non-increasing in the kernel's time; {} shapes, {} pairs: {}",
                              by_shape.size(), all.size(), cite_rows(data.label, rows)),
                  rounded(spread, 2)};
  out.profile.compute.concurrent_comm_gemm_slowdown = curve;
  out.comments["compute.concurrent_comm_gemm_slowdown"] = fmt::format(
      "Per GEMM shape ({} shapes, {} pairs), the median of the burst's time beside NCCL on\n"
      "its default CTAs / alone at the kernel's time alone, non-increasing in it: the\n"
      "executor slows a GEMM op beside its rank's communication by this at the op's time per\n"
      "kernel (docs/calibration.md, \"Interference\").",
      by_shape.size(), all.size());
  out.notes.push_back(fmt::format(
      "compute.concurrent_comm_gemm_slowdown: {} points from {} shapes ({:.3g} at {:.1f} us .. "
      "{:.3g} at {:.1f} us), median deviation {:.1f}%",
      curve.points.size(), by_shape.size(), curve.points.front().second,
      curve.points.front().first * 1e6, curve.points.back().second, curve.points.back().first * 1e6,
      100 * spread));
}

}  // namespace

void fit_concurrent_comm_slowdown(const FitData& data, FitOutput& out) {
  const std::vector<InterferencePair> pairs = interference_pairs(data);
  fit_factor(pairs, data, out);
  fit_curve(pairs, data, out);
}

}  // namespace overlapsim::calibration
