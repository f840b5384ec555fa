// results.csv: one row per (configuration, design). Configurations that were not simulated
// (rejected for memory, pruned) have one row with an empty design.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <vector>

#include "planning/escape.hpp"
#include "planning/reports.hpp"

namespace overlapsim::planning {

namespace {

std::string num(double v) { return fmt::format("{}", v); }
std::string cell_or_empty(const std::optional<double>& v) { return v ? num(*v) : ""; }

// "CUDA context" -> "mem_cuda_context_bytes"
std::string memory_column(const std::string& term) {
  std::string out = "mem_";
  for (char ch : term)
    out += std::isalnum(static_cast<unsigned char>(ch))
               ? static_cast<char>(std::tolower(static_cast<unsigned char>(ch)))
               : '_';
  return out + "_bytes";
}

}  // namespace

std::string plan_csv(const PlanResult& res) {
  std::vector<std::string> terms;  // every memory term, in order of first appearance
  for (const PlanPoint& p : res.points)
    for (const auto& t : p.memory_terms)
      if (std::find(terms.begin(), terms.end(), t.name) == terms.end()) terms.push_back(t.name);
  std::string out =
      "model,cluster,gpu,nodes,gpus,tp,pp,virtual_stages,cp,ep,dp,micro_batch,"
      "sequence_parallel,recompute,design,status,requested,reason,peak_stage,peak_memory_bytes,"
      "gpu_memory_bytes";
  for (const auto& t : terms) {
    out += ',';
    out += memory_column(t);
  }
  out +=
      ",lower_bound_s,estimate_s,tokens_per_step,step_time_s,band_low_s,band_high_s,compute_s,"
      "exposed_comm_s,bubble_s,mfu,tokens_per_day,gpu_hours_per_step,usd_per_step,"
      "usd_per_million_tokens,time_to_train_s,usd_to_train,energy_kWh_per_step,"
      "energy_kWh_to_train,meets_target\n";
  for (const PlanPoint& p : res.points) {
    const PlanConfig& c = p.config;
    const PlanCluster& cl = res.clusters[static_cast<std::size_t>(c.cluster)];
    std::string head = fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{}", csv_field(res.model_name), csv_field(cl.name),
        csv_field(cl.gpu_name), c.nodes, c.gpus, c.tp, c.pp, c.virtual_stages, c.cp, c.ep, c.dp,
        c.micro_batch, c.sequence_parallel ? 1 : 0, workloads::to_string(c.recompute));
    std::string memory = fmt::format("{},{},{}", p.peak_stage, num(p.peak_memory_bytes),
                                     cl.memory_bytes > 0 ? num(cl.memory_bytes) : "");
    for (const auto& name : terms) {
      auto it = std::find_if(p.memory_terms.begin(), p.memory_terms.end(),
                             [&](const PlanMemoryTerm& t) { return t.name == name; });
      memory += ',';
      if (it != p.memory_terms.end()) memory += num(it->bytes);
    }
    const std::string screen = fmt::format("{},{}", num(p.lower_bound_s), num(p.estimate_s));
    if (p.runs.empty()) {
      out += fmt::format("{},,{},{},{},{},{},{}\n", head, to_string(p.status), p.requested ? 1 : 0,
                         csv_field(p.reason), memory, screen, std::string(17, ','));
      continue;
    }
    for (const PlanRun& r : p.runs) {
      const PlanCosts& k = r.costs;
      const std::vector<std::string> cells = {head,
                                              r.design,
                                              to_string(p.status),
                                              p.requested ? "1" : "0",
                                              "",
                                              memory,
                                              screen,
                                              num(p.tokens_per_step),
                                              num(r.step_time_s),
                                              num(r.band_low_s),
                                              num(r.band_high_s),
                                              num(r.compute_s),
                                              num(r.exposed_comm_s),
                                              num(r.bubble_s),
                                              num(r.mfu),
                                              num(k.tokens_per_day),
                                              num(k.gpu_hours_per_step),
                                              cell_or_empty(k.usd_per_step),
                                              cell_or_empty(k.usd_per_million_tokens),
                                              cell_or_empty(k.time_to_train_s),
                                              cell_or_empty(k.usd_to_train),
                                              cell_or_empty(k.energy_kWh_per_step),
                                              cell_or_empty(k.energy_kWh_to_train),
                                              r.meets_target ? "1" : "0"};
      out += fmt::format("{}\n", fmt::join(cells, ","));
    }
  }
  return out;
}

}  // namespace overlapsim::planning
