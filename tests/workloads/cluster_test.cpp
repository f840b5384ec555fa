#include "workloads/cluster.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "config/error.hpp"


namespace overlapsim::workloads {
namespace {

// Absolute (the source directory is the working directory, OVERLAPSIM_SOURCE_DIR "."): a
// test below needs a cluster named by an absolute path.
const std::string kClusters =
    std::filesystem::absolute(OVERLAPSIM_SOURCE_DIR).string() + "/workloads/clusters/";

ClusterSpec parse(const std::string& yaml) {
  return parse_cluster(config::ConfigNode::load_string(yaml, "bad.yaml"));
}

// Parsing `yaml` must fail with a message containing each of `parts`.
void expect_cluster_error(const std::string& yaml, const std::vector<std::string>& parts) {
  try {
    parse(yaml);
    ADD_FAILURE() << "no error for:\n" << yaml;
  } catch (const config::ConfigError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    for (const auto& part : parts)
      EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
}

const std::string kNvswitchNode = R"(name: t
nodes: 2
gpus_per_node: 8
intra_node:
  kind: nvswitch
  gpu_bandwidth_Bps: 450GBps
  latency_s: 0.3us
  source: test
inter_node:
  kind: rail-fat-tree
  nic_bandwidth_Bps: 400Gbps
  gpu_nic_bandwidth_Bps: 63GBps
  gpu_nic_latency_s: 1us
  link_latency_s: 0.15us
  source: test
)";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(Cluster, H200NodeLoadsAndBuilds) {
  const ClusterSpec spec = load_cluster(kClusters + "h200-8gpu.yaml");
  EXPECT_EQ(spec.name, "h200-8gpu");
  EXPECT_EQ(spec.num_gpus(), 8);
  EXPECT_EQ(spec.intra_node.kind, IntraNodeKind::NvSwitch);
  EXPECT_DOUBLE_EQ(spec.intra_node.gpu_bandwidth_Bps, 450e9);
  EXPECT_DOUBLE_EQ(spec.intra_node.latency_s, 0.3e-6);
  EXPECT_EQ(spec.inter_node.kind, InterNodeKind::None);
  ASSERT_TRUE(spec.gpu.has_value());
  EXPECT_TRUE(std::filesystem::is_regular_file(spec.gpu->profile_path)) << spec.gpu->profile_path;
  EXPECT_NE(spec.gpu->profile_path.find("calibration/profiles/h200-nvswitch-8gpu.yaml"),
            std::string::npos);
  ASSERT_TRUE(spec.price_per_gpu_hour_usd.has_value());
  EXPECT_GT(spec.price_per_gpu_hour_usd->value, 0);
  EXPECT_FALSE(spec.price_per_gpu_hour_usd->source.empty());
  const sim::Topology topo = build_topology(spec);
  EXPECT_EQ(topo.name(), "h200-8gpu");
  EXPECT_EQ(topo.num_gpus(), 8);
  EXPECT_EQ(topo.route(0, 5).size(), 2u);
}

TEST(Cluster, ProfilePathsResolveFromTheRepoRootAndFromAbsolutePaths) {
  // Relative to the working directory (tests run in the repository root) ...
  const ClusterSpec relative = load_cluster("workloads/clusters/h200x2-nvlink.yaml");
  EXPECT_EQ(relative.gpu->profile_path, "calibration/profiles/h200-nvlink.yaml");
  // ... and found by walking up from an absolute cluster path.
  const ClusterSpec absolute = load_cluster(kClusters + "h200x2-nvlink.yaml");
  EXPECT_TRUE(std::filesystem::path(absolute.gpu->profile_path).is_absolute());
  EXPECT_TRUE(std::filesystem::is_regular_file(absolute.gpu->profile_path));
}

TEST(Cluster, ProfilePathsResolveFromTheWorkingDirectoryForFilesElsewhere) {
  // Unique per process: several test runs may share the machine.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("overlapsim-cluster-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "elsewhere.yaml").string();
  std::ofstream(file) << "name: elsewhere\nnodes: 1\ngpus_per_node: 1\n"
                         "gpu: {profile: calibration/profiles/datasheet-h200.yaml}\n";
  const ClusterSpec spec = load_cluster(file);  // tests run in the repository root
  EXPECT_EQ(spec.gpu->profile_path, "calibration/profiles/datasheet-h200.yaml");
  std::filesystem::remove_all(dir);
}

TEST(Cluster, EveryShippedFileLoadsAndBuilds) {
  struct Expect {
    const char* file;
    int gpus;
    int hosts;
  };
  for (const Expect& e :
       {Expect{"h200-8gpu.yaml", 8, 1}, Expect{"h200x2-nvlink.yaml", 2, 1},
        Expect{"h200-128node-ndr.yaml", 1024, 128},
        Expect{"h200-128node-ndr-oversub2.yaml", 1024, 128},
        Expect{"h100-128node-ndr.yaml", 1024, 128}, Expect{"a100-hdr.yaml", 128, 16},
        Expect{"rtx4090-pcie-8gpu.yaml", 8, 1}, Expect{"switch-1024-50GBps.yaml", 1024, 1024}}) {
    SCOPED_TRACE(e.file);
    const ClusterSpec spec = load_cluster(kClusters + e.file);
    EXPECT_EQ(spec.num_gpus(), e.gpus);
    const sim::Topology topo = build_topology(spec);
    EXPECT_EQ(topo.num_gpus(), e.gpus);
    EXPECT_EQ(topo.num_hosts(), e.hosts);
    EXPECT_FALSE(topo.route(0, e.gpus - 1).empty());
    EXPECT_TRUE(spec.intra_node.kind == IntraNodeKind::None || !spec.intra_node.source.empty());
    EXPECT_TRUE(spec.inter_node.kind == InterNodeKind::None || !spec.inter_node.source.empty());
  }
}

// Every shipped file that names a GPU gives its capacity and board power, cited.
TEST(Cluster, ShippedGpusCarryCitedMemoryAndPower) {
  struct Expect {
    const char* file;
    std::uint64_t memory_bytes;
    double power_W;
  };
  for (const Expect& e :
       {Expect{"h200-8gpu.yaml", 141ull << 30, 700}, Expect{"h200x2-nvlink.yaml", 141ull << 30, 700},
        Expect{"h200-128node-ndr.yaml", 141ull << 30, 700},
        Expect{"h200-128node-ndr-oversub2.yaml", 141ull << 30, 700},
        Expect{"h200-2048node-ndr.yaml", 141ull << 30, 700},
        Expect{"h100-128node-ndr.yaml", 80ull << 30, 700},
        Expect{"a100-hdr.yaml", 80ull << 30, 400},
        Expect{"rtx4090-pcie-8gpu.yaml", 24ull << 30, 450}}) {
    SCOPED_TRACE(e.file);
    const ClusterSpec spec = load_cluster(kClusters + e.file);
    ASSERT_TRUE(spec.gpu && spec.gpu->memory_bytes && spec.gpu->power_W);
    EXPECT_EQ(spec.gpu->memory_bytes->value, e.memory_bytes);
    EXPECT_DOUBLE_EQ(spec.gpu->power_W->value, e.power_W);
    EXPECT_FALSE(spec.gpu->memory_bytes->source.empty());
    EXPECT_FALSE(spec.gpu->power_W->source.empty());
  }
}

TEST(Cluster, PowerUnits) {
  const std::string base = "name: x\nnodes: 1\ngpus_per_node: 1\ngpu:\n  peak_bf16_flops: 1TFLOPS\n"
                           "  source: s\n  power_W: ";
  EXPECT_DOUBLE_EQ(parse(base + "700W\n").gpu->power_W->value, 700);
  EXPECT_DOUBLE_EQ(parse(base + "0.7kW\n").gpu->power_W->value, 700);
  EXPECT_DOUBLE_EQ(parse(base + "350\n").gpu->power_W->value, 350);
  EXPECT_FALSE(parse("name: x\nnodes: 1\ngpus_per_node: 1\ngpu: {peak_bf16_flops: 1, source: s}\n")
                   .gpu->power_W);
  expect_cluster_error(base + "700 Watts\n", {"bad.yaml:7:", "power_W", "not a power", "700W"});
  expect_cluster_error(base + "0W\n", {"bad.yaml:7:", "power_W", "'0W'"});
  expect_cluster_error("name: x\nnodes: 1\ngpus_per_node: 1\ngpu: {peak_bf16_flops: 1, source: s, power_W: 5GB}\n",
               {"bad.yaml:4:", "power_W", "not a power"});
}

TEST(Cluster, The16kGpuFileLoadsAndBuilds) {
  const ClusterSpec spec = load_cluster(kClusters + "h200-2048node-ndr.yaml");
  EXPECT_EQ(spec.num_gpus(), 16384);
  const sim::Topology topo = build_topology(spec);
  EXPECT_EQ(topo.num_gpus(), 16384);
  EXPECT_EQ(topo.route(0, 16383).size(), 6u);
}

TEST(Cluster, NdrFatTreeMatchesTheDatasheetRates) {
  const ClusterSpec spec = load_cluster(kClusters + "h200-128node-ndr.yaml");
  EXPECT_EQ(spec.inter_node.kind, InterNodeKind::RailFatTree);
  EXPECT_EQ(spec.inter_node.nics_per_node, 8);
  EXPECT_DOUBLE_EQ(spec.inter_node.nic_bandwidth_Bps, 50e9);  // 400 Gb/s
  EXPECT_DOUBLE_EQ(spec.inter_node.oversubscription, 1);
  const sim::Topology topo = build_topology(spec);
  // Rank 0 (node 0, rail 0) to rank 1023 (node 127, rail 7): up through the spine.
  const auto path = topo.route(0, 1023);
  ASSERT_EQ(path.size(), 6u);
  EXPECT_DOUBLE_EQ(topo.link(path[1]).bandwidth_Bps, 50e9);
  EXPECT_DOUBLE_EQ(topo.link(path[2]).bandwidth_Bps, 32 * 50e9);  // 32 NICs per leaf, 1:1
  EXPECT_NEAR(topo.path_latency_s(path), 2 * 1e-6 + 4 * 0.15e-6, 1e-15);
}

TEST(Cluster, OversubscribedFileHalvesLeafUplinks) {
  const sim::Topology full = build_topology(load_cluster(kClusters + "h200-128node-ndr.yaml"));
  const sim::Topology half =
      build_topology(load_cluster(kClusters + "h200-128node-ndr-oversub2.yaml"));
  const auto a = full.route(0, 1023), b = half.route(0, 1023);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_DOUBLE_EQ(half.link(b[2]).bandwidth_Bps, full.link(a[2]).bandwidth_Bps / 2);
  EXPECT_DOUBLE_EQ(half.link(b[1]).bandwidth_Bps, full.link(a[1]).bandwidth_Bps);
}

TEST(Cluster, PcieAndSwitchFilesMapOntoTheirBuilders) {
  const ClusterSpec pcie = load_cluster(kClusters + "rtx4090-pcie-8gpu.yaml");
  EXPECT_EQ(pcie.intra_node.kind, IntraNodeKind::Pcie);
  EXPECT_EQ(pcie.intra_node.gpus_per_switch, 2);
  ASSERT_TRUE(pcie.gpu && pcie.gpu->peak_bf16_flops);
  EXPECT_DOUBLE_EQ(pcie.gpu->peak_bf16_flops->value, 165.2e12);
  EXPECT_FALSE(pcie.gpu->peak_bf16_flops->source.empty());
  EXPECT_EQ(pcie.gpu->memory_bytes->value, 24ull << 30);
  ASSERT_TRUE(pcie.gpu->power_W);
  EXPECT_DOUBLE_EQ(pcie.gpu->power_W->value, 450);
  EXPECT_TRUE(pcie.gpu->profile_path.empty());
  EXPECT_EQ(build_topology(pcie).route(0, 7).size(), 4u);

  const ClusterSpec flat = load_cluster(kClusters + "switch-1024-50GBps.yaml");
  EXPECT_FALSE(flat.gpu.has_value());
  const sim::Topology topo = build_topology(flat);
  const auto path = topo.route(3, 900);
  ASSERT_EQ(path.size(), 2u);
  EXPECT_DOUBLE_EQ(topo.link(path[0]).bandwidth_Bps, 50e9);
  EXPECT_DOUBLE_EQ(topo.path_latency_s(path), 1e-6);
}

TEST(Cluster, RingAndChangedNodeCounts) {
  const ClusterSpec ring = parse(R"(name: r
nodes: 16
gpus_per_node: 1
inter_node: {kind: ring, nic_bandwidth_Bps: 50GBps, link_latency_s: 1us, source: test}
)");
  const sim::Topology topo = build_topology(ring);
  EXPECT_EQ(topo.route(0, 8).size(), 8u);
  EXPECT_EQ(topo.route(0, 15).size(), 1u);

  ClusterSpec a100 = load_cluster(kClusters + "a100-hdr.yaml");
  a100.nodes = 4;  // resized in code, as a sweep would
  EXPECT_EQ(build_topology(a100).num_gpus(), 32);
  a100.nodes = 0;
  EXPECT_THROW(build_topology(a100), config::ConfigError);
}

TEST(Cluster, ValidateRank) {
  const ClusterSpec spec = load_cluster(kClusters + "h200-8gpu.yaml");
  EXPECT_NO_THROW(validate_rank(spec, 0));
  EXPECT_NO_THROW(validate_rank(spec, 7));
  try {
    validate_rank(spec, 8);
    ADD_FAILURE();
  } catch (const config::ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("rank 8"), std::string::npos) << message;
    EXPECT_NE(message.find("h200-8gpu"), std::string::npos) << message;
    EXPECT_NE(message.find("0..7"), std::string::npos) << message;
  }
  EXPECT_THROW(validate_rank(spec, -1), config::ConfigError);
  EXPECT_NO_THROW(validate_rank_count(spec, 8));
  EXPECT_THROW(validate_rank_count(spec, 9), config::ConfigError);
  EXPECT_THROW(validate_rank_count(spec, 0), config::ConfigError);
}

