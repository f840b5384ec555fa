// network_bench: how fast FlowNetwork simulates the traffic of large collectives, issued
// directly on the NetworkApi the way sim/collectives does (so the network is measured on
// its own). Prints one CSV row per case with the simulated time next to its closed form.
//
// peak_rss_bytes is the process's high-water mark so far: run one case per process for a
// per-case figure (benchmarks/results/network_bench.csv was made that way).
//
//   network_bench [case ...]   cases: alltoall-256, alltoall-1024, alltoall-1024-ecmp64,
//                                     alltoall-1024-x4 (four in a row), ring-steps-1024,
//                                     ring-streams-1024, hierarchical-16384 (default: all)
//
// Topologies come from sim/topology/builders with the figures of the shipped cluster files:
// a 128-node x 8-GPU rail-optimised fat-tree (450 GB/s NVLink per GPU, PCIe Gen5 x16
// GPU-NIC, one 400 Gb/s NIC per GPU, 64-port leaves per rail, a non-blocking spine layer
// as one ideal spine or as 64 spines under static ECMP) and a flat 1,024-NPU switch at
// 50 GB/s per NPU.
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "sim/engine/simulator.hpp"
#include "sim/network/flow_network.hpp"
#include "sim/topology/builders.hpp"
#include "sim/topology/topology.hpp"

using namespace overlapsim::sim;

