// `overlapsim redistribute`: an array's layout change over a device mesh, synthesised as a
// memory-bounded collective sequence and set beside the naive plan (all-gather, then slice):
// steps, bytes moved, peak memory per device and, on a cluster, the simulated time of each.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "app/output.hpp"
#include "config/error.hpp"
#include "config/units.hpp"
#include "redistribution/cost.hpp"
#include "redistribution/plan.hpp"
#include "sim/profile/profile_load.hpp"
#include "workloads/cluster.hpp"
#include "workloads/scenario_inputs.hpp"

namespace overlapsim::app {
namespace {

namespace rd = redistribution;

struct RedistributeOptions {
  std::string mesh, shape, dtype = "bf16", from, to, cluster, format = "table", output;
  std::string memory_cap;
};

struct Outcome {
  std::string dtype;
  std::string cluster_name;
  std::vector<rd::Plan> plans;  // synthesised, naive
  std::vector<std::optional<rd::PlanTiming>> timings;
  std::optional<std::size_t> chosen;  // under --memory-cap
  std::uint64_t cap_bytes = 0;
};

std::string axes_text(const rd::Mesh& mesh, const std::vector<int>& axes) {
  std::string s;
  for (int a : axes) s += (s.empty() ? "" : ",") + mesh.axis_names[static_cast<std::size_t>(a)];
  return s.empty() ? "-" : s;
}

Outcome run(const RedistributeOptions& o) {
  if (o.format != "table" && o.format != "json")
    throw config::ConfigError(fmt::format("--format: '{}' (expected table or json)", o.format));
  Outcome out;
  out.dtype = o.dtype;
  const rd::Mesh mesh = rd::parse_mesh(o.mesh, "--mesh");
  const rd::Shape shape = rd::parse_shape(o.shape, "--shape");
  const int element_bytes = rd::parse_dtype_bytes(o.dtype, "--dtype");
  const rd::Layout from = rd::parse_layout(o.from, mesh, shape, "--from");
  const rd::Layout to = rd::parse_layout(o.to, mesh, shape, "--to");
  std::optional<std::uint64_t> cap;
  if (!o.memory_cap.empty()) {
    cap = config::parse_bytes(o.memory_cap);
    if (!cap)
      throw config::ConfigError(fmt::format("--memory-cap: '{}' is not a size (expected {})",
                                            o.memory_cap, config::kExpectedBytes));
    out.cap_bytes = *cap;
  }
  std::optional<workloads::ClusterSpec> cluster;
  if (!o.cluster.empty()) {
    cluster = workloads::load_cluster(o.cluster);
    if (cluster->num_gpus() != mesh.num_devices())
      throw config::ConfigError(fmt::format(
          "--mesh: {} has {} devices but the cluster {} has {} GPUs (expected a mesh of every "
          "GPU of the cluster)",
          mesh.to_string(), mesh.num_devices(), o.cluster, cluster->num_gpus()));
    if (!cluster->gpu || cluster->gpu->profile_path.empty())
      throw config::ConfigError(fmt::format(
          "{}: gpu.profile: missing (expected a profile path such as "
          "calibration/profiles/h200-nvswitch-8gpu.yaml, whose collective curves time the steps)",
          o.cluster));
    out.cluster_name = cluster->name;
  }
  out.plans.push_back(rd::synthesize(mesh, shape, element_bytes, from, to));
  out.plans.push_back(rd::naive_plan(mesh, shape, element_bytes, from, to));
  std::vector<double> cost;
  if (cluster) {
    const sim::Topology topology = workloads::build_topology(*cluster);
    const sim::Profile profile = sim::load_profile(cluster->gpu->profile_path);
    const sim::CollectiveTimingOptions timing =
        workloads::collective_timing(*cluster, profile, cluster->gpu->profile_path);
    for (const auto& p : out.plans) {
      out.timings.push_back(rd::time_plan(p, topology, profile, timing));
      cost.push_back(out.timings.back()->time_s);
    }
  } else {
    for (const auto& p : out.plans) {
      out.timings.emplace_back();
      cost.push_back(static_cast<double>(p.max_device_bytes_received()));
    }
  }
  if (cap) {
    out.chosen = rd::best_under_cap(out.plans, cost, *cap);
    if (!out.chosen)
      throw config::ConfigError(fmt::format(
          "--memory-cap: no plan fits {} per device (expected at least {}, the synthesised "
          "plan's peak)",
          config::format_bytes(*cap), config::format_bytes(out.plans[0].peak_bytes())));
  }
  return out;
}

std::string to_json(const Outcome& r) {
  const rd::Plan& s = r.plans[0];
  nlohmann::ordered_json j;
  j["mesh"] = s.mesh.to_string();
  j["shape"] = s.shape;
  j["dtype"] = r.dtype;
  j["from"] = rd::to_string(s.from, s.mesh);
  j["to"] = rd::to_string(s.to, s.mesh);
  j["from_bytes_per_device"] = s.from_bytes();
  j["to_bytes_per_device"] = s.to_bytes();
  j["cluster"] = r.cluster_name.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(r.cluster_name);
  j["plans"] = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < r.plans.size(); ++i) {
    const rd::Plan& p = r.plans[i];
    const auto& t = r.timings[i];
    nlohmann::ordered_json pj;
    pj["name"] = p.name;
    pj["steps"] = nlohmann::ordered_json::array();
    for (std::size_t k = 0; k < p.steps.size(); ++k) {
      const rd::Step& st = p.steps[k];
      std::int64_t most = 0;
      for (auto e : st.received_elements) most = std::max(most, e);
      nlohmann::ordered_json sj;
      sj["kind"] = rd::to_string(st.kind);
      std::vector<std::string> axes;
      for (int a : st.axes) axes.push_back(p.mesh.axis_names[static_cast<std::size_t>(a)]);
      sj["axes"] = axes;
      sj["in"] = rd::to_string(st.in, p.mesh);
      sj["out"] = rd::to_string(st.out, p.mesh);
      sj["in_bytes_per_device"] = static_cast<std::uint64_t>(st.in_elements) * p.element_bytes;
      sj["out_bytes_per_device"] = static_cast<std::uint64_t>(st.out_elements) * p.element_bytes;
      sj["max_bytes_received_per_device"] = static_cast<std::uint64_t>(most) * p.element_bytes;
      sj["buffer_bytes"] = static_cast<std::uint64_t>(st.buffer_elements) * p.element_bytes;
      if (t) {
        sj["collective"] = t->steps[k].collective;
        sj["time_s"] = t->steps[k].time_s;
        sj["copy_s"] = t->steps[k].copy_s;
      }
      pj["steps"].push_back(sj);
    }
    pj["bytes_moved"] = p.bytes_moved();
    pj["max_bytes_received_per_device"] = p.max_device_bytes_received();
    pj["peak_bytes_per_device"] = p.peak_bytes();
    pj["buffer_bytes"] = p.buffer_bytes();
    pj["time_s"] = t ? nlohmann::ordered_json(t->time_s) : nlohmann::ordered_json();
    j["plans"].push_back(pj);
  }
  if (r.timings[0] && r.timings[0]->time_s > 0)
    j["speedup"] = r.timings[1]->time_s / r.timings[0]->time_s;
  if (r.chosen) {
    j["memory_cap_bytes"] = r.cap_bytes;
    j["chosen"] = r.plans[*r.chosen].name;
  }
  return j.dump(2) + "\n";
}

std::string plan_table(const rd::Plan& p, const std::optional<rd::PlanTiming>& t) {
  std::string s = fmt::format("{} plan\n", p.name);
  s += fmt::format("  {:>2}  {:<15} {:<6} {:<28} {:>11} {:>11} {:>11}{}\n", "#", "step", "axes",
                   "layout after", "held/dev", "recv/dev", "buffer",
                   t ? fmt::format(" {:>10} {:>10}  {}", "time", "copies", "collective") : "");
  if (p.steps.empty()) s += "  (nothing to do: the layouts hold the same blocks)\n";
  for (std::size_t k = 0; k < p.steps.size(); ++k) {
    const rd::Step& st = p.steps[k];
    std::int64_t most = 0;
    for (auto e : st.received_elements) most = std::max(most, e);
    const auto eb = static_cast<std::uint64_t>(p.element_bytes);
    s += fmt::format("  {:>2}  {:<15} {:<6} {:<28} {:>11} {:>11} {:>11}{}\n", k + 1,
                     rd::to_string(st.kind), axes_text(p.mesh, st.axes),
                     rd::to_string(st.out, p.mesh),
                     config::format_bytes(static_cast<std::uint64_t>(st.out_elements) * eb),
                     config::format_bytes(static_cast<std::uint64_t>(most) * eb),
                     config::format_bytes(static_cast<std::uint64_t>(st.buffer_elements) * eb),
                     t ? fmt::format(" {:>10} {:>10}  {}", config::format_duration(t->steps[k].time_s),
                                     config::format_duration(t->steps[k].copy_s),
                                     t->steps[k].collective)
                       : "");
  }
  return s;
}

std::string to_table(const Outcome& r) {
  const rd::Plan& s = r.plans[0];
  const rd::Plan& n = r.plans[1];
  std::string shape;
  std::uint64_t global = static_cast<std::uint64_t>(s.element_bytes);
  for (auto e : s.shape) {
    shape += (shape.empty() ? "" : "x") + std::to_string(e);
    global *= static_cast<std::uint64_t>(e);
  }
  std::string out;
  out += fmt::format("{:<9} {} ({} devices)\n", "mesh", s.mesh.to_string(), s.mesh.num_devices());
  out += fmt::format("{:<9} {} {} ({})\n", "array", shape, r.dtype, config::format_bytes(global));
  out += fmt::format("{:<9} {}  ({} per device)\n", "from", rd::to_string(s.from, s.mesh),
                     config::format_bytes(s.from_bytes()));
  out += fmt::format("{:<9} {}  ({} per device)\n", "to", rd::to_string(s.to, s.mesh),
                     config::format_bytes(s.to_bytes()));
  out += fmt::format("{:<9} {}\n\n", "cluster",
                     r.cluster_name.empty() ? "none (no times; --cluster FILE)" : r.cluster_name);
  out += plan_table(s, r.timings[0]) + "\n" + plan_table(n, r.timings[1]) + "\n";
  out += fmt::format("{:<30} {:>14} {:>14}\n", "", "synthesised", "naive");
  auto row = [&](const char* what, std::uint64_t a, std::uint64_t b) {
    out += fmt::format("{:<30} {:>14} {:>14}\n", what, config::format_bytes(a), config::format_bytes(b));
  };
  out += fmt::format("{:<30} {:>14} {:>14}\n", "steps", s.steps.size(), n.steps.size());
  row("bytes moved (all devices)", s.bytes_moved(), n.bytes_moved());
  row("most received by a device", s.max_device_bytes_received(), n.max_device_bytes_received());
  row("peak memory per device", s.peak_bytes(), n.peak_bytes());
  row("largest receive buffer", s.buffer_bytes(), n.buffer_bytes());
  if (r.timings[0]) {
    out += fmt::format("{:<30} {:>14} {:>14}\n", "simulated time",
                       config::format_duration(r.timings[0]->time_s),
                       config::format_duration(r.timings[1]->time_s));
    if (r.timings[0]->time_s > 0)
      out += fmt::format("{:<30} {:>14.2f}x\n", "speed-up over naive",
                         r.timings[1]->time_s / r.timings[0]->time_s);
  }
  out += fmt::format("{:<30} {:>14}\n", "bound max(from, to)", config::format_bytes(s.bound_bytes()));
  if (r.chosen)
    out += fmt::format("under --memory-cap {}: the {} plan\n", config::format_bytes(r.cap_bytes),
                       r.plans[*r.chosen].name);
  return out;
}

}  // namespace