TEST(ClusterErrors, MissingFile) {
  try {
    load_cluster("workloads/clusters/no-such-cluster.yaml");
    ADD_FAILURE();
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-cluster.yaml"), std::string::npos);
  }
}

TEST(ClusterErrors, UnknownKeys) {
  expect_cluster_error(kNvswitchNode + "colour: blue\n", {"bad.yaml:16:1", "colour", "unknown key"});
  expect_cluster_error(replace(kNvswitchNode, "  latency_s: 0.3us\n", "  latency_s: 0.3us\n  lanes: 4\n"),
               {"bad.yaml:8:3", "intra_node.lanes", "unknown key"});
  // A documented key of another kind.
  expect_cluster_error(
      replace(kNvswitchNode, "  latency_s: 0.3us\n", "  latency_s: 0.3us\n  gpus_per_switch: 2\n"),
      {"bad.yaml:8:", "intra_node.gpus_per_switch", "does not apply to kind 'nvswitch'"});
}

TEST(ClusterErrors, MissingFields) {
  expect_cluster_error(replace(kNvswitchNode, "nodes: 2\n", ""), {"bad.yaml:1:1", "nodes", "missing"});
  expect_cluster_error(replace(kNvswitchNode, "  nic_bandwidth_Bps: 400Gbps\n", ""),
               {"bad.yaml:", "inter_node.nic_bandwidth_Bps", "missing"});
  expect_cluster_error(replace(kNvswitchNode, "  source: test\ninter_node", "inter_node"),
               {"bad.yaml:", "intra_node.source", "missing"});
  expect_cluster_error("name: x\nnodes: 1\ngpus_per_node: 1\ngpu: {name: g}\n",
               {"bad.yaml:4:6", "gpu", "no profile"});
  expect_cluster_error("name: x\nnodes: 1\ngpus_per_node: 1\ngpu: {peak_bf16_flops: 1TFLOPS}\n",
               {"bad.yaml:4:", "gpu.peak_bf16_flops", "no source"});
}

