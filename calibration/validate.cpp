#include "calibration/validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <utility>

#include "calibration/ops.hpp"
#include "calibration/pair_loop.hpp"
#include "calibration/ring_name.hpp"
#include "config/error.hpp"
#include "config/units.hpp"
#include "sim/collectives/collective_cost_model.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/exec/step_executor.hpp"
#include "sim/network/flow_network.hpp"
#include "sim/overlap/pair_simulation.hpp"
#include "sim/profile/compute_model.hpp"
#include "workloads/scenario_inputs.hpp"

namespace overlapsim::calibration {
namespace {

const std::vector<std::string> kKindOrder = {
    "compute",           "compute_bf16",       "compute_fp16",       "compute_fp8",
    "compute_fp8_block", "compute_own",        "memory_bound",       "memory_bound_elementwise",
    "collective",        "collective_alone",   "collective_in_loop", "collective_ctas",
    "collective_eff",    "sequential",         "decomposed",         "tilewise",
    "tilewise_ce",       "tilewise_ce_direct", "tilewise_ce_ring",   "shaped",
    "collective_flow"};

sim::CollectiveRequest request_of(const sim::CollectiveOp op, std::uint64_t bytes, int world) {
  sim::CollectiveRequest req;
  req.op = op;
  req.algo = sim::Algorithm::Auto;
  req.bytes = bytes;
  for (int r = 0; r < world; ++r) req.ranks.push_back(r);
  return req;
}

using sim::CollectiveCostModel;
using sim::CollectivePath;
using sim::CollectiveTimingOptions;

struct CollectivePrediction {
  double time_s = -1;
  CollectivePath path = CollectivePath::Cluster;
};

// One collective on a fresh simulator: through the profile timer that `overlapsim simulate`
// uses (a curve at this size, else on NVLink hosts the flow network at the curve's
// efficiency), or with `flow` on the cluster's network alone.
CollectivePrediction collective_time_s(const sim::Profile& profile, const sim::Topology& topo,
                                       const CollectiveTimingOptions& timing, sim::CollectiveOp op,
                                       std::uint64_t bytes, int world, bool flow) {
  sim::Simulator simulator;
  sim::FlowNetwork net(simulator, topo);
  const sim::CollectiveRequest req = request_of(op, bytes, world);
  sim::validate(req, net);
  CollectivePrediction out;
  auto on_done = [&] { out.time_s = simulator.now(); };
  // The cost model outlives this block: the callbacks it schedules run in simulator.run().
  std::optional<CollectiveCostModel> costs;
  if (flow) {
    // What `simulate` charges a collective the profile has no curve for: the flows on the
    // cluster's links plus NCCL's launch, step latencies and protocol efficiency, NVLink at
    // the rate NCCL's kernels reach where the profile has it.
    static const sim::CollectiveProfile no_curves;
    costs.emplace(no_curves, net, timing);
    costs->launch(req, on_done);
  } else {
    costs.emplace(profile.collectives, net, timing);
    out.path = costs->path(op, world, costs->intra_host(req.ranks));
    if (out.path == CollectivePath::Cluster) return out;
    costs->launch(req, on_done);
  }
  simulator.run();
  if (out.time_s < 0) throw std::logic_error("collective did not complete");
  return out;
}

// overlap-bench rows of the tile-wise design with the copy-engine transport (the kernel's
// benchmark name is not fixed yet: either spelling; tilewise_ce_tk: the all-reduce's last
// own group by the tail kernel).
bool is_copy_engine_design(const std::string& design) {
  return design == "tilewise_copy_engine" || design == "tilewise_ce" || design == "tilewise_ce_tk";
}

// A ring row (tilewise_ce_ring*, tilewise_ce_tk_ring*): its configuration from its name, the
// row's chunks column its groups per part.
std::optional<sim::TilewiseDesign::RingReplay> ring_replay(const Measurement& m) {
  if (m.design.rfind("tilewise_ce_ring", 0) != 0 && m.design.rfind("tilewise_ce_tk_ring", 0) != 0)
    return std::nullopt;
  return parse_ring_name(m.design, m.chunks);
}

bool is_ring_design(const Measurement& m) { return ring_replay(m).has_value(); }

// A shaped runner's pair at one grid point, `shaped:s<S>:c<C>` (S SMs kept free, NCCL on C
// CTAs; the row's chunks column its chunk count): S and C, or nullopt for another name.
std::optional<std::pair<int, int>> shaped_point(const std::string& design) {
  int s = 0, c = 0;
  char tail = 0;
  if (std::sscanf(design.c_str(), "shaped:s%d:c%d%c", &s, &c, &tail) != 2 || s < 0 || c < 0)
    return std::nullopt;
  return std::make_pair(s, c);
}

// Why the shaped model cannot replay this grid point ("" where it can): the model runs one
// point, S = NCCL's CTAs = designs.shaped.comm_sms with designs.shaped.chunks chunks.
std::string shaped_point_mismatch(const sim::Profile& profile, const Measurement& m,
                                  std::pair<int, int> point) {
  const sim::Sourced* sms = profile.designs.find("shaped", "comm_sms");
  const sim::Sourced* chunks = profile.designs.find("shaped", "chunks");
  if (!sms || !chunks) return "the profile has no designs.shaped.comm_sms and chunks";
  if (point.first != static_cast<int>(sms->value) || point.second != point.first ||
      m.chunks != static_cast<int>(chunks->value))
    return fmt::format("another grid point than the model's (S = CTAs = {}, {} chunks)",
                       static_cast<int>(sms->value), static_cast<int>(chunks->value));
  return "";
}

// The measured pair as the simulator replays it (sim::simulate_pair: every rank runs the op
// and its collective, the collective timed by the profile's curve): decomposed with the
// row's chunk count, tile-wise with at most the row's group count (its partition and
// carve-out come from the design's own planning).
sim::PairCase pair_case(const sim::Profile& profile, const Measurement& m, const PairParts& parts) {
  sim::PairCase pc;
  pc.compute = compute_op(m, parts.compute);
  pc.collective = *collective_of(parts.collective);
  pc.comm_bytes = m.bytes;
  pc.producer = !parts.collective_first;
  pc.world = m.world;
  if (m.design == "decomposed") pc.chunks = m.chunks;
  if (m.design == "tilewise") {
    pc.max_groups = m.chunks;
    // Replay the kernel's carve-out instead of the design's own search: the row's ctas
    // column where the runner wrote it, else the profile's comm_sms (the runner's default
    // and, in calibrate's runs, the only carve-out its tuner tried: docs/kernels/log.md).
    pc.comm_sms = m.ctas;
    if (const sim::Sourced* s = profile.designs.find("tilewise", "comm_sms"); pc.comm_sms <= 0 && s)
      pc.comm_sms = static_cast<int>(s->value);
  }
  pc.copy_engine = is_copy_engine_design(m.design) || is_ring_design(m);
  // The phase 2 the row measured (its design name says which).
  pc.phase2 = m.design.rfind("tilewise_ce_tk", 0) == 0
                  ? sim::TilewiseDesign::AllReducePhase2::TailKernel
                  : sim::TilewiseDesign::AllReducePhase2::CopyEngine;
  // The direct route unless the name says ring (tilewise_ce_ring*, tilewise_ce_tk_ring*).
  pc.route = sim::TilewiseDesign::Route::Direct;
  pc.ring = ring_replay(m);
  if (pc.ring) pc.max_groups = 0;
  return pc;
}

// The pair under an overlap design (sim/overlap).
sim::PairOutcome design_outcome(const sim::Profile& profile, const sim::Topology& topo,
                                const Measurement& m, const PairParts& parts) {
  const sim::PairCase pc = pair_case(profile, m, parts);
  const std::string design =
      pc.copy_engine ? "tilewise" : (shaped_point(m.design) ? "shaped" : m.design);
  return sim::simulate_pair(pc, design, profile, topo);
}

// The pair under its design at the GEMM clock of the design's own duty cycle: the share of
// the pair's time (at back-to-back rates) with no compute running, through
// compute.idle_clock_boost, as `simulate --gemm-clock duty-cycle` does for a step. A design
// that hides its collective leaves the GPU no idle time to bank; the pair loop's collective
// share (what the loop's GEMM-alone and sequential rows see) would credit it with one.
double design_time_s(const sim::Profile& profile, const sim::Topology& topo, const Measurement& m,
                     const PairParts& parts) {
  const sim::PairOutcome b2b = design_outcome(profile, topo, m, parts);
  const double idle = b2b.time_s > 0 ? std::max(0.0, 1 - b2b.compute_s / b2b.time_s) : 0;
  const double speedup = profile.compute.clock_speedup(idle);
  if (speedup == 1.0) return b2b.time_s;
  sim::Profile p = profile;
  p.compute = sim::with_gemm_rates_scaled(profile.compute, speedup);
  return design_outcome(p, topo, m, parts).time_s;
}

double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

void add_unmodelled(ValidationReport& r, const std::string& kind, const std::string& reason) {
  for (auto& u : r.unmodelled)
    if (u.kind == kind && u.reason == reason) {
      ++u.count;
      return;
    }
  r.unmodelled.push_back({kind, reason, 1});
}

std::vector<const ValidationRow*> worst(const ValidationReport& r, int n) {
  std::vector<const ValidationRow*> v;
  for (const auto& row : r.rows) v.push_back(&row);
  std::stable_sort(v.begin(), v.end(), [](const ValidationRow* a, const ValidationRow* b) {
    return std::fabs(a->rel_err) > std::fabs(b->rel_err);
  });
  if (static_cast<int>(v.size()) > n) v.resize(static_cast<std::size_t>(n));
  return v;
}

std::string shape_of(const Measurement& m) {
  std::string s;
  if (m.m || m.n || m.k) s = fmt::format("{}x{}x{}", m.m, m.n, m.k);
  if (is_collective_op(m.op) || is_pair_op(m.op))
    s += (s.empty() ? "" : " ") + config::format_bytes(m.bytes);
  return s;
}

}  // namespace

KindStats kind_stats(const std::string& kind, std::vector<double> abs_errors) {
  std::sort(abs_errors.begin(), abs_errors.end());
  KindStats k;
  k.kind = kind;
  k.count = static_cast<int>(abs_errors.size());
  k.median_abs_err = quantile(abs_errors, 0.5);
  k.p90_abs_err = quantile(abs_errors, 0.9);
  k.max_abs_err = abs_errors.empty() ? 0 : abs_errors.back();
  return k;
}

ValidationReport validate(const sim::Profile& profile, const std::vector<Measurement>& rows,
                          const workloads::ClusterSpec& cluster) {
  ValidationReport r;
  r.profile_path = profile.path;
  r.cluster_name = cluster.name;
  const sim::Topology topo = workloads::build_topology(cluster);
  const sim::ComputeModel model(profile.compute);
  // Pairs and the GEMMs timed inside their loops alternate compute with collectives: GEMMs
  // there run at the clock the loop's collective share leaves the GPU
  // (compute.idle_clock_boost; back-to-back rates without it).
  const PairLoops loops(rows);
  const auto at_loop_clock = [&](const Measurement& m) {
    const auto loop = loops.of(m);
    const double speedup =
        loop ? profile.compute.clock_speedup(loop_idle_fraction(profile, m, *loop)) : 1.0;
    sim::Profile p = profile;
    p.compute = sim::with_gemm_rates_scaled(profile.compute, speedup);
    return p;
  };
  const CollectiveTimingOptions cluster_timing =
      workloads::collective_timing(cluster, profile, profile.path);
  auto add = [&](const Measurement& m, const std::string& kind, double predicted) {
    r.rows.push_back({&m, kind, predicted, (predicted - m.time_s) / m.time_s});
  };
  for (const Measurement& m : rows) {
    if (m.world > topo.num_gpus())
      throw config::ConfigError(fmt::format(
          "{}: measured on {} GPUs, the cluster {} has {} (expected a cluster with at least the "
          "measured GPU count)",
          m.where(), m.world, cluster.file, topo.num_gpus()));
    // Streaming kernels timed by a framework (benchmarks/peers/elementwise_probe.py: copy,
    // add, scale): the memory curve times them, as it times a step's elementwise ops.
    if (m.op == "elementwise") {
      add(m, "memory_bound", model.time_s(elementwise_op(m)));
      r.rows.back().sub_kind = "memory_bound_elementwise";
      continue;
    }
    if (is_compute_op(m.op)) {
      const bool vendor = (m.op == "embedding") ? m.design == "own" : m.design == "cublas";
      if (m.op == "gemm" && m.design == "own" && !profile.compute.own_gemm_tables.empty()) {
        const sim::ComputeProfile timed = *sim::own_gemm_profile(
            measured_in_pair_loop(m) ? at_loop_clock(m).compute : profile.compute);
        add(m, "compute_own", sim::ComputeModel(timed).time_s(compute_op(m, m.op)));
        continue;
      }
      if (m.op == "gemm" && m.design == "cublas_block128" &&
          profile.compute.fp8_block_scaling_time_factor) {
        sim::OpNode op = compute_op(m, m.op);
        op.fp8_block_scaled = true;
        add(m, "compute", model.time_s(op));
        r.rows.back().sub_kind = "compute_fp8_block";
        continue;
      }
      if (!vendor) {
        add_unmodelled(
            r, m.op + " " + m.design,
            m.design == "own"
                ? "our own GEMM: the profile has no compute.own_gemm_tables to time it by"
            : m.design == "cublas_block128"
                ? "block-scaled FP8 (DeepSeek-V3's recipe): the profile has no "
                  "compute.fp8_block_scaling_time_factor"
                : "a variant of our own GEMM (signals, remapped stores, another version) "
                  "timed for the tile-wise design's parameters, not a simulator op");
        continue;
      }
      // GEMVs and embedding bags stream memory: the memory and embedding curves time them,
      // not the GEMM models, so their errors are a kind of their own.
      const bool memory_bound = m.op == "gemv" || m.op == "embedding";
      add(m, memory_bound ? "memory_bound" : "compute",
          measured_in_pair_loop(m)
              ? sim::ComputeModel(at_loop_clock(m).compute).time_s(compute_op(m, m.op))
              : model.time_s(compute_op(m, m.op)));
      if (!memory_bound) r.rows.back().sub_kind = "compute_" + m.dtype;  // per input type
      continue;
    }
    if (is_collective_op(m.op)) {
      const auto op = collective_of(m.op);
      const int ctas = effective_ctas(m);
      CollectiveTimingOptions timing = cluster_timing;
      timing.ctas = ctas;
      // Alone as nccl-tests times it, or between the GEMMs of a pair loop.
      const bool in_loop = collective_in_compute_loop(m);
      timing.in_compute_loop = in_loop;
      // CTA-limited rows only by a curve measured with that limit.
      if (ctas) timing.nvlink_Bps = 0;
      const CollectivePrediction p =
          collective_time_s(profile, topo, timing, *op, m.bytes, m.world, false);
      if (p.path == CollectivePath::Cluster)
        add_unmodelled(r, ctas ? "collective_ctas" : "collective",
                       fmt::format("the profile has no intra-node curve for {} at this CTA limit{}",
                                   m.op, ctas ? " and size" : " (and the hosts are not NVLink)"));
      else {
        add(m,
            ctas                                   ? "collective_ctas"
            : p.path == CollectivePath::Efficiency ? "collective_eff"
                                                   : "collective",
            p.time_s);
        if (r.rows.back().kind == "collective")
          r.rows.back().sub_kind = in_loop ? "collective_in_loop" : "collective_alone";
      }
      if (!ctas)
        add(m, "collective_flow",
            collective_time_s(profile, topo, timing, *op, m.bytes, m.world, true).time_s);
      continue;
    }
    const auto parts = pair_parts(m.op);
    const auto shaped = shaped_point(m.design);
    if (parts && (m.design == "sequential" || m.design == "decomposed" ||
                  m.design == "tilewise" || shaped)) {
      // Pairs are predicted with the collective's measured curve at the row's size only.
      const auto coll = collective_of(parts->collective);
      const bool curve = coll && [&] {
        sim::Simulator clock;
        sim::FlowNetwork net(clock, topo);
        const CollectiveCostModel costs(profile.collectives, net);
        return costs.path(*coll, m.world, true) == CollectivePath::Curve;
      }();
      if (!curve) {
        add_unmodelled(r, m.design,
                       fmt::format("the profile has no intra-node curve for {} on {} GPUs",
                                   parts->collective, m.world));
        continue;
      }
    }
    if (parts && m.design == "sequential") {
      // Op then collective (or the reverse) on every rank, at the loop's GEMM clock.
      const sim::Profile clocked = at_loop_clock(m);
      add(m, "sequential",
          sim::simulate_pair(pair_case(clocked, m, *parts), "sequential", clocked, topo).time_s);
      continue;
    }
    if (parts && shaped) {
      if (const std::string why = shaped_point_mismatch(profile, m, *shaped); !why.empty()) {
        add_unmodelled(r, "shaped", why);
        continue;
      }
      try {
        add(m, "shaped", design_time_s(profile, topo, m, *parts));
      } catch (const config::ConfigError& e) {
        add_unmodelled(r, "shaped", e.what());
      }
      continue;
    }
    if (parts && (m.design == "decomposed" || m.design == "tilewise" ||
                  is_copy_engine_design(m.design) || is_ring_design(m))) {
      double predicted = 0;
      try {
        predicted = design_time_s(profile, topo, m, *parts);
      } catch (const config::ConfigError& e) {
        // A profile without the design's parameters (docs/designs.md) cannot predict it.
        add_unmodelled(r, m.design, e.what());
        continue;
      }
      const bool ring = is_ring_design(m);
      add(m, ring || is_copy_engine_design(m.design) ? "tilewise_ce" : m.design, predicted);
      // The copy engines' routes apart where both occur (more than 2 ranks).
      if (r.rows.back().kind == "tilewise_ce")
        r.rows.back().sub_kind = ring ? "tilewise_ce_ring" : "tilewise_ce_direct";
      continue;
    }
    if (parts) {
      add_unmodelled(r, m.design, "no overlap-design model of this name");
      continue;
    }
    add_unmodelled(r, m.op + " " + m.design, "no simulator op for this kernel");
  }
  std::map<std::string, std::vector<double>> errs;
  for (const auto& row : r.rows) errs[row.kind].push_back(std::fabs(row.rel_err));
  // A kind's rows apart (collectives alone / in loops, compute per input type) only where
  // more than one of its sub-kinds occurs.
  std::map<std::string, std::map<std::string, std::vector<double>>> sub;
  for (const auto& row : r.rows)
    if (!row.sub_kind.empty()) sub[row.kind][row.sub_kind].push_back(std::fabs(row.rel_err));
  for (auto& [kind, parts] : sub)
    if (parts.size() > 1)
      for (auto& [part, e] : parts) errs[part] = std::move(e);
  for (const auto& kind : kKindOrder)
    if (errs.count(kind)) r.kinds.push_back(kind_stats(kind, errs[kind]));
  return r;
}

std::string format_validation_table(const ValidationReport& r, int worst_rows) {
  std::string s = fmt::format("profile {} on cluster {}: {} predicted row(s)\n", r.profile_path,
                              r.cluster_name, r.rows.size());
  s += fmt::format("{:<16} {:>6} {:>10} {:>10} {:>10}\n", "kind", "rows", "median|e|", "p90|e|",
                   "max|e|");
  for (const auto& k : r.kinds)
    s += fmt::format("{:<16} {:>6} {:>9.2f}% {:>9.2f}% {:>9.2f}%\n", k.kind, k.count,
                     100 * k.median_abs_err, 100 * k.p90_abs_err, 100 * k.max_abs_err);
  for (const auto& u : r.unmodelled)
    s += fmt::format("{:<16} {:>6} not predicted: {}\n", u.kind, u.count, u.reason);
  const auto w = worst(r, worst_rows);
  if (!w.empty()) {
    s += fmt::format("worst {} row(s):\n", w.size());
    for (const ValidationRow* row : w) {
      const Measurement& m = *row->row;
      s += fmt::format("  {:+7.2f}%  {:<16} {} {} {}: measured {}, predicted {} ({})\n",
                       100 * row->rel_err, row->kind, m.op, m.design, shape_of(m),
                       config::format_duration(m.time_s), config::format_duration(row->predicted_s),
                       m.where());
    }
  }
  return s;
}

std::string format_validation_json(const ValidationReport& r, int worst_rows) {
  auto row_json = [](const ValidationRow& row) {
    const Measurement& m = *row.row;
    nlohmann::ordered_json j;
    j["where"] = m.where();
    j["kind"] = row.kind;
    j["op"] = m.op;
    j["design"] = m.design;
    j["m"] = m.m;
    j["n"] = m.n;
    j["k"] = m.k;
    j["bytes"] = m.bytes;
    j["chunks"] = m.chunks;
    j["ctas"] = effective_ctas(m);
    j["measured_s"] = m.time_s;
    j["predicted_s"] = row.predicted_s;
    j["rel_err"] = row.rel_err;
    return j;
  };
  nlohmann::ordered_json j;
  j["profile"] = r.profile_path;
  j["measurements"] = r.measurements_path;
  j["cluster"] = r.cluster_name;
  j["kinds"] = nlohmann::ordered_json::array();
  for (const auto& k : r.kinds)
    j["kinds"].push_back({{"kind", k.kind},
                          {"count", k.count},
                          {"median_abs_err", k.median_abs_err},
                          {"p90_abs_err", k.p90_abs_err},
                          {"max_abs_err", k.max_abs_err}});
  j["unmodelled"] = nlohmann::ordered_json::array();
  for (const auto& u : r.unmodelled)
    j["unmodelled"].push_back({{"kind", u.kind}, {"count", u.count}, {"reason", u.reason}});
  j["worst"] = nlohmann::ordered_json::array();
  for (const ValidationRow* row : worst(r, worst_rows)) j["worst"].push_back(row_json(*row));
  j["rows"] = nlohmann::ordered_json::array();
  for (const auto& row : r.rows) j["rows"].push_back(row_json(row));
  return j.dump(2) + "\n";
}

}  // namespace overlapsim::calibration
