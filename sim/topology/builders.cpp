#include "sim/topology/builders.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace overlapsim::sim {

namespace {

void require(bool ok, const char* spec, const char* field, const std::string& value,
             const char* expected) {
  if (!ok)
    throw std::invalid_argument(
        fmt::format("{}.{}: {} (expected {})", spec, field, value, expected));
}

void require_count(int value, const char* spec, const char* field) {
  require(value >= 1, spec, field, std::to_string(value), "an integer >= 1");
}

void require_bandwidth(double value_Bps, const char* spec, const char* field) {
  require(value_Bps > 0 && std::isfinite(value_Bps), spec, field, fmt::format("{}", value_Bps),
          "a bandwidth > 0 in bytes/s");
}

void require_latency(double value_s, const char* spec, const char* field) {
  require(value_s >= 0 && std::isfinite(value_s), spec, field, fmt::format("{}", value_s),
          "a latency >= 0 in seconds");
}

// FlatSwitchSpec and RingSpec carry the same fields: NPUs, one link class, host grouping.
template <typename Spec>
void validate_npu_fabric(const Spec& spec, const char* name) {
  require_count(spec.npus, name, "npus");
  require(spec.npus <= kMaxRanks, name, "npus", std::to_string(spec.npus),
          fmt::format("at most {} NPUs", kMaxRanks).c_str());
  require_bandwidth(spec.link_bandwidth_Bps, name, "link_bandwidth_Bps");
  require_latency(spec.link_latency_s, name, "link_latency_s");
  require_count(spec.gpus_per_host, name, "gpus_per_host");
}

}  // namespace

void validate(const NvSwitchNodeSpec& spec) {
  require_count(spec.gpus, "NvSwitchNodeSpec", "gpus");
  require(spec.gpus <= kMaxRanks, "NvSwitchNodeSpec", "gpus", std::to_string(spec.gpus),
          fmt::format("at most {} GPUs", kMaxRanks).c_str());
  require_bandwidth(spec.nvlink_bandwidth_Bps, "NvSwitchNodeSpec", "nvlink_bandwidth_Bps");
  require_latency(spec.nvlink_latency_s, "NvSwitchNodeSpec", "nvlink_latency_s");
}

void validate(const PcieBoxSpec& spec) {
  require_count(spec.gpus, "PcieBoxSpec", "gpus");
  require(spec.gpus <= kMaxRanks, "PcieBoxSpec", "gpus", std::to_string(spec.gpus),
          fmt::format("at most {} GPUs", kMaxRanks).c_str());
  require_count(spec.gpus_per_switch, "PcieBoxSpec", "gpus_per_switch");
  require_bandwidth(spec.gpu_link_bandwidth_Bps, "PcieBoxSpec", "gpu_link_bandwidth_Bps");
  require_bandwidth(spec.switch_uplink_bandwidth_Bps, "PcieBoxSpec", "switch_uplink_bandwidth_Bps");
  require_latency(spec.link_latency_s, "PcieBoxSpec", "link_latency_s");
}

void validate(const RailFatTreeSpec& spec) {
  std::visit([](const auto& node) { validate(node); }, spec.node);
  require_count(spec.nodes, "RailFatTreeSpec", "nodes");
  require_count(spec.nics_per_node, "RailFatTreeSpec", "nics_per_node");
  const int gpus = gpus_of(spec.node);
  require(gpus % spec.nics_per_node == 0, "RailFatTreeSpec", "nics_per_node",
          fmt::format("{} with {} GPUs per node", spec.nics_per_node, gpus),
          "a divisor of the GPUs per node");
  require_bandwidth(spec.nic_bandwidth_Bps, "RailFatTreeSpec", "nic_bandwidth_Bps");
  require_bandwidth(spec.gpu_nic_bandwidth_Bps, "RailFatTreeSpec", "gpu_nic_bandwidth_Bps");
  require_latency(spec.gpu_nic_latency_s, "RailFatTreeSpec", "gpu_nic_latency_s");
  require_latency(spec.link_latency_s, "RailFatTreeSpec", "link_latency_s");
  require_count(spec.leaf_down_ports, "RailFatTreeSpec", "leaf_down_ports");
  require_count(spec.spines, "RailFatTreeSpec", "spines");
  require(spec.oversubscription >= 1 && std::isfinite(spec.oversubscription), "RailFatTreeSpec",
          "oversubscription", fmt::format("{}", spec.oversubscription),
          "a ratio >= 1 (1 = non-blocking)");
  const std::int64_t ranks = std::int64_t{spec.nodes} * gpus;
  require(ranks <= kMaxRanks, "RailFatTreeSpec", "nodes",
          fmt::format("{} x {} GPUs = {} GPUs", spec.nodes, gpus, ranks),
          fmt::format("at most {} GPUs", kMaxRanks).c_str());
  const std::int64_t links = rail_fat_tree_links(spec);
  require(links <= kMaxLinks, "RailFatTreeSpec", "spines",
          fmt::format("{} with {} nodes: {} links", spec.spines, spec.nodes, links),
          fmt::format("at most {} links in all: fewer spines or nodes", kMaxLinks).c_str());
}

