#include "calibration/profile_yaml.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <sstream>

namespace overlapsim::calibration {
namespace {

void comment(std::string& out, const ProfileYamlOptions& o, const std::string& key,
             const std::string& indent) {
  auto it = o.comments.find(key);
  if (it == o.comments.end()) return;
  std::istringstream lines(it->second);
  std::string line;
  while (std::getline(lines, line)) out += indent + "# " + line + "\n";
}

std::string provenance(const sim::Provenance& p) {
  std::string s =
      fmt::format("source: {}, citation: {}", sim::to_string(p.kind), yaml_quoted(p.citation));
  if (p.fit_error >= 0) s += ", fit_error: " + yaml_number(p.fit_error);
  return s;
}

std::string sourced(const sim::Sourced& s) {
  return fmt::format("{{value: {}, {}}}", yaml_number(s.value), provenance(s.source));
}

std::string bytes_number(double v) {
  return fmt::format("{}", static_cast<unsigned long long>(std::llround(v)));
}

std::string points(const std::vector<std::pair<double, double>>& pts, bool x_bytes) {
  std::string s = "[";
  for (std::size_t i = 0; i < pts.size(); ++i) {
    if (i) s += ", ";
    s += fmt::format("[{}, {}]", x_bytes ? bytes_number(pts[i].first) : yaml_number(pts[i].first),
                     yaml_number(pts[i].second));
  }
  return s + "]";
}

std::string number_list(const std::vector<double>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + yaml_number(v[i]);
  return s + "]";
}

std::string curve(const sim::LogCurve& c, const char* over) {
  return fmt::format("{{over: {}, points: {}, {}}}", over,
                     points(c.points, std::string(over) == "bytes"), provenance(c.source));
}

}  // namespace

std::string yaml_number(double value) {
  // The shortest %g form that reads back to the same double: 1.03e-06, not the
  // 1.0299999999999999e-06 that 1.03 * 1e-6 is when printed exactly.
  for (int digits = 6; digits <= 17; ++digits) {
    const std::string s = fmt::format("{:.{}g}", value, digits);
    double back = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), back);
    if (ec == std::errc() && end == s.data() + s.size() && back == value) return s;
  }
  return fmt::format("{}", value);
}

std::string yaml_quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// A flow list of an m x n x k grid's values, one k row per line after the first.
std::string grid_list(const std::vector<double>& values, std::size_t row,
                      const std::string& indent) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += (i % row == 0) ? ",\n" + indent : ", ";
    out += yaml_number(values[i]);
  }
  return out + "]";
}

// compute.gemm_tables or compute.own_gemm_tables (the same form).
void write_gemm_tables(std::string& out, const ProfileYamlOptions& o, const char* name,
                       const std::map<sim::Precision, sim::GemmTable>& tables) {
  if (!tables.empty()) {
    out += fmt::format("  {}:\n", name);
    for (const auto& [prec, t] : tables) {
      comment(out, o, fmt::format("compute.{}.{}", name, sim::to_string(prec)), "    ");
      out += fmt::format("    {}:\n", sim::to_string(prec));
      if (t.is_wave_model()) {
        const sim::GemmWaveModel& w = t.waves;
        out += fmt::format(
            "      model: waves\n      fixed_s: {}\n      output_s_per_element: {}\n"
            "      mainloop_flops_per_s: {}\n",
            yaml_number(w.fixed_s), yaml_number(w.output_s_per_element),
            yaml_number(w.mainloop_flops_per_s));
        if (w.best_of_choices()) {
          std::string choices;
          for (const sim::GemmKernelChoice& c : w.choices)
            choices += fmt::format("{}[{}, {}, {}]", choices.empty() ? "" : ", ", c.tile_m,
                                   c.tile_n, yaml_number(c.efficiency));
          out += fmt::format(
              "      tile: best\n      sms: {}\n      choices: [{}]\n      max_split_k: {}\n",
              w.sms, choices, w.max_split_k);
        } else if (w.quantised()) {
          out += w.tile_per_shape ? fmt::format("      tile: per_shape\n      sms: {}\n", w.sms)
                                  : fmt::format("      tile: [{}, {}]\n      sms: {}\n", w.tile_m,
                                                w.tile_n, w.sms);
        }
        if (w.whole_tiles_below_one_wave) out += "      below_one_wave: whole_tiles\n";
        if (w.partial_wave_floor != 1)
          out += fmt::format("      partial_wave_floor: {}\n", yaml_number(w.partial_wave_floor));
        if (!t.time_factor.empty()) {
          out += fmt::format("      correction:\n        m: {}\n        n: {}\n        k: {}\n",
                             number_list(t.m_values), number_list(t.n_values),
                             number_list(t.k_values));
          out +=
              "        time_factor: " + grid_list(t.time_factor, t.k_values.size(), "          ") +
              "\n";
        }
      } else {
        out += fmt::format("      m: {}\n      n: {}\n      k: {}\n", number_list(t.m_values),
                           number_list(t.n_values), number_list(t.k_values));
        out += "      achieved_flops_per_s: " +
               grid_list(t.achieved_flops_per_s, t.k_values.size(), "        ") + "\n";
      }
      out += fmt::format("      source: {}\n      citation: {}\n", sim::to_string(t.source.kind),
                         yaml_quoted(t.source.citation));
      if (t.source.fit_error >= 0)
        out += fmt::format("      fit_error: {}\n", yaml_number(t.source.fit_error));
    }
  }
}