void add_redistribute_command(CLI::App& app, Runner& selected) {
  auto opts = std::make_shared<RedistributeOptions>();
  auto* sub = app.add_subcommand(
      "redistribute",
      "change an array's layout over a device mesh: the synthesised collective sequence "
      "against all-gather-then-slice");
  sub->add_option("--mesh", opts->mesh, "mesh axes, e.g. \"x=2,y=4\" (row-major device order)")
      ->required();
  sub->add_option("--shape", opts->shape, "global array shape, e.g. 4096x8192")->required();
  sub->add_option("--dtype", opts->dtype, "bf16|fp16|fp32|fp8|int8|int32|fp64|int64 (default bf16)");
  sub->add_option("--from", opts->from,
                  "source layout: P('x', None) or [Shard(0), Replicate(), Partial()]")
      ->required();
  sub->add_option("--to", opts->to, "target layout, in either notation")->required();
  sub->add_option("--cluster", opts->cluster,
                  "cluster YAML whose GPUs are the mesh's devices: times each step");
  sub->add_option("--memory-cap", opts->memory_cap,
                  "per-device memory cap: report the fastest plan that fits, e.g. 40GiB");
  sub->add_option("--format", opts->format, "table|json (default table)");
  sub->add_option("--output", opts->output, "write the result to FILE (atomically)");
  sub->callback([opts, &selected] {
    selected = [opts] {
      const Outcome outcome = run(*opts);
      print_or_write(opts->format == "json" ? to_json(outcome) : to_table(outcome), opts->output);
      return kExitOk;
    };
  });
}

}  // namespace overlapsim::app
