#pragma once
// A device profile: everything the simulator knows about one GPU (and its NCCL) — what
// the device is, how fast it computes, how its collectives scale, how compute and
// communication interfere, and the overlap designs' overheads. Loaded from YAML by
// sim::load_profile (docs/profile-format.md); sim/ never reads YAML itself.
#include <optional>
#include <string>
#include <vector>

#include "sim/profile/collective_profile.hpp"
#include "sim/profile/compute_profile.hpp"
#include "sim/profile/design_params.hpp"
#include "sim/profile/heldout_errors.hpp"

namespace overlapsim::sim {

struct DeviceInfo {
  std::string name;  // e.g. "NVIDIA H200 SXM 141GB"
  int sms = 0;
  // Per-direction NVLink rate NCCL's kernels reach from one GPU (bus bandwidth of a large
  // ring collective), below the links' line rate: SM-issued stores carry 128-byte payloads.
  // Absent: the cluster's line rate. Read by the cluster path of intra-host collectives.
  std::optional<Sourced> nccl_nvlink_bandwidth_Bps;
  // Software and provenance of measured profiles; empty for datasheet profiles.
  std::string driver, cuda, nccl, date, host;
};

// One number of the profile and where it came from, for reports.
struct SourceEntry {
  std::string what;  // e.g. "compute.peak_flops_per_s.bf16"
  Provenance source;
};

struct Profile {
  std::string name;  // the file's stem, e.g. "datasheet-h200"
  std::string path;
  DeviceInfo device;
  ComputeProfile compute;
  CollectiveProfile collectives;
  DesignParams designs;
  std::string measurements;  // path of the raw CSV it was fitted from; empty if none
  HeldOutErrors validation;  // held-out errors `overlapsim validate --record` wrote; may be empty

  // Every sourced number or table, in a fixed order.
  std::vector<SourceEntry> sources() const;
  // "measured", "datasheet", "paper", "assumed" joined with '+' in that order, for the kinds
  // present (e.g. "measured+datasheet").
  std::string source_kinds() const;
};

}  // namespace overlapsim::sim