std::string format_profile_yaml(const sim::Profile& p, const ProfileYamlOptions& o) {
  std::string out;
  {
    std::istringstream lines(o.header);
    std::string line;
    while (std::getline(lines, line)) out += line.empty() ? "#\n" : "# " + line + "\n";
  }
  out += "format: 1\n";
  out += fmt::format("kind: {}\n", o.kind);
  if (!o.description.empty()) out += fmt::format("description: {}\n", yaml_quoted(o.description));

  const sim::DeviceInfo& d = p.device;
  out += "device:\n";
  out += fmt::format("  name: {}\n  sms: {}\n", yaml_quoted(d.name), d.sms);
  for (const auto& [key, value] :
       std::vector<std::pair<const char*, std::string>>{{"driver", d.driver},
                                                        {"cuda", d.cuda},
                                                        {"nccl", d.nccl},
                                                        {"date", d.date},
                                                        {"host", d.host}})
    if (!value.empty()) out += fmt::format("  {}: {}\n", key, yaml_quoted(value));
  if (d.nccl_nvlink_bandwidth_Bps)
    out += fmt::format("  nccl_nvlink_bandwidth_Bps: {}\n", sourced(*d.nccl_nvlink_bandwidth_Bps));
  out += fmt::format("  source: {}\n  citation: {}\n", sim::to_string(o.device_source.kind),
                     yaml_quoted(o.device_source.citation));

  const sim::ComputeProfile& c = p.compute;
  out += "compute:\n  peak_flops_per_s:\n";
  for (const auto& [prec, s] : c.peak_flops_per_s)
    out += fmt::format("    {}: {}\n", sim::to_string(prec), sourced(s));
  out += fmt::format("  memory_bandwidth_Bps: {}\n", sourced(c.memory_bandwidth_Bps));
  out += fmt::format("  memory_capacity_bytes: {{value: {}, {}}}\n",
                     bytes_number(c.memory_capacity_bytes.value),
                     provenance(c.memory_capacity_bytes.source));
  out += fmt::format("  launch_overhead_s: {}\n", sourced(c.launch_overhead_s));
  if (c.idle_clock_boost) {
    comment(out, o, "compute.idle_clock_boost", "  ");
    out += fmt::format("  idle_clock_boost: {}\n", sourced(*c.idle_clock_boost));
  }
  if (c.concurrent_comm_slowdown) {
    comment(out, o, "compute.concurrent_comm_slowdown", "  ");
    out += fmt::format("  concurrent_comm_slowdown: {}\n", sourced(*c.concurrent_comm_slowdown));
  }
  for (const sim::KernelTimeCurveKey& k : sim::kKernelTimeCurves) {
    const sim::LogCurve& curve = c.*k.curve;
    if (curve.empty()) continue;
    comment(out, o, fmt::format("compute.{}", k.key), "  ");
    std::string pts = "[";
    for (std::size_t i = 0; i < curve.points.size(); ++i) {
      const auto& [t, slow] = curve.points[i];
      pts += fmt::format("{}[{:.2f}us, {}]", i ? ", " : "", t * 1e6, yaml_number(slow));
    }
    out += fmt::format("  {}: {{over: kernel_time, points: {}], {}}}\n", k.key, pts,
                       provenance(curve.source));
  }
  if (c.fp8_block_scaling_time_factor) {
    comment(out, o, "compute.fp8_block_scaling_time_factor", "  ");
    out += fmt::format("  fp8_block_scaling_time_factor: {}\n",
                       sourced(*c.fp8_block_scaling_time_factor));
  }
  out += "  efficiency:\n    gemm:\n";
  for (const auto& [prec, lc] : c.gemm_efficiency) {
    comment(out, o, fmt::format("compute.efficiency.gemm.{}", sim::to_string(prec)), "      ");
    out += fmt::format("      {}: {}\n", sim::to_string(prec), curve(lc, "flops"));
  }
  struct Named {
    const char* key;
    const sim::LogCurve* curve;
    const char* over;
    bool optional;
  };
  const Named named[] = {{"attention_forward", &c.attention_forward_efficiency, "flops", false},
                         {"attention_backward", &c.attention_backward_efficiency, "flops", false},
                         {"memory", &c.memory_efficiency, "bytes", false},
                         {"gemv", &c.gemv_efficiency, "bytes", true},
                         {"embedding", &c.embedding_efficiency, "bytes", false}};
  for (const Named& n : named) {
    if (n.optional && n.curve->empty()) continue;
    comment(out, o, fmt::format("compute.efficiency.{}", n.key), "    ");
    out += fmt::format("    {}: {}\n", n.key, curve(*n.curve, n.over));
  }
  write_gemm_tables(out, o, "gemm_tables", c.gemm_tables);
  write_gemm_tables(out, o, "own_gemm_tables", c.own_gemm_tables);
  if (const auto& t = c.attention_table) {
    comment(out, o, "compute.attention_table", "  ");
    out += fmt::format("  attention_table:\n    head_dims: {}\n    seq_lens: {}\n",
                       number_list(t->head_dims), number_list(t->seq_lens));
    // One row per head dimension.
    for (const auto* grid : {&t->forward, &t->backward}) {
      const std::size_t n = t->seq_lens.size();
      std::string rows;
      for (std::size_t i = 0; i < t->head_dims.size(); ++i)
        rows += fmt::format(
            "{}{}", i ? ",\n      " : "",
            number_list(std::vector<double>(grid->begin() + i * n, grid->begin() + (i + 1) * n)));
      out += fmt::format("    {}: [{}]\n", grid == &t->forward ? "forward" : "backward", rows);
    }
    for (const sim::LogCurve* curve : {&t->occupancy_forward, &t->occupancy_backward})
      if (!curve->empty())
        out +=
            fmt::format("    {}: {}\n",
                        curve == &t->occupancy_forward ? "occupancy_forward" : "occupancy_backward",
                        points(curve->points, false));
    out += fmt::format("    source: {}\n    citation: {}\n", sim::to_string(t->source.kind),
                       yaml_quoted(t->source.citation));
    if (t->source.fit_error >= 0)
      out += fmt::format("    fit_error: {}\n", yaml_number(t->source.fit_error));
  }

  out += p.collectives.curves.empty() ? "collectives: []\n" : "collectives:\n";
  for (std::size_t i = 0; i < p.collectives.curves.size(); ++i) {
    const sim::CollectiveCurve& cc = p.collectives.curves[i];
    comment(out, o, fmt::format("collectives.{}", i), "  ");
    out +=
        fmt::format("  - op: {}\n    algorithm: {}\n    scope: {}\n    ranks: {}\n    ctas: {}\n",
                    sim::to_string(cc.op), sim::to_string(cc.algo), sim::to_string(cc.scope),
                    cc.ranks, cc.ctas);
    out += "    segments:\n";
    for (const auto& s : cc.segments)
      out += fmt::format("      - {{min_bytes: {}, latency_s: {}, bus_bandwidth_Bps: {}}}\n",
                         s.min_bytes, yaml_number(s.latency_s), yaml_number(s.bus_bandwidth_Bps));
    if (cc.in_compute_loop_factor) {
      comment(out, o, fmt::format("collectives.{}.in_compute_loop_factor", i), "    ");
      out += fmt::format("    in_compute_loop_factor: {}\n", sourced(*cc.in_compute_loop_factor));
    }
    out += fmt::format("    source: {}\n    citation: {}\n", sim::to_string(cc.source.kind),
                       yaml_quoted(cc.source.citation));
    if (cc.source.fit_error >= 0)
      out += fmt::format("    fit_error: {}\n", yaml_number(cc.source.fit_error));
  }

  if (!p.designs.by_design.empty()) {
    out += "designs:\n";
    for (const auto& [design, params] : p.designs.by_design) {
      out += fmt::format("  {}:\n", design);
      for (const auto& [key, s] : params) {
        comment(out, o, fmt::format("designs.{}.{}", design, key), "    ");
        out += fmt::format("    {}: {}\n", key, sourced(s));
      }
    }
  }
  if (!p.measurements.empty()) {
    comment(out, o, "measurements", "");
    out += fmt::format("measurements: {}\n", yaml_quoted(p.measurements));
  }
  return out;
}

}  // namespace overlapsim::calibration
