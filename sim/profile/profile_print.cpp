// format_profile: the loaded cost model as a table (NCCL prints its tuning table the same way).
#include <fmt/format.h>

#include <string>
#include <utility>

#include "sim/profile/profile_load.hpp"
#include "config/units.hpp"

namespace overlapsim::sim {
namespace {

// The wave model's tile: one tile, per shape, or the best-of choices with their
// efficiencies (0x0: stream-K).
std::string gemm_tile_text(const GemmWaveModel& w) {
  if (w.tile_per_shape) return "per shape";
  if (!w.best_of_choices())
    return w.partial_wave_floor == 1 ? fmt::format("{}x{}", w.tile_m, w.tile_n)
                                     : fmt::format("{}x{}, partial wave >= {:.3g}", w.tile_m,
                                                   w.tile_n, w.partial_wave_floor);
  std::string out = "best of";
  for (const GemmKernelChoice& c : w.choices)
    out += c.stream_k() ? fmt::format(" stream-K x{:.3g}", c.efficiency)
                        : fmt::format(" {}x{} x{:.3g}", c.tile_m, c.tile_n, c.efficiency);
  return out + fmt::format(", split-K <= {}", w.max_split_k);
}

std::string source_text(const Provenance& p) {
  std::string s = to_string(p.kind);
  if (p.fit_error >= 0) s += fmt::format(" (fit error {:.1f}%)", 100 * p.fit_error);
  return s + ": " + p.citation;
}

std::string curve_text(const LogCurve& c, bool bytes) {
  std::string s;
  for (const auto& [x, y] : c.points) {
    if (!s.empty()) s += "  ";
    s += bytes ? fmt::format("{}:{:.3f}", config::format_bytes(static_cast<std::uint64_t>(x)), y)
               : fmt::format("{:.0e}:{:.3f}", x, y);
  }
  return s;
}

void line(std::string& out, const std::string& what, const std::string& value,
          const Provenance& p) {
  out += fmt::format("  {:<28} {:<22} {}\n", what, value, source_text(p));
}

}  // namespace

std::string format_profile(const Profile& p) {
  const ComputeProfile& c = p.compute;
  std::string out =
      fmt::format("profile {} ({}): {}, {} SMs\n", p.name, p.path, p.device.name, p.device.sms);
  std::string provenance;
  for (const auto& [label, value] :
       {std::pair<const char*, const std::string&>{"host", p.device.host},
        {"date", p.device.date},
        {"driver", p.device.driver},
        {"CUDA", p.device.cuda},
        {"NCCL", p.device.nccl}})
    if (!value.empty())
      provenance += fmt::format("{}{} {}", provenance.empty() ? "" : ", ", label, value);
  if (!provenance.empty()) out += fmt::format("device measured at: {}\n", provenance);
  out += fmt::format("numbers: {}\n", p.source_kinds());
  out += "compute\n";
  for (const auto& [prec, v] : c.peak_flops_per_s)
    line(out, fmt::format("peak {}", to_string(prec)),
         fmt::format("{:.1f} TFLOP/s", v.value / 1e12), v.source);
  line(out, "memory bandwidth", config::format_bandwidth(c.memory_bandwidth_Bps.value),
       c.memory_bandwidth_Bps.source);
  line(out, "memory capacity", fmt::format("{:.1f} GB", c.memory_capacity_bytes.value / 1e9),
       c.memory_capacity_bytes.source);
  line(out, "launch overhead", config::format_duration(c.launch_overhead_s.value),
       c.launch_overhead_s.source);
  if (c.concurrent_comm_slowdown)
    line(out, "beside NCCL", fmt::format("x{:.4g} compute time", c.concurrent_comm_slowdown->value),
         c.concurrent_comm_slowdown->source);
  for (const KernelTimeCurveKey& k : kKernelTimeCurves) {
    const LogCurve& curve = c.*k.curve;
    if (curve.empty()) continue;
    std::string pts;
    for (const auto& [t, slow] : curve.points)
      pts += fmt::format("{}{}:x{:.3g}", pts.empty() ? "" : " ", config::format_duration(t), slow);
    line(out, k.label, "kernel time:slowdown " + pts, curve.source);
  }
  out += "efficiency (fraction of peak; FLOPs:eff or bytes:eff, log-linear between points)\n";
  for (const auto& [prec, curve] : c.gemm_efficiency)
    line(out, fmt::format("gemm {}", to_string(prec)), curve_text(curve, false), curve.source);
  line(out, "attention forward", curve_text(c.attention_forward_efficiency, false),
       c.attention_forward_efficiency.source);
  line(out, "attention backward", curve_text(c.attention_backward_efficiency, false),
       c.attention_backward_efficiency.source);
  line(out, "memory", curve_text(c.memory_efficiency, true), c.memory_efficiency.source);
  if (!c.gemv_efficiency.empty())
    line(out, "gemv", curve_text(c.gemv_efficiency, true), c.gemv_efficiency.source);
  line(out, "embedding", curve_text(c.embedding_efficiency, true), c.embedding_efficiency.source);
  for (const auto* tables : {&c.gemm_tables, &c.own_gemm_tables})
    for (const auto& [prec, t] : *tables)
      line(out,
           fmt::format("{} {}", tables == &c.gemm_tables ? "gemm table" : "own gemm table",
                       to_string(prec)),
           t.is_wave_model()
               ? fmt::format("waves: {:.3g} s + {:.3g} s/output + 2mnk / {:.4g} FLOP/s, tile {}",
                             t.waves.fixed_s, t.waves.output_s_per_element,
                             t.waves.mainloop_flops_per_s, gemm_tile_text(t.waves))
               : fmt::format("{}x{}x{} shapes", t.m_values.size(), t.n_values.size(),
                             t.k_values.size()),
           t.source);
  if (const auto& t = c.attention_table) {
    // The forward and backward efficiency at each head dimension, at the longest sequence.
    std::string text = fmt::format("{} head dims x {} seqs; at {}:", t->head_dims.size(),
                                   t->seq_lens.size(), t->seq_lens.back());
    for (double d : t->head_dims)
      text += fmt::format(" d{} {:.3g}/{:.3g}", d, t->efficiency(false, d, t->seq_lens.back()),
                          t->efficiency(true, d, t->seq_lens.back()));
    line(out, "attention table (fwd/bwd)", text, t->source);
  }
  out += fmt::format("collectives ({} curves)\n", p.collectives.curves.size());
  for (const auto& cc : p.collectives.curves) {
    std::string segs;
    for (const auto& s : cc.segments)
      segs += fmt::format("{}{}+: {} + S/{}", segs.empty() ? "" : "; ",
                          config::format_bytes(s.min_bytes), config::format_duration(s.latency_s),
                          config::format_bandwidth(s.bus_bandwidth_Bps));
    line(out,
         fmt::format("{} {} {} n={} ctas={}", to_string(cc.op), to_string(cc.algo),
                     to_string(cc.scope), cc.ranks, cc.ctas),
         segs, cc.source);
    if (cc.in_compute_loop_factor)
      line(out, "  between compute kernels",
           fmt::format("time x {:.4g}", cc.in_compute_loop_factor->value),
           cc.in_compute_loop_factor->source);
  }
  out += "designs\n";
  for (const auto& [design, params] : p.designs.by_design)
    for (const auto& [key, v] : params)
      line(out, fmt::format("{}.{}", design, key), fmt::format("{:g}", v.value), v.source);
  out += fmt::format("measurements: {}\n", p.measurements.empty() ? "(none)" : p.measurements);
  return out;
}

}  // namespace overlapsim::sim
