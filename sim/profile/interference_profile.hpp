#pragma once
// How concurrent compute and communication slow each other down on one GPU. Compute ops
// lose SMs and memory bandwidth to NCCL kernels; NCCL kernels get fewer issue slots and
// memory bandwidth beside a GEMM. Slowdown factors (>= 1) over a load measure, linear
// between points and held constant beyond them. Used by the overlap-design models.
#include <string>
#include <utility>
#include <vector>

#include "sim/profile/provenance.hpp"

namespace overlapsim::sim {

struct InterferenceCurve {
  // compute_under_comm: an op kind ("gemm", "attention", "elementwise", "embedding",
  // "gemv"); comm_under_compute: a collective ("allreduce", "alltoall", ...).
  std::string victim;
  // compute_under_comm: x = NCCL CTAs running concurrently;
  // comm_under_compute: x = fraction of the GPU's SMs the concurrent compute op holds.
  std::vector<std::pair<double, double>> points;  // x strictly increasing, slowdown >= 1
  Provenance source;

  double slowdown(double x) const;
};

struct InterferenceProfile {
  std::vector<InterferenceCurve> compute_under_comm;
  std::vector<InterferenceCurve> comm_under_compute;

  // 1.0 when the profile has no curve for the victim.
  double compute_slowdown(const std::string& op_kind, double comm_ctas) const;
  double comm_slowdown(const std::string& collective, double compute_sm_fraction) const;
};

}  // namespace overlapsim::sim
