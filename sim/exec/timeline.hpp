#pragma once
// Op intervals recorded during a step, for traces (sim/trace) and debugging.
#include <string>
#include <vector>

#include "sim/graph/op_graph.hpp"

namespace overlapsim::sim {

struct OpRecord {
  int rank = 0;  // global rank
  StreamKind stream = StreamKind::Compute;
  OpKind kind = OpKind::Elementwise;
  Phase phase = Phase::Forward;
  std::string name;
  double ready_s = 0;  // reached the head of its stream with its inputs done
  double start_s = 0;  // began occupying the stream (compute) or moving data (comm)
  double end_s = 0;
  double flops = 0;
  std::uint64_t bytes = 0;  // memory traffic (compute) or message size (comm)
};

// A sample of cumulative bytes carried per link class (for utilisation counters).
struct LinkSample {
  double t_s = 0;
  std::vector<double> bytes;  // index: the class order given by ExecOptions::link_classes
};

struct Timeline {
  std::vector<OpRecord> ops;
  std::vector<std::string> link_classes;
  std::vector<double> link_capacity_Bps;  // per class, all its links together; empty: unknown
  std::vector<LinkSample> link_samples;
};

}  // namespace overlapsim::sim