namespace {

// Link figures (per direction). NVLink 4: 18 links x 25 GB/s (NVIDIA H100/H200 datasheet);
// PCIe Gen5 x16: 32 GT/s x 16 lanes, 128b/130b, about 63 GB/s; NDR InfiniBand 400 Gb/s =
// 50 GB/s (NVIDIA ConnectX-7 / Quantum-2 datasheets). Latencies: NVLink hop about 0.5 us,
// GPU-NIC (PCIe + NIC processing) about 1 us, cable + switch (Quantum-2 port-to-port about
// 0.13 us) per network hop. The shipped cluster files carry the cited figures; these
// mirror them so the benchmark needs no YAML.
constexpr double kNvlinkBps = 450e9;
constexpr double kPcieBps = 63e9;
constexpr double kNicBps = 50e9;
constexpr double kNvlinkLatS = 0.5e-6;
constexpr double kGpuNicLatS = 1e-6;
constexpr double kNetHopLatS = 0.13e-6;
// The flat switch's per-NPU port and hop latency.
constexpr double kFlatBps = 50e9;
constexpr double kFlatLatS = 0.5e-6;
// Every case moves 1 GiB per rank.
constexpr std::uint64_t kBytes = std::uint64_t{1} << 30;

Topology rail_fat_tree(int nodes, int spines) {
  RailFatTreeSpec spec;
  spec.nodes = nodes;
  spec.node = NvSwitchNodeSpec{8, kNvlinkBps, kNvlinkLatS};
  spec.nics_per_node = 8;
  spec.nic_bandwidth_Bps = kNicBps;
  spec.gpu_nic_bandwidth_Bps = kPcieBps;
  spec.gpu_nic_latency_s = kGpuNicLatS;
  spec.link_latency_s = kNetHopLatS;
  spec.leaf_down_ports = 64;
  spec.spines = spines;
  return build_rail_fat_tree(spec);
}

std::uint64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

// CPU time of this process: on a shared machine wall time also counts other processes.
double cpu_s() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Result {
  std::string name;
  int ranks = 0;
  std::uint64_t bytes = 0;
  double sim_time_s = 0;
  double closed_form_s = 0;
  double setup_wall_s = 0;   // building the topology and the transfer list
  double sim_wall_s = 0;     // transfer_group calls and the event loop
  double submit_wall_s = 0;  // of which the first transfer_group call (routing included)
  double sim_cpu_s = 0;      // CPU time of what sim_wall_s measures
  std::uint64_t events = 0;
  FlowNetworkStats stats;
};

Result start_result(const std::string& name, int ranks, std::uint64_t bytes,
                    std::chrono::steady_clock::time_point setup_t0) {
  Result r{name, ranks, bytes, 0, 0, 0, 0, 0, 0, 0, {}};
  r.setup_wall_s = seconds_since(setup_t0);
  return r;
}

// Times one case on `topo`: `submit(sim, net)` issues its transfers (the first call is
// submit_wall_s), then the event loop runs; `rounds` > 1 repeats both on the same network.
template <class Submit>
void simulate(Result& r, const Topology& topo, Submit&& submit, int rounds = 1) {
  const auto t1 = std::chrono::steady_clock::now();
  const double cpu0_s = cpu_s();
  Simulator sim;
  FlowNetwork net(sim, topo);
  submit(sim, net);
  r.submit_wall_s = seconds_since(t1);
  sim.run();
  for (int i = 1; i < rounds; ++i) {
    submit(sim, net);
    sim.run();
  }
  r.sim_wall_s = seconds_since(t1);
  r.sim_cpu_s = cpu_s() - cpu0_s;
  r.sim_time_s = sim.now();
  r.events = sim.events_processed();
  r.stats = net.stats();
}

void print_header() {
  fmt::print(
      "case,ranks,bytes,sim_time_s,closed_form_s,setup_wall_s,sim_wall_s,submit_wall_s,sim_cpu_s,"
      "events,"
      "flows_started,"
      "flows_simulated,rate_solves,flows_rate_solved,peak_active_flows,peak_rss_bytes\n");
}

void print(const Result& r) {
  fmt::print("{},{},{},{:.9g},{:.9g},{:.4f},{:.4f},{:.4f},{:.4f},{},{},{},{},{},{},{}\n", r.name,
             r.ranks, r.bytes, r.sim_time_s, r.closed_form_s, r.setup_wall_s, r.sim_wall_s,
             r.submit_wall_s, r.sim_cpu_s, r.events, r.stats.flows_started, r.stats.flows_simulated,
             r.stats.rate_solves, r.stats.flows_rate_solved, r.stats.peak_active_flows,
             peak_rss_bytes());
  std::fflush(stdout);
}

// All-to-all of kBytes per rank (kBytes / n to each peer) as one group of n(n-1) transfers.
Result alltoall(const std::string& name, int nodes, int spines, int repeats = 1) {
  const auto t0 = std::chrono::steady_clock::now();
  const Topology topo = rail_fat_tree(nodes, spines);
  const int n = topo.num_gpus();
  const std::uint64_t per_peer = kBytes / static_cast<std::uint64_t>(n);
  std::vector<Transfer> transfers;
  transfers.reserve(static_cast<std::size_t>(n) * static_cast<std::size_t>(n - 1));
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) transfers.push_back({s, d, per_peer});
  Result r = start_result(name, n, kBytes, t0);
  simulate(
      r, topo, [&](Simulator&, FlowNetwork& net) { net.transfer_group(transfers, [] {}); },
      repeats);
  // Inter-node traffic of one GPU leaves through its own NIC: (n - 8) peers x per_peer at the
  // NIC rate, plus the longest path's latency (GPU-NIC, NIC-leaf, leaf-spine and back).
  r.closed_form_s = static_cast<double>(n - 8) * static_cast<double>(per_peer) / kNicBps +
                    2 * kGpuNicLatS + 4 * kNetHopLatS;
  return r;
}

// Ring all-reduce of 1 GiB on a flat switch as 2(n-1) groups of n transfers of S/n, each
// group started when the previous one has arrived (no pipelining across steps).
Result ring_steps(const std::string& name, int n) {
  const auto t0 = std::chrono::steady_clock::now();
  const Topology topo = build_flat_switch(FlatSwitchSpec{n, kFlatBps, kFlatLatS, 1});
  const std::uint64_t chunk = kBytes / static_cast<std::uint64_t>(n);
  std::vector<Transfer> step;
  for (int r = 0; r < n; ++r) step.push_back({r, (r + 1) % n, chunk});
  Result r = start_result(name, n, kBytes, t0);
  int steps_left = 2 * (n - 1);
  std::function<void()> next;
  simulate(r, topo, [&](Simulator&, FlowNetwork& net) {
    next = [&] {
      if (steps_left-- == 0) return;
      net.transfer_group(step, next);
    };
    next();
  });
  r.closed_form_s = 2.0 * (n - 1) * (2 * kFlatLatS + static_cast<double>(chunk) / kFlatBps);
  return r;
}