std::int64_t rail_fat_tree_links(const RailFatTreeSpec& spec) {
  const std::int64_t gpus = gpus_of(spec.node), nodes = spec.nodes;
  const std::int64_t rails = spec.nics_per_node;
  const std::int64_t leaves = rails * ((nodes + spec.leaf_down_ports - 1) / spec.leaf_down_ports);
  // Per node: each GPU to its NVSwitch or PCIe switch (plus a PCIe box's switch uplinks),
  // each GPU to its NIC, each NIC to its leaf; then each leaf to each spine.
  std::int64_t server = gpus;
  if (const auto* box = std::get_if<PcieBoxSpec>(&spec.node))
    server += (gpus + box->gpus_per_switch - 1) / box->gpus_per_switch;
  const std::int64_t per_node = server + gpus + rails;
  const std::int64_t spine_cables = leaves > 1 ? leaves * spec.spines : 0;
  return 2 * (nodes * per_node + spine_cables);
}

void validate(const FlatSwitchSpec& spec) { validate_npu_fabric(spec, "FlatSwitchSpec"); }

void validate(const RingSpec& spec) { validate_npu_fabric(spec, "RingSpec"); }

int gpus_of(const NodeSpec& spec) {
  return std::visit([](const auto& node) { return node.gpus; }, spec);
}

std::vector<VertexId> add_nvswitch_node(Topology& topo, const NvSwitchNodeSpec& spec, int host) {
  validate(spec);
  const VertexId nvswitch =
      topo.add_node(NodeKind::NvSwitch, fmt::format("n{}.nvswitch", host), host);
  std::vector<VertexId> gpus;
  for (int g = 0; g < spec.gpus; ++g) {
    gpus.push_back(topo.add_gpu(host, fmt::format("n{}.gpu{}", host, g)));
    topo.connect(gpus.back(), nvswitch, spec.nvlink_bandwidth_Bps, spec.nvlink_latency_s,
                 LinkClass::NvLink);
  }
  return gpus;
}

std::vector<VertexId> add_pcie_box(Topology& topo, const PcieBoxSpec& spec, int host) {
  validate(spec);
  const VertexId bridge =
      topo.add_node(NodeKind::HostBridge, fmt::format("n{}.host-bridge", host), host);
  std::vector<VertexId> gpus;
  VertexId pcie_switch = bridge;
  for (int g = 0; g < spec.gpus; ++g) {
    if (g % spec.gpus_per_switch == 0) {
      pcie_switch = topo.add_node(NodeKind::PcieSwitch,
                                  fmt::format("n{}.pcie{}", host, g / spec.gpus_per_switch), host);
      topo.connect(pcie_switch, bridge, spec.switch_uplink_bandwidth_Bps, spec.link_latency_s,
                   LinkClass::Pcie);
    }
    gpus.push_back(topo.add_gpu(host, fmt::format("n{}.gpu{}", host, g)));
    topo.connect(gpus.back(), pcie_switch, spec.gpu_link_bandwidth_Bps, spec.link_latency_s,
                 LinkClass::Pcie);
  }
  return gpus;
}

std::vector<VertexId> add_server(Topology& topo, const NodeSpec& spec, int host) {
  return std::visit(
      [&](const auto& node) {
        using T = std::decay_t<decltype(node)>;
        if constexpr (std::is_same_v<T, NvSwitchNodeSpec>)
          return add_nvswitch_node(topo, node, host);
        else
          return add_pcie_box(topo, node, host);
      },
      spec);
}

namespace {

// A topology of one server as host 0 (add_server validates the spec first).
Topology single_server(const NodeSpec& spec, std::string name) {
  Topology topo(std::move(name));
  topo.set_gpus_forward(false);
  add_server(topo, spec, 0);
  return topo;
}

}  // namespace

