#include "sim/profile/profile_load.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>

#include "sim/overlap/registry.hpp"
#include "config/units.hpp"

namespace overlapsim::sim {
namespace {

using config::ConfigNode;

// How a value is written, decided by its key's unit suffix (the project's naming rule).
enum class Unit { Plain, Seconds, Bytes, Bps, FlopsPerS };

Unit unit_of_key(const std::string& key) {
  auto ends = [&](std::string_view s) {
    return key.size() >= s.size() && key.compare(key.size() - s.size(), s.size(), s) == 0;
  };
  if (ends("_flops_per_s")) return Unit::FlopsPerS;
  if (ends("_Bps")) return Unit::Bps;
  if (ends("_bytes")) return Unit::Bytes;
  if (ends("_s")) return Unit::Seconds;
  return Unit::Plain;
}

double parse_value(const ConfigNode& node, Unit unit) {
  switch (unit) {
    case Unit::Seconds:
      return node.as_duration_s();
    case Unit::Bytes:
      return static_cast<double>(node.as_bytes());
    case Unit::Bps:
      return node.as_bandwidth_Bps();
    case Unit::FlopsPerS:
      return node.as_flops_per_s();
    case Unit::Plain:
      return node.as_double();
  }
  return 0;
}

const std::vector<std::string> kSourceKeys = {"source", "citation", "fit_error"};

std::vector<std::string> with_source_keys(std::vector<std::string> keys) {
  keys.insert(keys.end(), kSourceKeys.begin(), kSourceKeys.end());
  return keys;
}

// Reads source / citation / fit_error of a map that carries a number or a table.
Provenance parse_provenance(const ConfigNode& node) {
  if (!node.has("source"))
    node.fail_key("source", "missing (expected source: measured, datasheet, paper or assumed)");
  Provenance p;
  const std::string kind = node.get_enum("source", {"measured", "datasheet", "paper", "assumed"});
  p.kind = *parse_source_kind(kind);
  if (!node.has("citation"))
    node.fail_key("citation",
                  "missing (expected the datasheet, paper or measurement this number comes from)");
  p.citation = node.get_string("citation");
  if (p.citation.empty()) node.fail_key("citation", "empty (expected a non-empty citation)");
  if (node.has("fit_error")) {
    p.fit_error = node.get_double("fit_error");
    if (p.fit_error < 0) node.fail_key("fit_error", "negative (expected a relative error >= 0)");
  }
  return p;
}

// { value: <number with the unit of `key`>, source: ..., citation: ..., fit_error: ... }
Sourced parse_sourced(const ConfigNode& parent, const std::string& key, Unit unit) {
  ConfigNode node = parent.child(key);
  if (!node.is_map())
    node.fail(
        "expected a map {value: ..., source: measured|datasheet|paper|assumed, citation: ...}");
  node.check_keys(with_source_keys({"value"}));
  Sourced s;
  s.value = parse_value(node.child("value"), unit);
  s.source = parse_provenance(node);
  return s;
}

Sourced parse_sourced(const ConfigNode& parent, const std::string& key) {
  return parse_sourced(parent, key, unit_of_key(key));
}

Precision parse_precision(const ConfigNode& node, const std::string& text) {
  if (text == "bf16") return Precision::BF16;
  if (text == "fp16") return Precision::FP16;
  if (text == "fp8") return Precision::FP8;
  if (text == "fp32") return Precision::FP32;
  node.fail_key(text, "unknown precision (expected one of: bf16, fp16, fp8, fp32)");
}

// A list of [x, y] pairs with x strictly increasing (and > 0 when `log_x`).
std::vector<std::pair<double, double>> parse_points(const ConfigNode& node, Unit x_unit, bool log_x,
                                                    double y_min, double y_max,
                                                    const char* y_expected) {
  if (!node.is_sequence() || node.size() == 0)
    node.fail("expected a non-empty list of [x, y] points");
  std::vector<std::pair<double, double>> out;
  for (std::size_t i = 0; i < node.size(); ++i) {
    ConfigNode pt = node.at(i);
    if (!pt.is_sequence() || pt.size() != 2) pt.fail("expected a point [x, y]");
    const double x = parse_value(pt.at(0), x_unit);
    const double y = pt.at(1).as_double();
    if (log_x && !(x > 0)) pt.at(0).fail(fmt::format("{} is not positive (expected x > 0)", x));
    if (!out.empty() && !(x > out.back().first))
      pt.at(0).fail(fmt::format("{} does not increase (expected x values in increasing order)", x));
    if (!(y >= y_min && y <= y_max))
      pt.at(1).fail(fmt::format("{} out of range (expected {})", y, y_expected));
    out.emplace_back(x, y);
  }
  return out;
}

// A sourced curve, {over: <over>, points: [[x, y], ...], source, citation}, x in x_unit
// (positive, increasing), y in [y_min, y_max]; `form` is the map as the errors show it.
LogCurve parse_sourced_curve(const ConfigNode& parent, const std::string& key,
                             const std::string& over, const char* form, Unit x_unit, double y_min,
                             double y_max, const std::string& y_expected) {
  ConfigNode node = parent.child(key);
  if (!node.is_map()) node.fail(fmt::format("expected a map {}", form));
  node.check_keys(with_source_keys({"over", "points"}));
  node.get_enum("over", {over});
  LogCurve c;
  c.points = parse_points(node.child("points"), x_unit, true, y_min, y_max, y_expected.c_str());
  c.source = parse_provenance(node);
  return c;
}

// { over: flops|bytes, points: [[x, efficiency], ...], source, citation, fit_error }
LogCurve parse_efficiency(const ConfigNode& parent, const std::string& key,
                          const std::string& over) {
  return parse_sourced_curve(
      parent, key, over, "{over: ..., points: [[x, efficiency], ...], source: ...}",
      over == "bytes" ? Unit::Bytes : Unit::Plain, 1e-6, 1.0, "an efficiency in (0, 1]");
}

// { over: kernel_time, points: [[time, slowdown], ...], source, citation }: `ratio` (a
// kernel's or a collective's time beside the other over its time alone) by a kernel's time
// alone.
LogCurve parse_kernel_time_curve(const ConfigNode& parent, const std::string& key,
                                 const std::string& ratio) {
  return parse_sourced_curve(parent, key, "kernel_time",
                             "{over: kernel_time, points: [[time, slowdown], ...], source: ...}",
                             Unit::Seconds, 1.0, 10.0, ratio + " in [1, 10]");
}

std::vector<double> parse_number_list(const ConfigNode& node, Unit unit) {
  if (!node.is_sequence() || node.size() == 0) node.fail("expected a non-empty list of numbers");
  std::vector<double> out;
  for (std::size_t i = 0; i < node.size(); ++i) out.push_back(parse_value(node.at(i), unit));
  return out;
}

// model: waves (GemmWaveModel) or the rate grid (model: table, or no model key).
GemmTable parse_gemm_wave_model(const ConfigNode& node) {
  node.check_keys(with_source_keys({"model", "fixed_s", "output_s_per_element",
                                    "mainloop_flops_per_s", "tile", "sms", "below_one_wave",
                                    "choices", "max_split_k", "partial_wave_floor", "correction"}));
  GemmTable t;
  GemmWaveModel& w = t.waves;
  w.fixed_s = parse_value(node.child("fixed_s"), Unit::Seconds);
  w.output_s_per_element = parse_value(node.child("output_s_per_element"), Unit::Seconds);
  w.mainloop_flops_per_s = parse_value(node.child("mainloop_flops_per_s"), Unit::FlopsPerS);
  if (auto tile = node.optional_child("tile")) {
    if (tile->is_scalar() && tile->as_string() == "per_shape") {
      w.tile_per_shape = true;
    } else if (tile->is_scalar() && tile->as_string() == "best") {
      // choices: [[tile_m, tile_n, efficiency], ...]; [0, 0, efficiency] is stream-K.
      const ConfigNode choices = node.child("choices");
      if (!choices.is_sequence() || choices.size() == 0)
        choices.fail("expected a non-empty list of [tile_m, tile_n, efficiency]");
      for (std::size_t i = 0; i < choices.size(); ++i) {
        const ConfigNode c = choices.at(i);
        if (!c.is_sequence() || c.size() != 3)
          c.fail("expected [tile_m, tile_n, efficiency] ([0, 0, efficiency]: stream-K)");
        w.choices.push_back(
            {c.at(0).as_int32(), c.at(1).as_int32(), parse_value(c.at(2), Unit::Plain)});
      }
      w.max_split_k = node.get_int32("max_split_k", 1);
    } else {
      if (!tile->is_sequence() || tile->size() != 2)
        tile->fail("expected [tile_m, tile_n], two positive integers, per_shape or best");
      w.tile_m = tile->at(0).as_int32();
      w.tile_n = tile->at(1).as_int32();
    }
    w.sms = node.get_int32("sms");
  }
  w.whole_tiles_below_one_wave =
      node.get_enum("below_one_wave", {"split_k", "whole_tiles"}, "split_k") == "whole_tiles";
  if (auto floor = node.optional_child("partial_wave_floor"))
    w.partial_wave_floor = parse_value(*floor, Unit::Plain);
  if (auto corr = node.optional_child("correction")) {
    corr->check_keys(std::vector<std::string>{"m", "n", "k", "time_factor"});
    t.m_values = parse_number_list(corr->child("m"), Unit::Plain);
    t.n_values = parse_number_list(corr->child("n"), Unit::Plain);
    t.k_values = parse_number_list(corr->child("k"), Unit::Plain);
    t.time_factor = parse_number_list(corr->child("time_factor"), Unit::Plain);
  }
  t.source = parse_provenance(node);
  try {
    t.validate();
  } catch (const std::invalid_argument& e) {
    node.fail(fmt::format(
        "{} (expected fixed_s >= 0, output_s_per_element >= 0, mainloop_flops_per_s > 0, "
        "tile [m, n] with sms > 0, below_one_wave: whole_tiles only with a tile [m, n], "
        "tile: best with choices of positive efficiency and max_split_k in 1..{}, "
        "partial_wave_floor in [0, 1] with a tile [m, n], "
        "correction: m x n x k positive time factors)",
        e.what(), kMaxSplitK));
  }
  return t;
}

GemmTable parse_gemm_table(const ConfigNode& node) {
  if (node.is_map() && node.has("model") && node.get_enum("model", {"table", "waves"}) == "waves")
    return parse_gemm_wave_model(node);
  node.check_keys(with_source_keys({"model", "m", "n", "k", "achieved_flops_per_s"}));
  GemmTable t;
  t.m_values = parse_number_list(node.child("m"), Unit::Plain);
  t.n_values = parse_number_list(node.child("n"), Unit::Plain);
  t.k_values = parse_number_list(node.child("k"), Unit::Plain);
  t.achieved_flops_per_s = parse_number_list(node.child("achieved_flops_per_s"), Unit::FlopsPerS);
  t.source = parse_provenance(node);
  try {
    t.validate();
  } catch (const std::invalid_argument& e) {
    node.fail(fmt::format("{} (expected m x n x k rates, m-major, axes increasing)", e.what()));
  }
  return t;
}

// One efficiency row per head dimension, one value per sequence length.
std::vector<double> parse_attention_grid(const ConfigNode& node, std::size_t rows) {
  if (!node.is_sequence() || node.size() != rows)
    node.fail(fmt::format("expected {} rows, one per head dimension", rows));
  std::vector<double> out;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::vector<double> row = parse_number_list(node.at(i), Unit::Plain);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

AttentionTable parse_attention_table(const ConfigNode& node) {
  node.check_keys(with_source_keys(
      {"head_dims", "seq_lens", "forward", "backward", "occupancy_forward", "occupancy_backward"}));
  AttentionTable t;
  t.head_dims = parse_number_list(node.child("head_dims"), Unit::Plain);
  t.seq_lens = parse_number_list(node.child("seq_lens"), Unit::Plain);
  t.forward = parse_attention_grid(node.child("forward"), t.head_dims.size());
  t.backward = parse_attention_grid(node.child("backward"), t.head_dims.size());
  if (auto points = node.optional_child("occupancy_forward"))
    t.occupancy_forward.points =
        parse_points(*points, Unit::Plain, true, 1e-9, 1, "a factor in (0, 1]");
  if (auto points = node.optional_child("occupancy_backward"))
    t.occupancy_backward.points =
        parse_points(*points, Unit::Plain, true, 1e-9, 1, "a factor in (0, 1]");
  t.source = parse_provenance(node);
  try {
    t.validate();
  } catch (const std::invalid_argument& e) {
    node.fail(
        fmt::format("{} (expected one row of efficiencies in (0, 1] per head dimension, "
                    "one value per sequence length, axes increasing)",
                    e.what()));
  }
  return t;
}

ComputeProfile parse_compute(const ConfigNode& node) {
  node.check_keys(std::vector<std::string>{
      "peak_flops_per_s", "memory_bandwidth_Bps", "memory_capacity_bytes", "launch_overhead_s",
      "efficiency", "gemm_tables", "own_gemm_tables", "attention_table", "idle_clock_boost",
      "fp8_block_scaling_time_factor", "scatter_add_bandwidth_Bps", "index_add_bandwidth_Bps",
      "concurrent_comm_slowdown", "concurrent_comm_gemm_slowdown",
      "concurrent_comm_memory_slowdown", "concurrent_comm_attention_slowdown",
      "collective_beside_memory_slowdown"});
  ComputeProfile c;
  ConfigNode peaks = node.child("peak_flops_per_s");
  if (!peaks.is_map() || peaks.size() == 0)
    peaks.fail("expected a map of precision -> {value, source, citation}");
  for (const auto& key : peaks.keys()) {
    const Precision p = parse_precision(peaks, key);
    c.peak_flops_per_s[p] = parse_sourced(peaks, key, Unit::FlopsPerS);
  }
  c.memory_bandwidth_Bps = parse_sourced(node, "memory_bandwidth_Bps");
  c.memory_capacity_bytes = parse_sourced(node, "memory_capacity_bytes");
  c.launch_overhead_s = parse_sourced(node, "launch_overhead_s");

  ConfigNode eff = node.child("efficiency");
  eff.check_keys(std::vector<std::string>{"gemm", "attention_forward", "attention_backward",
                                          "memory", "gemv", "embedding"});
  ConfigNode gemm = eff.child("gemm");
  if (!gemm.is_map() || gemm.size() == 0)
    gemm.fail("expected a map of precision -> {over: flops, points, source, citation}");
  for (const auto& key : gemm.keys()) {
    const Precision p = parse_precision(gemm, key);
    if (!c.peak_flops_per_s.count(p))
      gemm.fail_key(
          key, fmt::format("no peak rate for {} (expected compute.peak_flops_per_s.{})", key, key));
    c.gemm_efficiency[p] = parse_efficiency(gemm, key, "flops");
  }
  c.attention_forward_efficiency = parse_efficiency(eff, "attention_forward", "flops");
  c.attention_backward_efficiency = parse_efficiency(eff, "attention_backward", "flops");
  c.memory_efficiency = parse_efficiency(eff, "memory", "bytes");
  if (eff.optional_child("gemv")) c.gemv_efficiency = parse_efficiency(eff, "gemv", "bytes");
  c.embedding_efficiency = parse_efficiency(eff, "embedding", "bytes");

  if (node.optional_child("idle_clock_boost")) {
    c.idle_clock_boost = parse_sourced(node, "idle_clock_boost");
    if (!(c.idle_clock_boost->value >= 0 && c.idle_clock_boost->value <= 10))
      node.child("idle_clock_boost")
          .fail("expected a boost per idle fraction in [0, 10] (value: 0.4)");
  }
  if (node.optional_child("concurrent_comm_slowdown")) {
    c.concurrent_comm_slowdown = parse_sourced(node, "concurrent_comm_slowdown");
    if (!(c.concurrent_comm_slowdown->value >= 1 && c.concurrent_comm_slowdown->value <= 10))
      node.child("concurrent_comm_slowdown")
          .fail("expected a GEMM's time beside NCCL over its time alone in [1, 10] (value: 1.08)");
  }
  for (const KernelTimeCurveKey& k : kKernelTimeCurves)
    if (node.optional_child(k.key)) c.*k.curve = parse_kernel_time_curve(node, k.key, k.ratio);
  if (node.optional_child("fp8_block_scaling_time_factor")) {
    c.fp8_block_scaling_time_factor = parse_sourced(node, "fp8_block_scaling_time_factor");
    if (!(c.fp8_block_scaling_time_factor->value >= 0.5 &&
          c.fp8_block_scaling_time_factor->value <= 10))
      node.child("fp8_block_scaling_time_factor")
          .fail("expected block-scaled / per-tensor fp8 GEMM time in [0.5, 10] (value: 1.1)");
  }
  for (auto [key, into] : {std::pair{"scatter_add_bandwidth_Bps", &c.scatter_add_bandwidth_Bps},
                           std::pair{"index_add_bandwidth_Bps", &c.index_add_bandwidth_Bps}})
    if (node.optional_child(key)) {
      *into = parse_sourced(node, key);
      if (!((*into)->value > 0)) node.child(key).fail("expected a rate > 0 (value: 600GBps)");
    }
  if (auto table = node.optional_child("attention_table"))
    c.attention_table = parse_attention_table(*table);
  for (const char* name : {"gemm_tables", "own_gemm_tables"})
    if (auto tables = node.optional_child(name)) {
      if (!tables->is_map()) tables->fail("expected a map of precision -> table");
      auto& into = std::string(name) == "gemm_tables" ? c.gemm_tables : c.own_gemm_tables;
      for (const auto& key : tables->keys())
        into[parse_precision(*tables, key)] = parse_gemm_table(tables->child(key));
    }
  return c;
}

CollectiveProfile parse_collectives(const ConfigNode& node) {
  CollectiveProfile out;
  if (!node.is_sequence()) node.fail("expected a list of collective curves (or [])");
  for (std::size_t i = 0; i < node.size(); ++i) {
    ConfigNode c = node.at(i);
    c.check_keys(with_source_keys(
        {"op", "algorithm", "scope", "ranks", "ctas", "segments", "in_compute_loop_factor"}));
    CollectiveCurve curve;
    curve.op = *parse_collective_op(c.get_enum(
        "op", {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "sendrecv"}));
    curve.algo = *parse_algorithm(
        c.get_enum("algorithm", {"ring", "tree", "hierarchical", "direct", "auto"}));
    curve.scope = *parse_comm_scope(c.get_enum("scope", {"intra_node", "inter_node"}));
    curve.ranks = c.get_int32("ranks", 0);
    curve.ctas = c.get_int32("ctas", 0);
    if (curve.ranks < 0) c.fail_key("ranks", "negative (expected 0 = any, or the size measured)");
    if (curve.ctas < 0) c.fail_key("ctas", "negative (expected 0 = NCCL default, or a count)");
    ConfigNode segs = c.child("segments");
    if (!segs.is_sequence() || segs.size() == 0)
      segs.fail("expected a non-empty list of {min_bytes, latency_s, bus_bandwidth_Bps}");
    for (std::size_t j = 0; j < segs.size(); ++j) {
      ConfigNode s = segs.at(j);
      s.check_keys(std::vector<std::string>{"min_bytes", "latency_s", "bus_bandwidth_Bps"});
      CollectiveSegment seg;
      seg.min_bytes = s.get_bytes("min_bytes");
      seg.latency_s = s.get_duration_s("latency_s");
      seg.bus_bandwidth_Bps = s.get_bandwidth_Bps("bus_bandwidth_Bps");
      if (seg.latency_s < 0) s.fail_key("latency_s", "negative (expected a duration >= 0)");
      if (j == 0 && seg.min_bytes != 0)
        s.fail_key("min_bytes", "the first segment must start at 0 (expected min_bytes: 0)");
      if (j > 0 && seg.min_bytes <= curve.segments.back().min_bytes)
        s.fail_key("min_bytes", "does not increase (expected segments in increasing min_bytes)");
      curve.segments.push_back(seg);
    }
    curve.source = parse_provenance(c);
    if (c.optional_child("in_compute_loop_factor")) {
      curve.in_compute_loop_factor = parse_sourced(c, "in_compute_loop_factor");
      // A collective between GEMMs ran 0-15 % slower than alone on H200s; a factor outside
      // this band is a broken fit or a typo, not a measurement.
      if (!(curve.in_compute_loop_factor->value >= 0.5 && curve.in_compute_loop_factor->value <= 2))
        c.child("in_compute_loop_factor")
            .child("value")
            .fail("out of range (expected a time factor in [0.5, 2], 1 = as alone)");
    }
    out.curves.push_back(std::move(curve));
  }
  return out;
}

DesignParams parse_designs(const ConfigNode& node) {
  node.check_keys(design_names());
  DesignParams out;
  for (const auto& design : node.keys()) {
    ConfigNode params = node.child(design);
    if (!params.is_map()) params.fail("expected a map of parameter -> {value, source, citation}");
    auto& dst = out.by_design[design];
    for (const auto& key : params.keys()) dst[key] = parse_sourced(params, key);
  }
  return out;
}

DeviceInfo parse_device(const ConfigNode& node) {
  node.check_keys(std::vector<std::string>{"name", "sms", "driver", "cuda", "nccl", "date", "host",
                                           "nccl_nvlink_bandwidth_Bps", "source", "citation"});
  DeviceInfo d;
  d.name = node.get_string("name");
  d.sms = node.get_positive_int32("sms");
  if (node.optional_child("nccl_nvlink_bandwidth_Bps")) {
    d.nccl_nvlink_bandwidth_Bps = parse_sourced(node, "nccl_nvlink_bandwidth_Bps");
    if (!(d.nccl_nvlink_bandwidth_Bps->value > 0))
      node.child("nccl_nvlink_bandwidth_Bps")
          .fail("not positive (expected a bandwidth > 0 such as \"230GBps\")");
  }
  read_software(node, d.driver, d.cuda, d.nccl, d.host, d.date);
  parse_provenance(node);  // the SM count is a number the design models use
  return d;
}

}  // namespace

void read_software(const ConfigNode& node, std::string& driver, std::string& cuda,
                   std::string& nccl, std::string& host, std::string& date) {
  driver = node.get_string("driver", "");
  cuda = node.get_string("cuda", "");
  nccl = node.get_string("nccl", "");
  host = node.get_string("host", "");
  date = node.get_string("date", "");
}

const std::vector<config::ParamDoc>& profile_params() {
  static const std::vector<config::ParamDoc> params = {
      {"format", "profile format version", "", "1"},
      {"kind", "what the profile mostly holds: datasheet or measured (each number says its own)",
       "", ""},
      {"description", "one line saying what the profile is", "\"\"", ""},
      {"device",
       "name, sms, driver, cuda, nccl, date, host, nccl_nvlink_bandwidth_Bps, source, citation", "",
       ""},
      {"compute",
       "peak_flops_per_s, memory_bandwidth_Bps, memory_capacity_bytes, "
       "launch_overhead_s, efficiency, gemm_tables, own_gemm_tables, attention_table, "
       "idle_clock_boost, "
       "fp8_block_scaling_time_factor, scatter_add_bandwidth_Bps, index_add_bandwidth_Bps, "
       "concurrent_comm_slowdown, concurrent_comm_gemm_slowdown, concurrent_comm_memory_slowdown, "
       "concurrent_comm_attention_slowdown, collective_beside_memory_slowdown",
       "", ""},
      {"collectives",
       "list of {op, algorithm, scope, ranks, ctas, segments, in_compute_loop_factor, source}",
       "[]", ""},
      {"designs", "design -> parameter -> {value, source, citation}", "{}", ""},
      {"measurements", "path of the raw CSV the profile was fitted from", "\"\"", ""},
      {"validation",
       "held-out errors per validate kind: {measurements, cluster, kinds: {kind: {rows, "
       "median_abs_err, p90_abs_err}}}, written by overlapsim validate --record",
       "{}", ""},
  };
  return params;
}

Profile load_profile_node(const ConfigNode& root, const std::string& name) {
  if (!root.is_map()) root.fail("expected a profile map (see docs/profile-format.md)");
  root.check_keys(profile_params());
  const auto format = root.get_int("format");
  if (format != 1) root.fail_key("format", fmt::format("{} is not supported (expected 1)", format));
  root.get_enum("kind", {"datasheet", "measured"});
  Profile p;
  p.name = name;
  p.path = root.file();
  p.device = parse_device(root.child("device"));
  p.compute = parse_compute(root.child("compute"));
  if (auto c = root.optional_child("collectives")) p.collectives = parse_collectives(*c);
  if (auto d = root.optional_child("designs")) p.designs = parse_designs(*d);
  p.measurements = root.get_string("measurements", "");
  if (auto v = root.optional_child("validation")) p.validation = parse_heldout_errors(*v);
  return p;
}

Profile load_profile(const std::string& path) {
  return load_profile_node(ConfigNode::load_file(path),
                           std::filesystem::path(path).stem().string());
}

Profile load_profile_string(const std::string& yaml, const std::string& name) {
  return load_profile_node(ConfigNode::load_string(yaml, name), name);
}

}  // namespace overlapsim::sim