TEST(ClusterErrors, WrongUnitsAndValues) {
  expect_cluster_error(replace(kNvswitchNode, "450GBps", "450GHz"),
               {"bad.yaml:6:22", "intra_node.gpu_bandwidth_Bps", "not a bandwidth", "400Gbps"});
  expect_cluster_error(replace(kNvswitchNode, "0.3us", "0.3 parsecs"),
               {"bad.yaml:7:14", "intra_node.latency_s", "not a duration"});
  expect_cluster_error(replace(kNvswitchNode, "0.3us", "-1us"),
               {"bad.yaml:7:14", "intra_node.latency_s", "'-1us'", "25us"});
  expect_cluster_error(replace(kNvswitchNode, "400Gbps", "-400Gbps"),
               {"bad.yaml:11:22", "inter_node.nic_bandwidth_Bps", "'-400Gbps'", "400Gbps"});
  expect_cluster_error(replace(kNvswitchNode, "63GBps", "0GBps"),
               {"bad.yaml:12:", "inter_node.gpu_nic_bandwidth_Bps", "positive"});
  expect_cluster_error(replace(kNvswitchNode, "nodes: 2", "nodes: 0"), {"bad.yaml:2:8", "nodes", ">= 1"});
  expect_cluster_error(replace(kNvswitchNode, "nodes: 2", "nodes: two"),
               {"bad.yaml:2:8", "nodes", "not an integer"});
  expect_cluster_error(replace(kNvswitchNode, "  link_latency_s: 0.15us\n",
                       "  link_latency_s: 0.15us\n  oversubscription: 0.5\n"),
               {"bad.yaml:", "oversubscription", ">= 1"});
  expect_cluster_error(kNvswitchNode + "price_per_gpu_hour_usd: 3\n",
               {"bad.yaml:16:", "price_per_gpu_hour_usd", "source"});
}

