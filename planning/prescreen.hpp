#pragma once
// The analytic pre-screen: two cheap numbers per configuration, before any discrete-event
// run.
//  - lower_bound_s: no step can be faster. The GEMM and attention FLOPs the step must do
//    (with its recompute mode) at the GPU's peak rate, spread evenly over all GPUs, times
//    the pipeline schedule's bubble factor 1 + (pp - 1) / (microbatches x virtual_stages)
//    (Narayanan et al. 2021, sec. 2.2). Communication, non-GEMM kernels and imbalance only
//    add to it. The planner prunes a configuration whose bound exceeds a simulated step
//    time of the same cluster and node count: it can be neither faster nor, at the same
//    GPU count and price, cheaper.
//  - estimate_s: an ordering heuristic, not a prediction: the bound plus tensor-parallel
//    all-reduces at the NVLink rate and the gradient all-reduce at the NIC rate, neither
//    overlapped (ring: 2 (n - 1) / n x bytes / bandwidth). It decides which configurations
//    the simulator times first, and which fall beyond the simulation cap.
#include "workloads/cluster.hpp"
#include "workloads/model.hpp"

namespace overlapsim::planning {

struct Prescreen {
  double lower_bound_s = 0;
  double estimate_s = 0;
};

// `model` resolved for the cluster's GPUs (configured_model); `peak_flops_per_s` is the
// GPU's peak at the model's precision.
Prescreen prescreen(const workloads::ModelSpec& model, const workloads::ClusterSpec& cluster,
                    double peak_flops_per_s);

}  // namespace overlapsim::planning
