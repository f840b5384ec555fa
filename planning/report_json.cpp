// results.json: everything of PlanResult, user strings escaped by nlohmann.
#include <nlohmann/json.hpp>

#include "planning/reports.hpp"

namespace overlapsim::planning {

namespace {

using nlohmann::ordered_json;

ordered_json json_or_null(const std::optional<double>& v) {
  return v ? ordered_json(*v) : ordered_json();
}

ordered_json sourced(const std::optional<SourcedValue>& v) {
  if (!v) return ordered_json();
  return {{"value", v->value}, {"kind", v->kind}, {"source", v->source}};
}

ordered_json choice(const PlanResult& res, const PlanChoice& c) {
  return {{"configuration", res.point(c).config.key()},
          {"point", c.point},
          {"design", res.run(c).design},
          {"step_time_s", res.run(c).step_time_s}};
}

ordered_json point_json(const PlanResult& res, const PlanPoint& p) {
  const PlanConfig& c = p.config;
  ordered_json terms = ordered_json::array();
  for (const auto& t : p.memory_terms)
    terms.push_back({{"name", t.name}, {"bytes", t.bytes}});  // sources: the provenance list
  ordered_json runs = ordered_json::array();
  for (const PlanRun& r : p.runs) {
    const PlanCosts& k = r.costs;
    runs.push_back({{"design", r.design},
                    {"step_time_s", r.step_time_s},
                    {"band_low_s", r.band_low_s},
                    {"band_high_s", r.band_high_s},
                    {"compute_s", r.compute_s},
                    {"exposed_comm_s", r.exposed_comm_s},
                    {"bubble_s", r.bubble_s},
                    {"mfu", r.mfu},
                    {"meets_target", r.meets_target},
                    {"tokens_per_day", k.tokens_per_day},
                    {"gpu_hours_per_step", k.gpu_hours_per_step},
                    {"usd_per_step", json_or_null(k.usd_per_step)},
                    {"usd_per_million_tokens", json_or_null(k.usd_per_million_tokens)},
                    {"time_to_train_s", json_or_null(k.time_to_train_s)},
                    {"usd_to_train", json_or_null(k.usd_to_train)},
                    {"energy_kWh_per_step", json_or_null(k.energy_kWh_per_step)},
                    {"energy_kWh_to_train", json_or_null(k.energy_kWh_to_train)}});
  }
  const PlanCluster& cl = res.clusters[static_cast<std::size_t>(c.cluster)];
  return {
      {"key", c.key()},
      {"cluster", cl.name},
      {"nodes", c.nodes},
      {"gpus", c.gpus},
      {"tp", c.tp},
      {"pp", c.pp},
      {"virtual_stages", c.virtual_stages},
      {"cp", c.cp},
      {"ep", c.ep},
      {"dp", c.dp},
      {"micro_batch", c.micro_batch},
      {"sequence_parallel", c.sequence_parallel},
      {"recompute", workloads::to_string(c.recompute)},
      {"status", to_string(p.status)},
      {"requested", p.requested},
      {"reason", p.reason},
      {"memory",
       {{"peak_stage", p.peak_stage},
        {"peak_bytes", p.peak_memory_bytes},
        {"gpu_memory_bytes", cl.memory_bytes > 0 ? ordered_json(cl.memory_bytes) : ordered_json()},
        {"terms", terms}}},
      {"prescreen", {{"lower_bound_s", p.lower_bound_s}, {"estimate_s", p.estimate_s}}},
      {"tokens_per_step", p.tokens_per_step},
      {"runs", runs}};
}

}  // namespace

std::string plan_json(const PlanResult& res) {
  ordered_json clusters = ordered_json::array();
  for (const PlanCluster& c : res.clusters)
    clusters.push_back(
        {{"name", c.name},
         {"file", c.file},
         {"gpu", c.gpu_name},
         {"gpus_per_node", c.gpus_per_node},
         {"profile", c.profile},
         {"peak_flops_per_s", c.peak_flops_per_s},
         {"gpu_memory_bytes", c.memory_bytes > 0 ? ordered_json(c.memory_bytes) : ordered_json()},
         {"price_per_gpu_hour_usd", sourced(c.price_per_gpu_hour_usd)},
         {"power_W", sourced(c.power_W)}});
  ordered_json fastest = ordered_json::array();
  for (const FastestEntry& f : res.fastest)
    fastest.push_back({{"cluster", res.clusters[static_cast<std::size_t>(f.cluster)].name},
                       {"design", f.design},
                       {"choice", f.choice ? choice(res, *f.choice) : ordered_json()}});
  ordered_json pareto = ordered_json::array();
  for (const PlanChoice& c : res.pareto) pareto.push_back(choice(res, c));
  ordered_json points = ordered_json::array();
  for (const PlanPoint& p : res.points) points.push_back(point_json(res, p));
  ordered_json caveats = ordered_json::array();
  for (const auto& c : res.caveats) caveats.push_back({{"topic", c.topic}, {"text", c.text}});
  ordered_json provenance = ordered_json::array();
  for (const ProvenanceEntry& e : res.provenance)
    provenance.push_back({{"what", e.what}, {"kind", e.kind}, {"source", e.source}});
  const PlanCounts& n = res.counts;
  ordered_json j = {{"model", res.model_name},
                    {"model_file", res.model_file},
                    {"global_batch", res.global_batch},
                    {"seq_len", res.seq_len},
                    {"clusters", clusters},
                    {"nodes", res.nodes},
                    {"designs", res.designs},
                    {"target", res.target.describe()},
                    {"cost_axis", res.cost_axis},
                    {"simulate_top", res.simulate_top},
                    {"simulation", res.exact_simulation ? "exact"
                                   : res.sample_by_runs ? "sampled by runs"
                                                        : "sampled"},
                    {"counts",
                     {{"enumerated", n.enumerated},
                      {"invalid", n.invalid},
                      {"rejected", n.rejected},
                      {"pruned", n.pruned},
                      {"simulated", n.simulated},
                      {"runs", n.runs}}},
                    {"fastest", fastest},
                    {"cheapest", res.cheapest ? choice(res, *res.cheapest) : ordered_json()},
                    {"pareto", pareto},
                    {"points", points},
                    {"provenance", provenance},
                    {"caveats", caveats}};
  return j.dump() + "\n";  // compact: plans hold tens of thousands of points
}

}  // namespace overlapsim::planning
