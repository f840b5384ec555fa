// GEMM tables carried from the base profile for input types this data did not measure
// (a 2-GPU run has no fp8 rows; a 1-GPU run of the same GPU does), brought to this run's
// machine: every carried table's rates are divided by how much slower this run timed the
// GEMMs both runs measured than the base's tables predict for them. Why: a multi-GPU row
// is the slowest rank's time and the machines differ in cooling, so the same GPU's bf16
// grid ran 5 % slower at the median on 2 x H200 than on one H200 (docs/calibration.md);
// fp8 kernels on that machine pay the same.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "calibration/fit.hpp"
#include "calibration/ops.hpp"
#include "calibration/pair_loop.hpp"

namespace overlapsim::calibration {
namespace {

using Tables = std::map<sim::Precision, sim::GemmTable>;

struct Anchor {
  double slower = 0;  // 0: no GEMM both runs measured
  std::size_t rows = 0;
  std::string how;    // for the citation
};

// How much slower this run's `design` GEMMs took than the base's tables predict.
Anchor measure(const FitData& data, const Tables& base_tables, const std::string& design,
               double launch_s, std::set<sim::Precision>* measured) {
  std::vector<const Measurement*> common;
  std::vector<double> ratios;
  for (const auto& r : data.rows) {
    if (r.op != "gemm" || r.design != design || r.dtype.empty()) continue;
    const sim::Precision prec = precision_of(r.dtype);
    measured->insert(prec);
    const auto base = base_tables.find(prec);
    // Back-to-back rows only: those of pair loops run at another clock (idle_clock_boost).
    if (base == base_tables.end() || measured_in_pair_loop(r)) continue;
    const double modelled = base->second.compute_s(static_cast<double>(r.m),
                                                   static_cast<double>(r.n),
                                                   static_cast<double>(r.k));
    if (!(modelled > 0)) continue;
    common.push_back(&r);
    ratios.push_back(std::max(r.time_s - launch_s, 1e-9) / modelled);
  }
  if (ratios.empty()) return {};
  const double slower = std::stod(fmt::format("{:.4g}", median(ratios)));
  return {slower, ratios.size(),
          fmt::format("this run's {} GEMMs took {:.4g} x the base's tables (median over {} rows, "
                      "{})",
                      design, slower, ratios.size(), cite_rows(data.label, common))};
}

void apply(const Anchor& a, const Tables& base_tables, const std::set<sim::Precision>& measured,
           const std::string& key, Tables& tables, FitOutput& out) {
  for (auto& [prec, table] : tables) {
    if (measured.count(prec) || !base_tables.count(prec)) continue;  // fitted here, or new
    table.scale_rates(1 / a.slower);
    table.source.citation += fmt::format("; rates / {:.4g}: {}", a.slower, a.how);
    out.notes.push_back(fmt::format("compute.{}.{}: carried, rates / {:.4g} ({} rows)", key,
                                    sim::to_string(prec), a.slower, a.rows));
  }
}

}  // namespace

void anchor_carried_gemm_tables(const FitData& data, const sim::Profile& base, FitOutput& out) {
  const double launch_s = out.profile.compute.launch_overhead_s.value;
  sim::ComputeProfile& c = out.profile.compute;
  std::set<sim::Precision> vendor_measured, own_measured;
  const Anchor vendor =
      measure(data, base.compute.gemm_tables, "cublas", launch_s, &vendor_measured);
  Anchor own = measure(data, base.compute.own_gemm_tables, "own", launch_s, &own_measured);
  // No own GEMM of a type both runs measured (a 1-GPU base with fp16 own rows under a bf16
  // run): the machine's slowdown is taken from the vendor GEMMs, which it slows alike.
  if (own.slower == 0 && vendor.slower > 0) {
    own = vendor;
    own.how += " (no own GEMM rows of a type the base has: the cuBLAS ratio)";
  }
  if (vendor.slower > 0) apply(vendor, base.compute.gemm_tables, vendor_measured, "gemm_tables",
                               c.gemm_tables, out);
  if (own.slower > 0) apply(own, base.compute.own_gemm_tables, own_measured, "own_gemm_tables",
                            c.own_gemm_tables, out);
}

}  // namespace overlapsim::calibration
