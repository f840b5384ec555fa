// `overlapsim collective`: one collective on a cluster file, simulated on the flow
// network; prints a table or the JSON of the CLI contract.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

#include "app/commands.hpp"
#include "app/memory_budget.hpp"
#include "app/output.hpp"
#include "config/atomic_file.hpp"
#include "config/error.hpp"
#include "config/units.hpp"
#include "sim/collectives/collective.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/network/flow_network.hpp"
#include "sim/topology/builders.hpp"
#include "workloads/cluster.hpp"

namespace overlapsim::app {
namespace {

struct CollectiveOptions {
  std::string op;
  std::string bytes;
  std::string cluster;
  std::optional<int> ranks;  // unset: every GPU of the cluster
  std::optional<int> nodes;  // unset: as the cluster file says
  std::string algo = "auto";
  std::string format = "table";
  int root = 0;
  int peer = 1;
  std::string launch_latency = "0";
  std::string step_latency = "0";
  std::string chunk = "0";
  std::string output;
  std::string max_memory;  // empty: 80% of physical memory
  bool no_timing = false;
};

double duration_flag(const std::string& flag, const std::string& text) {
  const auto v = config::parse_duration_s(text);
  if (!v || *v < 0)
    throw config::ConfigError(fmt::format("{}: '{}' is not a duration (expected {})", flag, text,
                                            config::kExpectedDuration));
  return *v;
}

std::uint64_t bytes_flag(const std::string& flag, const std::string& text) {
  const auto v = config::parse_bytes(text);
  if (!v)
    throw config::ConfigError(
        fmt::format("{}: '{}' is not a size (expected {})", flag, text, config::kExpectedBytes));
  return *v;
}

struct Outcome {
  sim::CollectiveRequest req;
  sim::Algorithm resolved = sim::Algorithm::Auto;
  std::string cluster_name;
  int cluster_gpus = 0;
  double time_s = 0;
  std::uint64_t events = 0;
  std::uint64_t flows_simulated = 0;
  double sim_wall_s = 0;
  std::uint64_t peak_rss_bytes = 0;
};

Outcome simulate(const CollectiveOptions& o) {
  // Everything the user typed is checked before anything runs.
  const auto op = sim::parse_collective_op(o.op);
  if (!op)
    throw config::ConfigError(fmt::format(
        "--op: unknown collective '{}' (expected allreduce, allgather, reducescatter, alltoall, "
        "broadcast or sendrecv)",
        o.op));
  const auto algo = sim::parse_algorithm(o.algo);
  if (!algo)
    throw config::ConfigError(fmt::format(
        "--algo: unknown algorithm '{}' (expected ring, tree, hierarchical, direct or auto)",
        o.algo));
  if (o.format != "table" && o.format != "json")
    throw config::ConfigError(fmt::format("--format: '{}' (expected table or json)", o.format));
  sim::CollectiveTuning tuning;
  tuning.launch_latency_s = duration_flag("--launch-latency", o.launch_latency);
  tuning.step_latency_s = duration_flag("--step-latency", o.step_latency);
  tuning.chunk_bytes = bytes_flag("--chunk", o.chunk);
  Outcome out;
  out.req.op = *op;
  out.req.algo = *algo;
  out.req.bytes = bytes_flag("--bytes", o.bytes);
  out.req.root = o.root;
  out.req.peer = o.peer;

  check_output(o.output, "--output");
  workloads::ClusterSpec spec = workloads::load_cluster(o.cluster);
  if (o.nodes) {
    if (*o.nodes < 1 ||
        std::int64_t{*o.nodes} * spec.gpus_per_node > sim::kMaxRanks)
      throw config::ConfigError(fmt::format(
          "--nodes: {} (expected a node count >= 1, at most {} GPUs with {} per node)", *o.nodes,
          sim::kMaxRanks, spec.gpus_per_node));
    spec.nodes = *o.nodes;
  }

  const auto wall_start = std::chrono::steady_clock::now();
  const sim::Topology topo = workloads::build_topology(spec);
  out.cluster_name = spec.name;
  out.cluster_gpus = topo.num_gpus();
  const int ranks = o.ranks.value_or(topo.num_gpus());
  if (ranks < 1 || ranks > topo.num_gpus())
    throw config::ConfigError(
        fmt::format("--ranks: {} is outside the cluster {} (expected 1..{})", ranks, o.cluster,
                    topo.num_gpus()));
  out.req.ranks.resize(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) out.req.ranks[static_cast<std::size_t>(r)] = r;

  sim::Simulator simulator;
  sim::FlowNetwork net(simulator, topo);
  try {
    // The request is the user's flags: sim::validate's complaint is about them.
    sim::validate(out.req, net);
    out.resolved = sim::resolve_algorithm(out.req, net, tuning);
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError(fmt::format("--op/--algo/--root: {}", e.what()));
  }
  check_memory_budget(sim::collective_run_size(topo, out.req, tuning), o.max_memory,
                      fmt::format("{} over {} ranks of {}", o.op, ranks, o.cluster));
  bool done = false;
  sim::start_collective(
      net, out.req,
      [&] {
        out.time_s = simulator.now();
        done = true;
      },
      tuning);
  simulator.run();
  if (!done) throw std::logic_error("the collective did not complete");
  out.sim_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  out.events = simulator.events_processed();
  out.flows_simulated = net.stats().flows_simulated;
  out.peak_rss_bytes = peak_rss_bytes();
  if (o.no_timing) {
    out.sim_wall_s = 0;
    out.peak_rss_bytes = 0;
  }
  return out;
}

double algbw_Bps(const Outcome& r) {
  return r.time_s > 0 ? static_cast<double>(r.req.bytes) / r.time_s : 0.0;
}

std::string to_json(const Outcome& r) {
  const int n = static_cast<int>(r.req.ranks.size());
  nlohmann::ordered_json j;
  j["op"] = sim::to_string(r.req.op);
  j["algo"] = sim::to_string(r.resolved);
  j["ranks"] = n;
  j["bytes"] = r.req.bytes;
  j["time_s"] = r.time_s;
  j["algbw_Bps"] = algbw_Bps(r);
  j["busbw_Bps"] = algbw_Bps(r) * sim::busbw_factor(r.req.op, n);
  j["events"] = r.events;
  j["sim_wall_s"] = r.sim_wall_s;
  j["peak_rss_bytes"] = r.peak_rss_bytes;
  return j.dump(2) + "\n";
}

std::string to_table(const Outcome& r) {
  const int n = static_cast<int>(r.req.ranks.size());
  const std::string algo =
      r.req.algo == sim::Algorithm::Auto
          ? fmt::format("{} (chosen by auto, NCCL cost model)", sim::to_string(r.resolved))
          : sim::to_string(r.resolved);
  std::string s;
  s += fmt::format("{:<10} {}\n", "op", sim::to_string(r.req.op));
  s += fmt::format("{:<10} {}\n", "algorithm", algo);
  s += fmt::format("{:<10} {} ({} GPUs)\n", "cluster", r.cluster_name, r.cluster_gpus);
  s += fmt::format("{:<10} {}\n", "ranks", n);
  s += fmt::format("{:<10} {} ({} B)\n", "bytes", config::format_bytes(r.req.bytes), r.req.bytes);
  s += fmt::format("{:<10} {}\n", "time", config::format_duration(r.time_s));
  s += fmt::format("{:<10} {}\n", "algbw", config::format_bandwidth(algbw_Bps(r)));
  s += fmt::format("{:<10} {} (x {:.4f}, nccl-tests)\n", "busbw",
                   config::format_bandwidth(algbw_Bps(r) * sim::busbw_factor(r.req.op, n)),
                   sim::busbw_factor(r.req.op, n));
  s += fmt::format("{:<10} {} events, {} flows after aggregation\n", "simulated", r.events,
                   r.flows_simulated);
  s += fmt::format("{:<10} {:.3f} s wall, peak RSS {}\n", "cost", r.sim_wall_s,
                   config::format_bytes(r.peak_rss_bytes));
  return s;
}

}  // namespace

void add_collective_command(CLI::App& app, Runner& selected) {
  auto opts = std::make_shared<CollectiveOptions>();
  auto* sub = app.add_subcommand(
      "collective", "simulate one collective on a cluster with the flow-level network");
  sub->add_option("--op", opts->op, "allreduce|allgather|reducescatter|alltoall|broadcast|sendrecv")
      ->required();
  sub->add_option("--bytes", opts->bytes, "buffer size as nccl-tests counts it, e.g. 1GiB")
      ->required();
  sub->add_option("--cluster", opts->cluster,
                  "cluster YAML, e.g. workloads/clusters/h200-128node-ndr.yaml")
      ->required();
  sub->add_option("--ranks", opts->ranks, "communicator: ranks 0..N-1 (default: every GPU)");
  sub->add_option("--nodes", opts->nodes, "override the cluster's node count");
  sub->add_option("--algo", opts->algo, "ring|tree|hierarchical|direct|auto (default auto)");
  sub->add_option("--format", opts->format, "table|json (default table)");
  sub->add_option("--root", opts->root, "broadcast root, an index into the communicator");
  sub->add_option("--peer", opts->peer, "sendrecv receiver, an index into the communicator");
  sub->add_option("--launch-latency", opts->launch_latency,
                  "software latency per collective, e.g. 8.4us (default 0: wire only)");
  sub->add_option("--step-latency", opts->step_latency,
                  "software latency per algorithm step (default 0)");
  sub->add_option("--chunk", opts->chunk, "pipeline chunk size (default 0: continuous stream)");
  sub->add_option("--output", opts->output, "write the result to FILE (atomically)");
  add_max_memory_option(sub, opts->max_memory);
  sub->add_flag("--no-timing", opts->no_timing,
                "report sim_wall_s and peak_rss_bytes as 0, so outputs can be diffed");
  sub->callback([opts, &selected] {
    selected = [opts] {
      const Outcome outcome = simulate(*opts);
      const std::string text = opts->format == "json" ? to_json(outcome) : to_table(outcome);
      print_or_write(text, opts->output);
      return kExitOk;
    };
  });
}

}  // namespace overlapsim::app
