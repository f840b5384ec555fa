#include "planning/planner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "config/error.hpp"
#include "planning/configuration_text.hpp"
#include "planning/cost.hpp"
#include "planning/pareto.hpp"
#include "planning/plan_state.hpp"
#include "planning/prescreen.hpp"
#include "planning/progress.hpp"
#include "planning/ranks.hpp"
#include "planning/sweep.hpp"
#include "sim/profile/profile_load.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/microbatch_sampling.hpp"
#include "workloads/scenario_inputs.hpp"

namespace overlapsim::planning {

namespace {

using workloads::ClusterSpec;
using workloads::ModelSpec;

// As `overlapsim simulate` by default: only the first part of a paired collective over this
// many ranks or more runs on the network, the rest at its rate (sim::PairPlanning).
constexpr int kScaledPartsMinRanks = 256;

std::string kind_of_citation(const std::string& source) {
  return source.rfind("assumed", 0) == 0 ? "assumed" : "cited";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string profile_kind(sim::SourceKind kind) {
  switch (kind) {
    case sim::SourceKind::Measured:
      return "fitted";
    case sim::SourceKind::Datasheet:
    case sim::SourceKind::Paper:
      return "cited";
    case sim::SourceKind::Assumed:
      return "assumed";
  }
  return "assumed";
}

struct LoadedCluster {
  ClusterSpec spec;
  sim::Profile profile;
};

// What the simulator says about one configuration, through the same library call as
// `overlapsim simulate` (workloads/scenario_inputs).
SimulatedPoint simulate_point(const ModelSpec& base, const LoadedCluster& loaded,
                              const PlanConfig& c, const std::vector<std::string>& designs,
                              workloads::Sampling sampling) {
  const ClusterSpec& cluster_base = loaded.spec;
  const ClusterSpec cluster = configured_cluster(cluster_base, c.nodes);
  const ModelSpec model = configured_model(base, c, cluster.gpus_per_node);
  sim::ScenarioOptions options;
  options.designs = designs;
  options.zero_wall_times = true;
  options.planning.scaled_parts_min_ranks = kScaledPartsMinRanks;
  options.aggregate_images = sampling != workloads::Sampling::Whole;
  const workloads::ModelRun result =
      workloads::simulate_model(model, cluster, options, sampling, loaded.profile);
  const double model_flops =
      result.model_flops_per_step > 0 ? result.model_flops_per_step : result.flops_per_step;
  SimulatedPoint out;
  out.key = c.key();
  out.tokens_per_step = result.tokens_per_step;
  for (const sim::DesignRun& run : result.result.runs) {
    const sim::StepResult& r = run.result;
    PlanRun p;
    p.design = r.design;
    p.step_time_s = r.step_time_s;
    p.band_low_s = run.band.low_s;
    p.band_high_s = run.band.high_s;
    p.compute_s = r.compute_s;
    p.exposed_comm_s = r.exposed_comm_s;
    p.bubble_s = r.bubble_s;
    p.mfu = model_flops / (r.step_time_s * result.world_size * result.peak_flops_per_s);
    out.runs.push_back(std::move(p));
  }
  // Through the resume file's text, so a resumed plan reads back exactly these numbers.
  return *from_state_line(to_state_line(out));
}

std::string format_s(double s) { return fmt::format("{:.4g} s", s); }

// A group: one cluster at one node count; its feasible points in the order they are timed.
struct Group {
  std::vector<std::size_t> order;
  double cost = 0;  // the simulation work its chain is expected to take (relative)
};

using SimulateFn = std::function<SimulatedPoint(std::size_t)>;
using PruneFn = std::function<void(std::size_t, std::string)>;

// Walks a group's chain: its candidates in order until `top` are simulated; a candidate is
// pruned when its lower bound exceeds a step time every design already reached on the same
// GPUs, and the rest beyond the cap are pruned. `prune` may be null.
void walk_group(const Group& g, const std::vector<PlanPoint>& points, int top, std::size_t designs,
                const SimulateFn& simulate, const PruneFn& prune) {
  std::map<std::string, std::pair<double, std::size_t>> best;  // design -> (step, point)
  int simulated = 0;
  std::size_t next = 0;
  for (; next < g.order.size() && simulated < top; ++next) {
    const std::size_t i = g.order[next];
    const PlanPoint& p = points[i];
    // The step time every design already reaches on these GPUs.
    double reached = 0;
    std::size_t by = 0;
    if (best.size() == designs)
      for (const auto& [design, b] : best)
        if (b.first > reached) reached = b.first, by = b.second;
    if (reached > 0 && p.lower_bound_s > reached) {
      if (prune)
        prune(i, fmt::format(
                     "lower bound {} exceeds {}, which every design reaches with {} on the same "
                     "GPUs",
                     format_s(p.lower_bound_s), format_s(reached), points[by].config.key()));
      continue;
    }
    const SimulatedPoint s = simulate(i);
    ++simulated;
    for (const PlanRun& r : s.runs) {
      auto it = best.find(r.design);
      if (it == best.end() || r.step_time_s < it->second.first) best[r.design] = {r.step_time_s, i};
    }
  }
  if (prune)
    for (; next < g.order.size(); ++next) {
      const PlanPoint& p = points[g.order[next]];
      prune(g.order[next],
            fmt::format("beyond the simulation cap: the {} configurations with the lowest "
                        "analytic estimates on these GPUs were simulated (this one: estimate {}, "
                        "lower bound {})",
                        top, format_s(p.estimate_s), format_s(p.lower_bound_s)));
    }
}

// The simulator's work for one configuration, relative: it runs the micro-batches it
// simulates (all, or the two sampled runs') of every layer of one pipeline (identical
// data-parallel ranks are folded), once per design. The network's share, which grows with
// the node count (the folded ranks' images), is left out.
double simulation_cost(const ModelSpec& model, const PlanConfig& c, workloads::Sampling sampling) {
  const auto microbatches =
      static_cast<std::int64_t>(static_cast<double>(model.training.global_batch) /
                                (static_cast<double>(c.dp) * c.micro_batch));
  const workloads::MicrobatchSample s =
      workloads::microbatch_sample(microbatches, c.pp, c.virtual_stages);
  const double simulated =
      sampling == workloads::Sampling::Whole || !s.sampled()     ? static_cast<double>(microbatches)
      : sampling == workloads::Sampling::Periods && s.by_periods ? s.second
                                                                 : s.first + s.second;
  return simulated * std::max(1, model.transformer.layers);
}

// Deals the groups to `ranks` ranks, dearest first, each to the least loaded rank (ties:
// the lowest): the longest-processing-time rule. Deterministic: every rank computes it.
std::vector<int> deal_groups(std::vector<Group>& groups, const std::vector<PlanPoint>& points,
                             const ModelSpec& model, int top, int ranks,
                             workloads::Sampling sampling) {
  std::vector<std::size_t> by_cost(groups.size());
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    Group& g = groups[gi];
    g.cost = 0;
    for (std::size_t k = 0; k < g.order.size() && k < static_cast<std::size_t>(top); ++k)
      g.cost += simulation_cost(model, points[g.order[k]].config, sampling);
    by_cost[gi] = gi;
  }
  std::stable_sort(by_cost.begin(), by_cost.end(),
                   [&](std::size_t a, std::size_t b) { return groups[a].cost > groups[b].cost; });
  std::vector<double> load(static_cast<std::size_t>(ranks), 0.0);
  std::vector<int> owner(groups.size(), 0);
  for (std::size_t gi : by_cost) {
    const auto least = std::min_element(load.begin(), load.end()) - load.begin();
    owner[gi] = static_cast<int>(least);
    load[static_cast<std::size_t>(least)] += groups[gi].cost;
  }
  return owner;
}

// The --include configurations: each marks its point of the search (or adds one, where the
// search space or its bounds leave it out) as requested and, where it fits in memory, gets a
// chain of its own, which times it whatever the pre-screen and the cap decide; the search's
// own chains run as without it. A text with a cluster index ("c1 n16 ...") names the plan's
// cluster of that index, one without names every cluster; its node count must be one of the
// plan's.
template <typename MakePoint>
void add_requested(const PlanOptions& o, const ModelSpec& model,
                   const std::vector<LoadedCluster>& clusters, const MakePoint& make_point,
                   PlanResult& res, std::vector<Group>& groups) {
  std::set<std::string> seen;
  for (const std::string& text : o.include) {
    const PlanConfig parsed = parse_configuration_text(text, "--include");
    if (parsed.cluster >= static_cast<int>(clusters.size()))
      throw config::ConfigError(fmt::format(
          "--include: '{}' names cluster c{}, but the plan has {} (expected c0..c{}, in -c order)",
          text, parsed.cluster, clusters.size(), clusters.size() - 1));
    if (std::find(o.nodes.begin(), o.nodes.end(), parsed.nodes) == o.nodes.end())
      throw config::ConfigError(
          fmt::format("--include: '{}' runs on {} nodes (expected one of the plan's --nodes: {})",
                      text, parsed.nodes, fmt::join(o.nodes, ",")));
    for (std::size_t ci = 0; ci < clusters.size(); ++ci) {
      if (parsed.cluster >= 0 && static_cast<std::size_t>(parsed.cluster) != ci) continue;
      PlanConfig c = parsed;
      c.cluster = static_cast<int>(ci);
      const ClusterSpec cluster = configure(model, clusters[ci].spec, c, "--include").cluster;
      const std::string key = c.key();
      if (!seen.insert(key).second) continue;
      std::size_t i = 0;
      while (i < res.points.size() && res.points[i].config.key() != key) ++i;
      if (i == res.points.size()) res.points.push_back(make_point(c, cluster));
      res.points[i].requested = true;
      if (res.points[i].status != PointStatus::Rejected) groups.push_back(Group{{i}, 0});
    }
  }
}
}  // namespace

std::string plan_fingerprint(const PlanOptions& o) {
  std::string text = read_text(o.model_file);
  for (const auto& f : o.cluster_files) {
    text += '\0' + read_text(f);
    const ClusterSpec c = workloads::load_cluster(f);
    if (c.gpu && !c.gpu->profile_path.empty()) text += '\0' + read_text(c.gpu->profile_path);
  }
  for (const auto& d : o.designs) text += '\0' + d;
  if (o.exact_simulation) text += std::string(1, '\0') + "exact";
  if (o.sample_by_runs) text += std::string(1, '\0') + "runs";
  return fingerprint(text);
}

void summarise(PlanResult& res) {
  const double target_tokens = res.target.kind == TargetKind::Tokens ? res.target.value : 0;
  bool all_priced = true;
  for (const auto& c : res.clusters) all_priced = all_priced && c.price_per_gpu_hour_usd;
  res.cost_axis = all_priced ? "usd_per_step" : "gpu_hours_per_step";
  std::vector<PlanChoice> choices;
  for (std::size_t i = 0; i < res.points.size(); ++i) {
    PlanPoint& p = res.points[i];
    const PlanCluster& cl = res.clusters[static_cast<std::size_t>(p.config.cluster)];
    for (std::size_t r = 0; r < p.runs.size(); ++r) {
      PlanRun& run = p.runs[r];
      CostInputs in;
      in.step_time_s = run.step_time_s;
      in.tokens_per_step = p.tokens_per_step;
      in.gpus = p.config.gpus;
      if (cl.price_per_gpu_hour_usd) in.price_per_gpu_hour_usd = cl.price_per_gpu_hour_usd->value;
      if (cl.power_W) in.power_W = cl.power_W->value;
      in.target_tokens = target_tokens;
      run.costs = step_costs(in);
      run.meets_target = meets_target(res.target, run.step_time_s, run.costs);
      choices.push_back({i, r});
    }
  }
  auto cost = [&](const PlanChoice& c) {
    const PlanCosts& k = res.run(c).costs;
    return all_priced ? *k.usd_per_step : k.gpu_hours_per_step;
  };
  // Fastest per cluster and design (ties: the first in search order).
  res.fastest.clear();
  for (std::size_t ci = 0; ci < res.clusters.size(); ++ci)
    for (const std::string& d : res.designs) {
      FastestEntry e{static_cast<int>(ci), d, std::nullopt};
      for (const PlanChoice& c : choices)
        if (res.point(c).config.cluster == static_cast<int>(ci) && res.run(c).design == d &&
            (!e.choice || res.run(c).step_time_s < res.run(*e.choice).step_time_s))
          e.choice = c;
      res.fastest.push_back(e);
    }
  // Cheapest meeting the target (per token: the global batch is the same everywhere).
  res.cheapest.reset();
  if (all_priced)
    for (const PlanChoice& c : choices)
      if (res.run(c).meets_target && (!res.cheapest || cost(c) < cost(*res.cheapest)))
        res.cheapest = c;
  std::vector<TimeCost> tc;
  for (const PlanChoice& c : choices) tc.push_back({res.run(c).step_time_s, cost(c)});
  res.pareto.clear();
  for (std::size_t i : pareto_front(tc)) res.pareto.push_back(choices[i]);
}

PlanResult run_plan(const PlanOptions& o) {
  PlanResult res;
  const ModelSpec model = workloads::load_model(o.model_file);
  res.model_name = model.name;
  res.model_file = o.model_file;
  res.global_batch = model.training.global_batch;
  res.seq_len = model.training.seq_len;
  res.nodes = o.nodes;
  res.designs = o.designs;
  res.target = o.target;
  res.simulate_top = o.simulate_top;
  res.exact_simulation = o.exact_simulation;
  res.sample_by_runs = o.sample_by_runs;

  std::vector<LoadedCluster> clusters;
  for (const auto& file : o.cluster_files) {
    LoadedCluster lc;
    lc.spec = workloads::load_cluster(file);
    if (!lc.spec.gpu || lc.spec.gpu->profile_path.empty())
      throw config::ConfigError(
          fmt::format("{}: gpu.profile: missing (expected a profile path such as "
                      "calibration/profiles/datasheet-h200.yaml)",
                      file));
    lc.profile = sim::load_profile(lc.spec.gpu->profile_path);
    PlanCluster pc;
    pc.name = lc.spec.name;
    pc.file = file;
    pc.gpu_name = lc.spec.gpu->name;
    pc.gpus_per_node = lc.spec.gpus_per_node;
    pc.profile = lc.profile.name;
    const auto peak = lc.profile.compute.peak_flops_per_s.find(model.training.precision);
    if (peak == lc.profile.compute.peak_flops_per_s.end())
      throw config::ConfigError(fmt::format(
          "{}: compute.peak_flops_per_s: no {} rate for the model's precision (expected a "
          "profile of a GPU with {} support)",
          lc.profile.path, sim::to_string(model.training.precision),
          sim::to_string(model.training.precision)));
    pc.peak_flops_per_s = peak->second.value;
    if (lc.spec.gpu->memory_bytes)
      pc.memory_bytes = static_cast<double>(lc.spec.gpu->memory_bytes->value);
    if (const auto& p = lc.spec.price_per_gpu_hour_usd)
      pc.price_per_gpu_hour_usd = SourcedValue{p->value, kind_of_citation(p->source), p->source};
    if (const auto& p = lc.spec.gpu->power_W)
      pc.power_W = SourcedValue{p->value, kind_of_citation(p->source), p->source};
    if (o.target.kind != TargetKind::None && !pc.price_per_gpu_hour_usd)
      throw config::ConfigError(fmt::format(
          "{}: price_per_gpu_hour_usd: missing (expected a cited price per GPU-hour: the "
          "target asks for the cheapest configuration)",
          file));
    res.clusters.push_back(std::move(pc));
    clusters.push_back(std::move(lc));
  }

  // Enumerate, check memory, pre-screen.
  // A configuration's point: memory check and pre-screen, on `cluster` at its node count.
  auto make_point = [&](const PlanConfig& c, const ClusterSpec& cluster) {
    PlanPoint p;
    p.config = c;
    const ModelSpec m = configured_model(model, c, cluster.gpus_per_node);
    const workloads::MemoryEstimate mem = workloads::estimate_memory(m, cluster);
    if (!mem.stages.empty()) {
      p.peak_stage = mem.peak_stage();
      p.peak_memory_bytes = mem.peak_bytes();
      for (const auto& t : mem.stages[static_cast<std::size_t>(p.peak_stage)].terms)
        p.memory_terms.push_back({t.name, t.bytes, t.source});
    }
    const Prescreen ps =
        prescreen(m, cluster, res.clusters[static_cast<std::size_t>(c.cluster)].peak_flops_per_s);
    p.lower_bound_s = ps.lower_bound_s;
    p.estimate_s = ps.estimate_s;
    if (!mem.fits()) {
      p.status = PointStatus::Rejected;
      p.reason = mem.explain();
    }
    return p;
  };
  std::vector<Group> groups;
  for (std::size_t ci = 0; ci < clusters.size(); ++ci)
    for (int nodes : o.nodes) {
      const ClusterSpec cluster = configured_cluster(clusters[ci].spec, nodes);
      Group g;
      for (const PlanConfig& c : enumerate_configs(model, cluster, static_cast<int>(ci), nodes,
                                                   o.limits, res.counts.invalid)) {
        PlanPoint p = make_point(c, cluster);
        if (p.status != PointStatus::Rejected) g.order.push_back(res.points.size());
        res.points.push_back(std::move(p));
      }
      std::stable_sort(g.order.begin(), g.order.end(), [&](std::size_t a, std::size_t b) {
        const PlanPoint &pa = res.points[a], &pb = res.points[b];
        if (pa.estimate_s != pb.estimate_s) return pa.estimate_s < pb.estimate_s;
        if (pa.lower_bound_s != pb.lower_bound_s) return pa.lower_bound_s < pb.lower_bound_s;
        // Ties: larger micro-batches (larger GEMMs run closer to peak), less recompute.
        if (pa.config.micro_batch != pb.config.micro_batch)
          return pa.config.micro_batch > pb.config.micro_batch;
        return pa.config.recompute < pb.config.recompute;
      });
      groups.push_back(std::move(g));
    }
  res.counts.enumerated = static_cast<std::int64_t>(res.points.size());
  add_requested(o, model, clusters, make_point, res, groups);

  std::size_t feasible = 0;
  for (const Group& g : groups) feasible += g.order.size();
  if (feasible == 0) {
    std::string why = "no configuration passed the model's rules";
    const PlanPoint* least = nullptr;
    for (const PlanPoint& p : res.points)
      if (!least || p.peak_memory_bytes < least->peak_memory_bytes) least = &p;
    if (least)
      why = fmt::format("all {} configurations exceed the GPU memory; the smallest ({}): {}",
                        res.points.size(), least->config.key(), least->reason);
    throw config::ConfigError(
        fmt::format("{}: empty search space on {} at nodes {}: {} (expected more nodes, a "
                    "GPU with more memory, or a smaller global batch or model)",
                    o.model_file, fmt::join(o.cluster_files, ", "), fmt::join(o.nodes, ","), why));
  }

  // Time the survivors. Each (cluster, node count) group is a chain: its candidates run one
  // after another, lowest estimate first, and what a finished one reached decides whether
  // the next is pruned; chains are independent of each other. So which points run (and
  // which are pruned) depends on neither the thread count nor the MPI ranks: the groups
  // are dealt to the ranks, each rank runs its chains on its threads, the ranks exchange
  // their results, and every rank replays every chain from the exchanged results.
  const Ranks& ranks = o.ranks ? *o.ranks : Ranks::world();
  std::optional<PlanState> state;
  if (!o.state_file.empty()) {
    const auto parent = std::filesystem::path(o.state_file).parent_path();
    if (!parent.empty() && ranks.root()) std::filesystem::create_directories(parent);
    state.emplace(o.state_file, plan_fingerprint(o), o.resume, ranks);
  }
  const workloads::Sampling sampling = o.exact_simulation ? workloads::Sampling::Whole
                                       : o.sample_by_runs ? workloads::Sampling::Runs
                                                          : workloads::Sampling::Periods;
  const std::vector<int> owner =
      deal_groups(groups, res.points, model, o.simulate_top, ranks.size(), sampling);
  std::vector<std::size_t> mine;  // this rank's groups, dearest first
  for (std::size_t gi = 0; gi < groups.size(); ++gi)
    if (owner[gi] == ranks.rank()) mine.push_back(gi);
  std::stable_sort(mine.begin(), mine.end(),
                   [&](std::size_t a, std::size_t b) { return groups[a].cost > groups[b].cost; });
  std::size_t planned = 0;
  for (std::size_t gi : mine)
    planned +=
        std::min<std::size_t>(groups[gi].order.size(), static_cast<std::size_t>(o.simulate_top));
  ProgressLine progress(o.progress && ranks.root(), planned);
  std::vector<std::vector<SimulatedPoint>> finished(groups.size());
  std::atomic<std::size_t> shortfall{0};  // planned points the chains pruned
  std::string failure;                    // this rank's first error, sent to the others
  std::exception_ptr error;
  try {
    parallel_for(mine.size(), std::max(o.threads, 1), [&](std::size_t k) {
      const std::size_t gi = mine[k];
      walk_group(
          groups[gi], res.points, o.simulate_top, o.designs.size(),
          [&](std::size_t i) -> SimulatedPoint {
            const PlanConfig& c = res.points[i].config;
            SimulatedPoint s;
            if (const SimulatedPoint* done = state ? state->find(c.key()) : nullptr) {
              s = *done;
            } else {
              s = simulate_point(model, clusters[static_cast<std::size_t>(c.cluster)], c, o.designs,
                                 sampling);
              if (state) state->append(s);
            }
            finished[gi].push_back(s);
            progress.advance();
            return s;
          },
          nullptr);
      shortfall +=
          std::min<std::size_t>(groups[gi].order.size(), static_cast<std::size_t>(o.simulate_top)) -
          finished[gi].size();
      progress.set_total(planned - shortfall);
    });
  } catch (const config::ConfigError& e) {
    error = std::current_exception();
    failure = std::string("config\t") + e.what();
  } catch (const std::exception& e) {
    error = std::current_exception();
    failure = std::string("other\t") + e.what();
  }
  progress.finish();
  // Exchange: one line per simulated configuration (the resume file's text), or the error.
  std::string text = failure.empty() ? "ok\n" : "error\t" + failure;
  if (failure.empty())
    for (std::size_t gi : mine)
      for (const SimulatedPoint& s : finished[gi]) text += to_state_line(s) + '\n';
  const std::vector<std::string> all = ranks.all_gather(text);
  if (error) std::rethrow_exception(error);
  std::map<std::string, SimulatedPoint> results;
  for (std::size_t r = 0; r < all.size(); ++r) {
    std::istringstream in(all[r]);
    std::string line;
    std::getline(in, line);
    if (line.rfind("error\t", 0) == 0) {
      const std::string rest = line.substr(6);
      const std::string message = rest.substr(rest.find('\t') + 1);
      if (rest.rfind("config\t", 0) == 0) throw config::ConfigError(message);
      throw std::runtime_error(fmt::format("rank {}: {}", r, message));
    }
    while (std::getline(in, line))
      if (auto s = from_state_line(line)) results[s->key] = std::move(*s);
  }
  for (Group& g : groups)
    walk_group(
        g, res.points, o.simulate_top, o.designs.size(),
        [&](std::size_t i) -> SimulatedPoint {
          PlanPoint& p = res.points[i];
          const auto it = results.find(p.config.key());
          if (it == results.end())
            throw std::logic_error("plan: a rank did not return " + p.config.key());
          p.tokens_per_step = it->second.tokens_per_step;
          p.runs = it->second.runs;
          return it->second;
        },
        [&](std::size_t i, std::string reason) {
          res.points[i].status = PointStatus::Pruned;
          res.points[i].reason = std::move(reason);
        });
  // A requested configuration that its search chain pruned was simulated on its own chain.
  for (PlanPoint& p : res.points)
    if (p.requested && !p.runs.empty()) {
      p.status = PointStatus::Feasible;
      p.reason.clear();
    }
  for (const PlanPoint& p : res.points) {
    res.counts.rejected += p.status == PointStatus::Rejected;
    res.counts.pruned += p.status == PointStatus::Pruned;
    res.counts.simulated += !p.runs.empty();
    res.counts.runs += static_cast<std::int64_t>(p.runs.size());
  }

  summarise(res);

  res.caveats = workloads::validation_caveats(model);

  // Provenance: where each number of the plan comes from.
  auto& prov = res.provenance;
  for (std::size_t ci = 0; ci < clusters.size(); ++ci) {
    const LoadedCluster& lc = clusters[ci];
    const PlanCluster& pc = res.clusters[ci];
    const std::string at = pc.name + ": ";
    if (pc.price_per_gpu_hour_usd)
      prov.push_back({at + "price_per_gpu_hour_usd", pc.price_per_gpu_hour_usd->kind,
                      pc.price_per_gpu_hour_usd->source});
    else
      prov.push_back({at + "price_per_gpu_hour_usd", "unknown", "not in the cluster file"});
    if (pc.power_W)
      prov.push_back({at + "gpu.power_W", pc.power_W->kind, pc.power_W->source});
    else
      prov.push_back({at + "gpu.power_W", "unknown", "not in the cluster file: energy unknown"});
    if (lc.spec.gpu->memory_bytes)
      prov.push_back({at + "gpu.memory_bytes", kind_of_citation(lc.spec.gpu->memory_bytes->source),
                      lc.spec.gpu->memory_bytes->source});
    else
      prov.push_back({at + "gpu.memory_bytes", "unknown",
                      "not in the cluster file: no configuration is rejected for memory"});
    prov.push_back({at + "intra_node", kind_of_citation(lc.spec.intra_node.source),
                    lc.spec.intra_node.source});
    prov.push_back({at + "inter_node", kind_of_citation(lc.spec.inter_node.source),
                    lc.spec.inter_node.source});
    for (const auto& e : lc.profile.sources())
      prov.push_back(
          {at + lc.profile.name + " " + e.what, profile_kind(e.source.kind), e.source.citation});
  }
  std::set<std::pair<std::string, std::string>> terms;
  for (const PlanPoint& p : res.points)
    for (const auto& t : p.memory_terms) terms.insert({t.name, t.source});
  for (const auto& [name, source] : terms)
    prov.push_back({"memory: " + name, kind_of_citation(source), source});
  prov.push_back({"pre-screen: lower bound", "cited",
                  "peak FLOP rate of the profile; pipeline bubble (p - 1) / (m v), Narayanan et "
                  "al. 2021 sec. 2.2"});
  prov.push_back({"pre-screen: ordering estimate", "assumed",
                  "unhidden ring all-reduces at the cluster file's link rates; orders the "
                  "simulation, never ranks results"});
  prov.push_back({"step time band", "fitted",
                  "held-out errors of the profile's classes (sim/scenario/step_band.hpp)"});

  // An impossible target: say the best reached.
  if (o.target.kind != TargetKind::None) {
    bool met = false;
    std::optional<PlanChoice> best;
    for (std::size_t i = 0; i < res.points.size(); ++i)
      for (std::size_t r = 0; r < res.points[i].runs.size(); ++r) {
        const PlanChoice c{i, r};
        met = met || res.run(c).meets_target;
        if (!best || res.run(c).step_time_s < res.run(*best).step_time_s) best = c;
      }
    if (!met) {
      const PlanRun& b = res.run(*best);
      const std::string key = res.point(*best).config.key();
      const std::string reached =
          o.target.kind == TargetKind::StepTime
              ? fmt::format("the fastest step is {}", format_s(b.step_time_s))
          : o.target.kind == TargetKind::TokensPerDay
              ? fmt::format("the most is {:.4g} tokens per day", b.costs.tokens_per_day)
              : fmt::format("the fastest takes {:.4g} days", *b.costs.time_to_train_s / 86400);
      throw config::ConfigError(fmt::format(
          "target: {} is met by no simulated configuration: {} ({}, {}) (expected a target "
          "within reach, or more nodes)",
          o.target.describe(), reached, key, b.design));
    }
  }
  return res;
}

}  // namespace overlapsim::planning
