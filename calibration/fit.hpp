#pragma once
// `overlapsim fit`: a calibration data directory (manifest.yaml + overlap-bench CSVs,
// optionally heldout.csv) -> a profile YAML. Deterministic and CPU-only.
//
// What is fitted (docs/calibration.md has the formulas):
//   collectives        per op, rank count and CTA limit: alpha-beta bands over size
//   compute.gemm_tables  cuBLAS GEMM time: rate grid or wave model (+ correction), chosen by
//                      leave-one-shape-out (fit_gemm_model.hpp)
//   efficiency.memory / embedding  GEMV and embedding-bag bandwidth, merged into the
//                      base profile's curves inside the measured range
//   designs            decomposed.per_chunk_overhead_s, tilewise.own_gemm_time_ratio and
//                      tilewise.signal_overhead_fraction
// Everything overlap-bench does not measure (peak rates, HBM size, attention, fp8 ...) is
// carried from a base profile with its own source. Each fitted number cites the CSV rows
// it came from and its relative RMS error against them.
#include <map>
#include <string>
#include <vector>

#include "calibration/manifest.hpp"
#include "calibration/measurement.hpp"
#include "sim/profile/profile.hpp"

namespace overlapsim::calibration {

struct FitData {
  Manifest manifest;
  std::string label;              // how citations name the data directory
  std::vector<Measurement> rows;  // what the fit uses (file = path relative to the directory)
  std::vector<Measurement> heldout_rows;
  std::vector<std::string> excluded;  // "file:line: reason" for rows left out as unusable
};

// Reads the manifest and every file it lists; rows whose split key is in heldout.csv
// (when the manifest names one) go to heldout_rows. Rows with wrong > 0, or whose median
// is more than twice their own minimum (iterations disagreeing by 2x: unstable), are left
// out and listed. Throws config::ConfigError for bad files and for rows measured on
// another GPU or more GPUs than the manifest says.
FitData load_fit_data(const std::string& data_dir);

// Every row of every file the manifest lists (checked as load_fit_data does, nothing left
// out), files named relative to the directory.
std::vector<Measurement> load_all_rows(const Manifest& manifest);
// heldout.csv for the directory by the split rule (split.hpp); the caller writes it.
std::string make_heldout_csv(const std::string& data_dir);

struct FitOptions {
  std::string base_profile;  // empty: the datasheet profile of the manifest's GPU
};

struct FitResult {
  sim::Profile profile;
  std::string yaml;
  std::string base_profile;
  std::vector<std::string> notes;  // one line per fitted quantity, for the CLI
};

FitResult fit_profile(const std::string& data_dir, const FitOptions& options = {});

// Helpers shared by the fit stages.
double median(std::vector<double> values);
// "kernels_i.csv:2-6,31; tilewise.csv:10" (lines grouped per file, runs compressed).
std::string cite_rows(const std::string& label, const std::vector<const Measurement*>& rows);
// Relative RMS of predicted vs measured.
double relative_rms(const std::vector<double>& predicted, const std::vector<double>& measured);
// exp(mean(log(values))): the average of ratios.
double geometric_mean(const std::vector<double>& values);
// `v` to `digits` significant digits, as the profile YAML writes fitted numbers.
double rounded(double v, int digits);

// A fitted number: source measured, this citation, fit_error rounded as the YAML writes it.
sim::Sourced measured_value(double value, std::string citation, double fit_error);

// Stages (fit_compute.cpp, fit_collectives.cpp, fit_designs.cpp).
// Each fills its part of
// `profile`, adds comments for the YAML writer and one note line per quantity.
struct FitOutput {
  sim::Profile& profile;
  std::map<std::string, std::string>& comments;
  std::vector<std::string>& notes;
};
void fit_compute(const FitData& data, FitOutput& out);
void fit_collectives(const FitData& data, FitOutput& out);

// A default-CTA curve's in_compute_loop_factor (fit_collective_loop.cpp): the geometric mean
// over `loop_rows` (the op timed inside pair loops, between GEMMs) of measured time / the
// curve's time, the curve fitted from the op's nccl-tests-style rows. No rows: 1, source
// assumed ("not measured"). `comment` goes above the key in the YAML, `note` to the CLI.
struct InLoopFactorFit {
  sim::Sourced factor;
  std::string comment;
  std::string note;
};
InLoopFactorFit fit_in_compute_loop_factor(const sim::CollectiveCurve& curve,
                                           const std::vector<const Measurement*>& loop_rows,
                                           const std::string& data_label);
void fit_designs(const FitData& data, FitOutput& out);
// compute.idle_clock_boost from the GEMMs timed inside pair loops against the
// (back-to-back) GEMM table and the collective curves; after fit_compute and
// fit_collectives.
void fit_idle_clock_boost(const FitData& data, FitOutput& out);
// compute.concurrent_comm_slowdown and compute.concurrent_comm_gemm_slowdown from the
// interference rows (a GEMM burst beside NCCL on its default CTAs over the burst alone;
// fit_interference.cpp). Without such rows the base profile's are carried.
void fit_concurrent_comm_slowdown(const FitData& data, FitOutput& out);
// compute.own_gemm_tables from the own GEMM's rows (design own): back to back, and those
// timed inside pair loops brought to the back-to-back clock by compute.idle_clock_boost;
// after fit_idle_clock_boost.
void fit_own_gemm_tables(const FitData& data, FitOutput& out);
// GEMM tables (cuBLAS and own) of input types this data has no rows for, carried from
// `base`: their rates divided by how much slower this run's GEMMs of the types both have
// took than `base`'s tables predict (median over the back-to-back rows; fit_anchor.cpp).
// After fit_compute and fit_own_gemm_tables.
void anchor_carried_gemm_tables(const FitData& data, const sim::Profile& base, FitOutput& out);

}  // namespace overlapsim::calibration