// The same ring all-reduce as n long streams of 2(n-1)/n S (what collectives issue when the
// network gives a path estimate), plus the 2(n-1) - 1 step latencies charged on top.
Result ring_streams(const std::string& name, int n) {
  const auto t0 = std::chrono::steady_clock::now();
  const Topology topo = build_flat_switch(FlatSwitchSpec{n, kFlatBps, kFlatLatS, 1});
  const std::uint64_t per_link =
      2 * static_cast<std::uint64_t>(n - 1) * (kBytes / static_cast<std::uint64_t>(n));
  std::vector<Transfer> streams;
  for (int r = 0; r < n; ++r) streams.push_back({r, (r + 1) % n, per_link});
  Result r = start_result(name, n, kBytes, t0);
  simulate(r, topo, [&](Simulator& sim, FlowNetwork& net) {
    const double step_latency_s = net.path_estimate(0, 1)->latency_s;
    net.transfer_group(streams, [&sim, n, step_latency_s] {
      sim.schedule((2.0 * (n - 1) - 1) * step_latency_s, [] {});
    });
  });
  r.closed_form_s = 2.0 * (n - 1) * 2 * kFlatLatS + static_cast<double>(per_link) / kFlatBps;
  return r;
}

// Hierarchical all-reduce of 1 GiB over 2,048 nodes x 8 GPUs as three streamed phases, each
// one group: intra-node ring reduce-scatter (7/8 S per GPU to its node neighbour over
// NVLink), inter-node ring all-reduce per rail (2 (N-1)/N x S/8 per GPU to the next node's
// same-rail GPU), intra-node ring all-gather (7/8 S again). Step latencies are not charged:
// this measures the network's cost for the flows collectives would issue.
Result hierarchical(const std::string& name, int nodes) {
  const auto t0 = std::chrono::steady_clock::now();
  const Topology topo = rail_fat_tree(nodes, 1);
  const int n = topo.num_gpus();
  const std::uint64_t intra_bytes = kBytes / 8 * 7;
  const std::uint64_t inter_bytes =
      2 * static_cast<std::uint64_t>(nodes - 1) * (kBytes / 8 / static_cast<std::uint64_t>(nodes));
  std::vector<Transfer> intra, inter;
  for (int node = 0; node < nodes; ++node)
    for (int g = 0; g < 8; ++g) {
      intra.push_back({node * 8 + g, node * 8 + (g + 1) % 8, intra_bytes});
      inter.push_back({node * 8 + g, ((node + 1) % nodes) * 8 + g, inter_bytes});
    }
  Result r = start_result(name, n, kBytes, t0);
  simulate(r, topo, [&](Simulator&, FlowNetwork& net) {
    net.transfer_group(
        intra, [&] { net.transfer_group(inter, [&] { net.transfer_group(intra, [] {}); }); });
  });
  const double intra_s = 2 * kNvlinkLatS + static_cast<double>(intra_bytes) / kNvlinkBps;
  // The NIC (50 GB/s) is the narrowest hop of GPU - NIC - leaf (- spine - leaf) - NIC - GPU.
  const bool crosses_spine = nodes > 64;
  const double inter_s = 2 * kGpuNicLatS + (crosses_spine ? 4 : 2) * kNetHopLatS +
                         static_cast<double>(inter_bytes) / kNicBps;
  r.closed_form_s = 2 * intra_s + inter_s;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> cases(argv + 1, argv + argc);
  if (cases.empty())
    cases = {"alltoall-256",    "alltoall-1024",     "alltoall-1024-ecmp64", "alltoall-1024-x4",
             "ring-steps-1024", "ring-streams-1024", "hierarchical-16384"};
  print_header();
  for (const std::string& c : cases) {
    if (c == "alltoall-1024") {
      print(alltoall(c, 128, 1));
    } else if (c == "alltoall-1024-x4") {
      print(alltoall(c, 128, 1, 4));
    } else if (c == "alltoall-1024-ecmp64") {
      print(alltoall(c, 128, 64));
    } else if (c == "hierarchical-16384") {
      print(hierarchical(c, 2048));
    } else if (c == "alltoall-256") {
      print(alltoall(c, 32, 1));
    } else if (c == "ring-steps-1024") {
      print(ring_steps(c, 1024));
    } else if (c == "ring-streams-1024") {
      print(ring_streams(c, 1024));
    } else {
      std::fprintf(stderr, "network_bench: unknown case '%s'\n", c.c_str());
      return 2;
    }
  }
  return 0;
}