Topology build_nvswitch_node(const NvSwitchNodeSpec& spec) {
  return single_server(spec, fmt::format("nvswitch-{}gpu", spec.gpus));
}

Topology build_pcie_box(const PcieBoxSpec& spec) {
  return single_server(spec, fmt::format("pcie-{}gpu", spec.gpus));
}

Topology build_rail_fat_tree(const RailFatTreeSpec& spec) {
  validate(spec);
  const int gpus_per_node = gpus_of(spec.node);
  const int rails = spec.nics_per_node;
  const int gpus_per_nic = gpus_per_node / rails;
  const int leaves_per_rail = (spec.nodes + spec.leaf_down_ports - 1) / spec.leaf_down_ports;
  Topology topo(fmt::format("rail-fat-tree-{}x{}", spec.nodes, gpus_per_node));
  topo.set_gpus_forward(false);

  // Leaves first so that their vertex ids are stable: leaf (rail r, index l).
  std::vector<VertexId> leaves;
  std::vector<int> nics_on_leaf(static_cast<std::size_t>(rails * leaves_per_rail), 0);
  for (int r = 0; r < rails; ++r)
    for (int l = 0; l < leaves_per_rail; ++l)
      leaves.push_back(topo.add_node(NodeKind::LeafSwitch, fmt::format("rail{}.leaf{}", r, l)));

  for (int n = 0; n < spec.nodes; ++n) {
    const std::vector<VertexId> gpus = add_server(topo, spec.node, n);
    const int leaf_index = n / spec.leaf_down_ports;
    for (int r = 0; r < rails; ++r) {
      const VertexId nic = topo.add_node(NodeKind::Nic, fmt::format("n{}.nic{}", n, r), n);
      for (int g = r * gpus_per_nic; g < (r + 1) * gpus_per_nic; ++g)
        topo.connect(gpus[static_cast<std::size_t>(g)], nic, spec.gpu_nic_bandwidth_Bps,
                     spec.gpu_nic_latency_s, LinkClass::Pcie);
      const std::size_t leaf = static_cast<std::size_t>(r * leaves_per_rail + leaf_index);
      topo.connect(nic, leaves[leaf], spec.nic_bandwidth_Bps, spec.link_latency_s,
                   LinkClass::Network);
      ++nics_on_leaf[leaf];
    }
  }

  // One leaf in all (one rail, few nodes): nothing ever needs a spine.
  if (leaves.size() == 1) return topo;
  std::vector<VertexId> spines;
  for (int s = 0; s < spec.spines; ++s)
    spines.push_back(topo.add_node(NodeKind::SpineSwitch, fmt::format("spine{}", s)));
  for (std::size_t l = 0; l < leaves.size(); ++l) {
    const double uplink_Bps = nics_on_leaf[l] * spec.nic_bandwidth_Bps /
                              (spec.oversubscription * static_cast<double>(spec.spines));
    for (const VertexId spine : spines)
      topo.connect(leaves[l], spine, uplink_Bps, spec.link_latency_s, LinkClass::Network);
  }
  return topo;
}

Topology build_flat_switch(const FlatSwitchSpec& spec) {
  validate(spec);
  Topology topo(fmt::format("switch-{}", spec.npus));
  topo.set_gpus_forward(false);
  const VertexId sw = topo.add_node(NodeKind::Switch, "switch");
  for (int i = 0; i < spec.npus; ++i)
    topo.connect(topo.add_gpu(i / spec.gpus_per_host, fmt::format("npu{}", i)), sw,
                 spec.link_bandwidth_Bps, spec.link_latency_s, LinkClass::Network);
  return topo;
}

Topology build_ring(const RingSpec& spec) {
  validate(spec);
  Topology topo(fmt::format("ring-{}", spec.npus));
  topo.set_gpus_forward(true);  // NPUs relay around the ring
  std::vector<VertexId> npus;
  for (int i = 0; i < spec.npus; ++i)
    npus.push_back(topo.add_gpu(i / spec.gpus_per_host, fmt::format("npu{}", i)));
  // Two NPUs share one cable; from three on, NPU i links to i+1 and the last to the first.
  const int cables = spec.npus <= 2 ? spec.npus - 1 : spec.npus;
  for (int i = 0; i < cables; ++i)
    topo.connect(npus[static_cast<std::size_t>(i)],
                 npus[static_cast<std::size_t>((i + 1) % spec.npus)], spec.link_bandwidth_Bps,
                 spec.link_latency_s, LinkClass::Network);
  return topo;
}

}  // namespace overlapsim::sim
