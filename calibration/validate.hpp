#pragma once
// `overlapsim validate`: predicts held-out measurements through the simulator and reports
// how far off it is, per kind of measurement.
//
// Kinds (each row's relative error = (predicted - measured) / measured):
//   compute          GEMM (cuBLAS), GEMV, embedding bag alone: sim::ComputeModel
//   compute_own      this project's GEMM (design own) by compute.own_gemm_tables, where the
//                    profile has them (the tile-wise design's kernel)
//   collective       a collective, NCCL default CTAs: a Simulator run of the profile's
//                    curve (sim/collectives/collective_cost_model.hpp), the communicator on the cluster's GPUs;
//                    rows timed inside pair loops (between GEMMs) with the curve's
//                    in_compute_loop_factor. Where both occur, also reported apart as
//                    collective_alone and collective_in_loop (the same rows)
//   collective_ctas  the same with NCCL limited to c CTAs (curves with ctas: c)
//   collective_eff   a collective at a communicator size the profile has no curve
//                    for, on NVLink hosts: the flow network at the measured curve's
//                    efficiency (sim/collectives/collective_cost_model.hpp), as `overlapsim simulate` times it
//   collective_flow  the same collective on the cluster path of the cost model, as
//                    `simulate` times a collective the profile has no curve for: the flows on
//                    the cluster's links plus NCCL's latencies and protocol efficiency, NVLink
//                    at the profile's device.nccl_nvlink_bandwidth_Bps where it has one (no
//                    curves)
//   sequential       op then collective (or collective then op) as a 2-op step on every
//                    rank through sim::StepExecutor with SequentialDesign, collectives timed
//                    by the profile
//   decomposed,      the pair under that overlap design (sim::simulate_pair: the design
//   tilewise         model of sim/overlap run through StepExecutor), collectives timed by
//                    the profile; decomposed with the row's chunks, tile-wise with at most
//                    the row's group count
//   tilewise_ce      tile-wise rows of the copy-engine transport (design tilewise_copy_engine
//                    or tilewise_ce): the same model with TilewiseDesign's copy_engine transport
//                    and the copy engines' phase 2; tilewise_ce_tk rows with the tail kernel's
//                    (unmodelled where the profile has no tail-kernel rates)
// Rows of our own GEMM without own tables in the profile, its signalling variants, and
// kernels the simulator has no op for are listed as unmodelled with the reason.
#include <string>
#include <vector>

#include "calibration/measurement.hpp"
#include "sim/profile/profile.hpp"
#include "workloads/cluster.hpp"

namespace overlapsim::calibration {

struct ValidationRow {
  const Measurement* row = nullptr;
  std::string kind;
  double predicted_s = 0;
  double rel_err = 0;
  // collective rows: collective_alone or collective_in_loop; compute rows: compute_<dtype>
  std::string sub_kind;
};

struct KindStats {
  std::string kind;
  int count = 0;
  // Of |relative error|; quantiles interpolate linearly between order statistics.
  double median_abs_err = 0, p90_abs_err = 0, max_abs_err = 0;
};

struct Unmodelled {
  std::string kind;  // e.g. "decomposed"
  std::string reason;
  int count = 0;
};

struct ValidationReport {
  std::string profile_path, measurements_path, cluster_name;
  std::vector<ValidationRow> rows;     // in measurement order
  std::vector<KindStats> kinds;        // kinds present, in the order listed above
  std::vector<Unmodelled> unmodelled;  // by kind and reason, in first-seen order
};

// Throws std::invalid_argument when a row needs more GPUs than the cluster has.
ValidationReport validate(const sim::Profile& profile, const std::vector<Measurement>& rows,
                          const workloads::ClusterSpec& cluster);

KindStats kind_stats(const std::string& kind, std::vector<double> abs_errors);

std::string format_validation_table(const ValidationReport& r, int worst_rows = 10);
std::string format_validation_json(const ValidationReport& r, int worst_rows = 10);

}  // namespace overlapsim::calibration