TEST(ClusterErrors, WrongEnumsAndInconsistentSections) {
  expect_cluster_error(replace(kNvswitchNode, "kind: rail-fat-tree", "kind: torus"),
               {"bad.yaml:10:9", "inter_node.kind", "torus", "rail-fat-tree, switch, ring, none"});
  expect_cluster_error(replace(kNvswitchNode, "kind: nvswitch", "kind: nvlink"),
               {"bad.yaml:5:9", "intra_node.kind", "nvswitch, pcie, none"});
  expect_cluster_error(
      replace(kNvswitchNode, "  nic_bandwidth_Bps", "  nics_per_node: 3\n  nic_bandwidth_Bps"),
      {"bad.yaml:11:", "inter_node.nics_per_node", "divide"});
  expect_cluster_error("name: x\nnodes: 4\ngpus_per_node: 1\n", {"bad.yaml:2:", "nodes", "inter_node"});
  expect_cluster_error("name: x\nnodes: 1\ngpus_per_node: 4\n", {"bad.yaml:3:", "gpus_per_node"});
  expect_cluster_error(replace(kNvswitchNode, "kind: rail-fat-tree", "kind: switch"),
               {"bad.yaml:", "does not apply to kind 'switch'"});
  expect_cluster_error(R"(name: x
nodes: 4
gpus_per_node: 2
intra_node: {kind: nvswitch, gpu_bandwidth_Bps: 1GBps, latency_s: 0, source: t}
inter_node: {kind: switch, nic_bandwidth_Bps: 1GBps, link_latency_s: 0, source: t}
)",
               {"bad.yaml:4:", "intra_node.kind", "expected intra_node kind none"});
  expect_cluster_error("name: x\nnodes: 1\ngpus_per_node: 1\ngpu: {profile: nowhere/p.yaml}\n",
               {"bad.yaml:4:", "gpu.profile", "nowhere/p.yaml", "not found"});
  expect_cluster_error("- just\n- a list\n", {"bad.yaml", "expected a map"});
}

// docs/cluster-format.md must document every key the loader accepts.
TEST(ClusterDocs, EveryKeyIsDocumented) {
  std::ifstream in(std::string(OVERLAPSIM_SOURCE_DIR) + "/docs/cluster-format.md");
  ASSERT_TRUE(in) << "docs/cluster-format.md missing";
  std::stringstream text;
  text << in.rdbuf();
  for (const auto* table :
       {&cluster_params(), &gpu_params(), &intra_node_params(), &inter_node_params()})
    for (const auto& param : *table)
      EXPECT_NE(text.str().find("`" + param.key + "`"), std::string::npos) << param.key;
}

}  // namespace
}  // namespace overlapsim::workloads
