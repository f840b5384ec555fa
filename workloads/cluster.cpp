#include "workloads/cluster.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "config/error.hpp"
#include "config/units.hpp"
#include "sim/topology/builders.hpp"

namespace overlapsim::workloads {

using config::ConfigNode;
using config::ParamDoc;

namespace {

const std::vector<std::string> kIntraKinds = {"nvswitch", "pcie", "none"};
const std::vector<std::string> kInterKinds = {"rail-fat-tree", "switch", "ring", "none"};

IntraNodeKind intra_kind(const std::string& name) {
  if (name == "nvswitch") return IntraNodeKind::NvSwitch;
  if (name == "pcie") return IntraNodeKind::Pcie;
  return IntraNodeKind::None;
}

InterNodeKind inter_kind(const std::string& name) {
  if (name == "rail-fat-tree") return InterNodeKind::RailFatTree;
  if (name == "switch") return InterNodeKind::Switch;
  if (name == "ring") return InterNodeKind::Ring;
  return InterNodeKind::None;
}

// Keys of `section` must come from `allowed` (a subset of the section's documented keys
// that applies to its kind); a documented key of another kind gets its own message.
void check_kind_keys(const ConfigNode& section, const std::string& kind,
                     const std::vector<std::string>& allowed) {
  for (const std::string& key : section.keys())
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      section.fail_key(key, fmt::format("does not apply to kind '{}' (expected only: {})", kind,
                                        fmt::join(allowed, ", ")));
}

int get_count(const ConfigNode& node, const std::string& key) {
  const std::int64_t v = node.get_positive_int(key);
  if (v > 1'000'000) node.fail_key(key, fmt::format("{} is too large (expected <= 1000000)", v));
  return static_cast<int>(v);
}

int get_count(const ConfigNode& node, const std::string& key, int def) {
  return node.has(key) ? get_count(node, key) : def;
}

double get_latency(const ConfigNode& node, const std::string& key) {
  const double v = node.get_duration_s(key);
  if (!(v >= 0)) node.fail_key(key, fmt::format("{} is negative (expected a duration >= 0)", v));
  return v;
}

std::string get_source(const ConfigNode& section) {
  if (!section.has("source"))
    section.fail_key("source",
                     "missing (expected a string naming the datasheet, paper or "
                     "measurement these numbers come from)");
  const std::string source = section.get_string("source");
  if (source.empty()) section.fail_key("source", "is empty (expected a citation)");
  return source;
}

// A value written plainly (cited by the section's `source:`) or as {value:, source:}.
template <class T, class Parse>
std::optional<Cited<T>> get_cited(const ConfigNode& section, const std::string& key,
                                  const std::string& section_source, Parse parse) {
  if (!section.has(key)) return std::nullopt;
  const ConfigNode node = section.child(key);
  if (node.is_map()) {
    node.check_keys(std::vector<std::string>{"value", "source"});
    const std::string source = node.get_string("source");
    if (source.empty()) node.fail_key("source", "is empty (expected a citation)");
    return Cited<T>{parse(node.child("value")), source};
  }
  if (section_source.empty())
    section.fail_key(key,
                     "has no source (expected a `source:` in this section, or "
                     "{value: ..., source: \"...\"})");
  return Cited<T>{parse(node), section_source};
}

// Profiles are named relative to the cluster file, to any folder above it (so a path from
// the repository root works for files inside the repository), or to the working directory.
std::string resolve_profile(const ConfigNode& gpu, const std::string& cluster_file) {
  namespace fs = std::filesystem;
  const std::string text = gpu.get_string("profile");
  const fs::path profile(text);
  std::vector<fs::path> candidates;
  if (profile.is_absolute()) {
    candidates.push_back(profile);
  } else {
    for (fs::path dir = fs::path(cluster_file).parent_path();; dir = dir.parent_path()) {
      candidates.push_back(dir / profile);
      if (dir.empty() || dir == dir.parent_path()) break;
    }
    candidates.push_back(profile);  // the working directory
  }
  for (const fs::path& candidate : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return candidate.lexically_normal().string();
  }
  gpu.fail_key("profile", fmt::format("'{}' not found (expected a profile file, relative to the "
                                      "repository root or to this cluster file)",
                                      text));
}

GpuSpec parse_gpu(const ConfigNode& gpu, const std::string& cluster_file) {
  gpu.check_keys(gpu_params());
  GpuSpec spec;
  spec.name = gpu.get_string("name", "");
  if (gpu.has("profile")) spec.profile_path = resolve_profile(gpu, cluster_file);
  const std::string source = gpu.has("source") ? get_source(gpu) : "";
  spec.peak_bf16_flops = get_cited<double>(gpu, "peak_bf16_flops", source,
                                           [](const ConfigNode& n) { return n.as_flops_per_s(); });
  spec.peak_fp8_flops = get_cited<double>(gpu, "peak_fp8_flops", source,
                                          [](const ConfigNode& n) { return n.as_flops_per_s(); });
  spec.memory_bandwidth_Bps =
      get_cited<double>(gpu, "memory_bandwidth_Bps", source,
                        [](const ConfigNode& n) { return n.as_bandwidth_Bps(); });
  spec.memory_bytes =
      get_cited<std::uint64_t>(gpu, "memory_bytes", source, [](const ConfigNode& n) {
        const std::uint64_t v = n.as_bytes();
        if (v == 0) n.fail("0 is not a memory size (expected a size > 0)");
        return v;
      });
  spec.power_W = get_cited<double>(gpu, "power_W", source, [](const ConfigNode& n) {
    const std::string text = n.as_string();
    const auto v = config::parse_power_W(text);
    if (!v || *v <= 0)
      n.fail(fmt::format("'{}' is not a power > 0 (expected {})", text, config::kExpectedPower));
    return *v;
  });
  const bool has_peaks =
      spec.peak_bf16_flops || spec.peak_fp8_flops || spec.memory_bandwidth_Bps || spec.memory_bytes;
  if (spec.profile_path.empty() && !has_peaks)
    gpu.fail(
        "names no profile and no datasheet peaks (expected `profile:` and/or "
        "peak_bf16_flops, peak_fp8_flops, memory_bandwidth_Bps, memory_bytes)");
  return spec;
}

IntraNodeSpec parse_intra(const ConfigNode& intra) {
  intra.check_keys(intra_node_params());
  IntraNodeSpec spec;
  const std::string kind = intra.get_enum("kind", kIntraKinds);
  spec.kind = intra_kind(kind);
  switch (spec.kind) {
    case IntraNodeKind::None:
      check_kind_keys(intra, kind, {"kind"});
      return spec;
    case IntraNodeKind::NvSwitch:
      check_kind_keys(intra, kind, {"kind", "gpu_bandwidth_Bps", "latency_s", "source"});
      break;
    case IntraNodeKind::Pcie:
      spec.gpus_per_switch = get_count(intra, "gpus_per_switch");
      spec.switch_uplink_bandwidth_Bps = intra.get_bandwidth_Bps("switch_uplink_bandwidth_Bps");
      break;
  }
  spec.gpu_bandwidth_Bps = intra.get_bandwidth_Bps("gpu_bandwidth_Bps");
  spec.latency_s = get_latency(intra, "latency_s");
  spec.source = get_source(intra);
  return spec;
}

InterNodeSpec parse_inter(const ConfigNode& inter, int gpus_per_node) {
  inter.check_keys(inter_node_params());
  InterNodeSpec spec;
  const std::string kind = inter.get_enum("kind", kInterKinds);
  spec.kind = inter_kind(kind);
  switch (spec.kind) {
    case InterNodeKind::None:
      check_kind_keys(inter, kind, {"kind"});
      return spec;
    case InterNodeKind::Switch:
    case InterNodeKind::Ring:
      check_kind_keys(inter, kind, {"kind", "nic_bandwidth_Bps", "link_latency_s", "source"});
      break;
    case InterNodeKind::RailFatTree: {
      spec.nics_per_node = get_count(inter, "nics_per_node", gpus_per_node);
      if (gpus_per_node % spec.nics_per_node != 0)
        inter.fail_key("nics_per_node",
                       fmt::format("{} does not divide gpus_per_node {} (expected a divisor)",
                                   spec.nics_per_node, gpus_per_node));
      spec.gpu_nic_bandwidth_Bps = inter.get_bandwidth_Bps("gpu_nic_bandwidth_Bps");
      spec.gpu_nic_latency_s = get_latency(inter, "gpu_nic_latency_s");
      spec.leaf_radix = get_count(inter, "leaf_radix", 32);
      spec.spines = get_count(inter, "spines", 1);
      spec.oversubscription = inter.get_double("oversubscription", 1.0);
      if (!(spec.oversubscription >= 1))
        inter.fail_key("oversubscription",
                       fmt::format("{} is below 1 (expected a ratio >= 1; 1 is non-blocking)",
                                   spec.oversubscription));
      break;
    }
  }
  spec.nic_bandwidth_Bps = inter.get_bandwidth_Bps("nic_bandwidth_Bps");
  spec.link_latency_s = get_latency(inter, "link_latency_s");
  spec.source = get_source(inter);
  return spec;
}

std::string where(const ClusterSpec& spec) {
  return spec.file.empty() ? fmt::format("'{}'", spec.name)
                           : fmt::format("'{}' ({})", spec.name, spec.file);
}

}  // namespace

const char* to_string(IntraNodeKind kind) {
  switch (kind) {
    case IntraNodeKind::NvSwitch:
      return "nvswitch";
    case IntraNodeKind::Pcie:
      return "pcie";
    case IntraNodeKind::None:
      return "none";
  }
  return "unknown";
}

const char* to_string(InterNodeKind kind) {
  switch (kind) {
    case InterNodeKind::RailFatTree:
      return "rail-fat-tree";
    case InterNodeKind::Switch:
      return "switch";
    case InterNodeKind::Ring:
      return "ring";
    case InterNodeKind::None:
      return "none";
  }
  return "unknown";
}

const std::vector<ParamDoc>& cluster_params() {
  static const std::vector<ParamDoc> params = {
      {"name", "cluster name, used in reports", "", ""},
      {"description", "free text", "\"\"", ""},
      {"nodes", "number of servers", "", "count"},
      {"gpus_per_node", "GPUs in each server", "", "count"},
      {"gpu", "the GPU: a calibration profile and/or datasheet peaks", "(none)", "section"},
      {"intra_node", "fabric inside a server", "kind: none", "section"},
      {"inter_node", "fabric between servers", "kind: none", "section"},
      {"price_per_gpu_hour_usd", "price of one GPU for one hour, {value:, source:}", "(none)",
       "USD"},
  };
  return params;
}

const std::vector<ParamDoc>& gpu_params() {
  static const std::vector<ParamDoc> params = {
      {"name", "GPU model name", "\"\"", ""},
      {"profile", "calibration profile YAML, relative to the repo root or this file", "(none)",
       "path"},
      {"peak_bf16_flops", "dense BF16 tensor-core peak", "(none)", "FLOP/s"},
      {"peak_fp8_flops", "dense FP8 tensor-core peak", "(none)", "FLOP/s"},
      {"memory_bandwidth_Bps", "device memory bandwidth", "(none)", "bytes/s"},
      {"memory_bytes", "device memory capacity", "(none)", "bytes"},
      {"power_W", "board power at full load (TDP/TGP), for energy estimates", "(none)", "W"},
      {"source", "citation for the plain values of this section", "(required with peaks)", ""},
  };
  return params;
}

const std::vector<ParamDoc>& intra_node_params() {
  static const std::vector<ParamDoc> params = {
      {"kind", "nvswitch | pcie | none", "", ""},
      {"gpu_bandwidth_Bps", "per GPU, per direction: NVLink to the NVSwitch, or PCIe to its switch",
       "", "bytes/s"},
      {"latency_s", "per hop (a GPU-to-GPU path has 2 hops, or 4 across PCIe switches)", "", "s"},
      {"gpus_per_switch", "pcie: GPUs under each PCIe switch", "", "count"},
      {"switch_uplink_bandwidth_Bps", "pcie: PCIe switch <-> host bridge, per direction", "",
       "bytes/s"},
      {"source", "citation for this section's numbers", "", ""},
  };
  return params;
}

const std::vector<ParamDoc>& inter_node_params() {
  static const std::vector<ParamDoc> params = {
      {"kind", "rail-fat-tree | switch | ring | none", "", ""},
      {"nics_per_node", "rail-fat-tree: NICs (rails) per server", "gpus_per_node", "count"},
      {"nic_bandwidth_Bps", "per NIC (switch, ring: per GPU link), per direction", "", "bytes/s"},
      {"gpu_nic_bandwidth_Bps", "rail-fat-tree: GPU <-> NIC PCIe link, per direction", "",
       "bytes/s"},
      {"gpu_nic_latency_s", "rail-fat-tree: GPU <-> NIC hop (PCIe and NIC processing)", "", "s"},
      {"link_latency_s", "per network hop (cable plus switch traversal)", "", "s"},
      {"leaf_radix", "rail-fat-tree: NIC ports per leaf switch", "32", "count"},
      {"spines", "rail-fat-tree: spine switches; 1 = ideally balanced spine layer", "1", "count"},
      {"oversubscription", "rail-fat-tree: leaf down/up capacity ratio, >= 1", "1", "ratio"},
      {"source", "citation for this section's numbers", "", ""},
  };
  return params;
}

ClusterSpec parse_cluster(const ConfigNode& root) {
  if (!root.is_map()) root.fail("expected a map of cluster keys (name, nodes, gpus_per_node, ...)");
  root.check_keys(cluster_params());
  ClusterSpec spec;
  spec.file = root.file();
  spec.name = root.get_string("name");
  spec.nodes = get_count(root, "nodes");
  spec.gpus_per_node = get_count(root, "gpus_per_node");
  if (static_cast<std::int64_t>(spec.nodes) * spec.gpus_per_node > 1'000'000)
    root.fail_key("nodes", "nodes x gpus_per_node is over 1000000 (expected a smaller cluster)");
  if (const auto gpu = root.optional_child("gpu")) spec.gpu = parse_gpu(*gpu, root.file());
  const auto intra = root.optional_child("intra_node");
  const auto inter = root.optional_child("inter_node");
  if (intra) spec.intra_node = parse_intra(*intra);
  if (inter) spec.inter_node = parse_inter(*inter, spec.gpus_per_node);
  if (root.has("price_per_gpu_hour_usd")) {
    const ConfigNode price = root.child("price_per_gpu_hour_usd");
    if (!price.is_map())
      price.fail("expected {value: <USD per GPU-hour>, source: \"<where the price is from>\"}");
    spec.price_per_gpu_hour_usd =
        get_cited<double>(root, "price_per_gpu_hour_usd", "", [](const ConfigNode& n) {
          const double v = n.as_double();
          if (!(v >= 0)) n.fail("is negative (expected >= 0)");
          return v;
        });
  }

  // How the sections fit together.
  const IntraNodeKind ik = spec.intra_node.kind;
  const InterNodeKind ek = spec.inter_node.kind;
  const bool direct = ek == InterNodeKind::Switch || ek == InterNodeKind::Ring;
  if (ek == InterNodeKind::None && spec.nodes > 1)
    root.fail_key("nodes", fmt::format("{} nodes need an inter_node fabric (expected nodes: 1, or "
                                       "inter_node kind rail-fat-tree, switch or ring)",
                                       spec.nodes));
  if (direct && ik != IntraNodeKind::None)
    intra->fail_key("kind", fmt::format("inter_node kind '{}' links every GPU straight to the "
                                        "network (expected intra_node kind none, or no intra_node)",
                                        to_string(ek)));
  if (ek == InterNodeKind::RailFatTree && ik == IntraNodeKind::None)
    (intra ? *intra : root)
        .fail_key(intra ? "kind" : "intra_node",
                  "a rail-fat-tree joins servers with an intra-node fabric (expected intra_node "
                  "kind nvswitch or pcie)");
  if (ik == IntraNodeKind::None && !direct && spec.gpus_per_node > 1)
    root.fail_key("gpus_per_node",
                  fmt::format("{} GPUs per node need an intra_node fabric (expected "
                              "gpus_per_node: 1, or intra_node kind nvswitch or pcie)",
                              spec.gpus_per_node));
  return spec;
}

ClusterSpec load_cluster(const std::string& path) {
  return parse_cluster(ConfigNode::load_file(path));
}

namespace {
sim::Topology build_topology_unchecked(const ClusterSpec& spec);
}  // namespace

sim::Topology build_topology(const ClusterSpec& spec) {
  // The builders check sizes (GPU and link counts) before allocating: their complaint is
  // about this cluster's keys.
  try {
    return build_topology_unchecked(spec);
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError(fmt::format("cluster {}: {}", where(spec), e.what()));
  }
}

namespace {
sim::Topology build_topology_unchecked(const ClusterSpec& spec) {
  if (spec.nodes < 1 || spec.gpus_per_node < 1)
    throw config::ConfigError(
        fmt::format("cluster {}: nodes {} and gpus_per_node {} must be >= 1", where(spec),
                    spec.nodes, spec.gpus_per_node));
  const IntraNodeSpec& intra = spec.intra_node;
  const InterNodeSpec& inter = spec.inter_node;
  sim::NodeSpec node;
  if (intra.kind == IntraNodeKind::Pcie)
    node = sim::PcieBoxSpec{spec.gpus_per_node, intra.gpus_per_switch, intra.gpu_bandwidth_Bps,
                            intra.switch_uplink_bandwidth_Bps, intra.latency_s};
  else
    node = sim::NvSwitchNodeSpec{spec.gpus_per_node, intra.gpu_bandwidth_Bps, intra.latency_s};

  sim::Topology topo;
  switch (inter.kind) {
    case InterNodeKind::None:
      if (spec.nodes != 1)
        throw config::ConfigError(
            fmt::format("cluster {}: {} nodes but no inter-node fabric", where(spec), spec.nodes));
      if (intra.kind == IntraNodeKind::None) {
        if (spec.gpus_per_node != 1)
          throw config::ConfigError(
              fmt::format("cluster {}: {} GPUs per node but no intra-node fabric", where(spec),
                          spec.gpus_per_node));
        topo.add_gpu(0, "gpu0");
      } else if (intra.kind == IntraNodeKind::Pcie) {
        topo = sim::build_pcie_box(std::get<sim::PcieBoxSpec>(node));
      } else {
        topo = sim::build_nvswitch_node(std::get<sim::NvSwitchNodeSpec>(node));
      }
      break;
    case InterNodeKind::Switch:
      topo = sim::build_flat_switch(
          {spec.num_gpus(), inter.nic_bandwidth_Bps, inter.link_latency_s, spec.gpus_per_node});
      break;
    case InterNodeKind::Ring:
      topo = sim::build_ring(
          {spec.num_gpus(), inter.nic_bandwidth_Bps, inter.link_latency_s, spec.gpus_per_node});
      break;
    case InterNodeKind::RailFatTree: {
      if (intra.kind == IntraNodeKind::None)
        throw config::ConfigError(
            fmt::format("cluster {}: a rail-fat-tree needs an intra-node fabric", where(spec)));
      sim::RailFatTreeSpec tree;
      tree.nodes = spec.nodes;
      tree.node = node;
      tree.nics_per_node = inter.nics_per_node;
      tree.nic_bandwidth_Bps = inter.nic_bandwidth_Bps;
      tree.gpu_nic_bandwidth_Bps = inter.gpu_nic_bandwidth_Bps;
      tree.gpu_nic_latency_s = inter.gpu_nic_latency_s;
      tree.link_latency_s = inter.link_latency_s;
      tree.leaf_down_ports = inter.leaf_radix;
      tree.spines = inter.spines;
      tree.oversubscription = inter.oversubscription;
      topo = sim::build_rail_fat_tree(tree);
      break;
    }
  }
  topo.set_name(spec.name);
  return topo;
}
}  // namespace

void validate_rank(const ClusterSpec& spec, int rank) {
  if (rank < 0 || rank >= spec.num_gpus())
    throw config::ConfigError(fmt::format("rank {} is outside cluster {}: {} GPUs, ranks 0..{}",
                                            rank, where(spec), spec.num_gpus(),
                                            spec.num_gpus() - 1));
}

void validate_rank_count(const ClusterSpec& spec, int ranks) {
  if (ranks < 1 || ranks > spec.num_gpus())
    throw config::ConfigError(
        fmt::format("{} ranks do not fit cluster {}: {} GPUs (expected "
                    "1..{})",
                    ranks, where(spec), spec.num_gpus(), spec.num_gpus()));
}

}  // namespace overlapsim::workloads
