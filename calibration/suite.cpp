#include "calibration/suite.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "calibration/manifest.hpp"
#include "calibration/measurement.hpp"
#include "config/config_node.hpp"

namespace overlapsim::calibration {
namespace {

using config::ConfigNode;

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

std::vector<std::string> string_list(const ConfigNode& node) {
  if (!node.is_sequence() || node.size() == 0) node.fail("expected a non-empty list");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < node.size(); ++i) out.push_back(node.at(i).as_string());
  return out;
}

std::vector<std::int64_t> int_list(const ConfigNode& node, std::int64_t min,
                                   std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
  if (!node.is_sequence() || node.size() == 0) node.fail("expected a non-empty list of integers");
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::int64_t v = node.at(i).as_int();
    if (v < min) node.at(i).fail(fmt::format("{} (expected an integer >= {})", v, min));
    if (v > max) node.at(i).fail(fmt::format("{} (expected an integer <= {})", v, max));
    out.push_back(v);
  }
  return out;
}

std::vector<std::string> shape_list(const ConfigNode& node) {
  if (!node.is_sequence() || node.size() == 0)
    node.fail("expected a non-empty list of [m, n, k] shapes");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const ConfigNode s = node.at(i);
    if (!s.is_sequence() || s.size() != 3) s.fail("expected a shape [m, n, k]");
    const auto v = int_list(s, 1);
    out.push_back(fmt::format("{}x{}x{}", v[0], v[1], v[2]));
  }
  return out;
}

std::vector<std::uint64_t> bytes_list(const ConfigNode& node) {
  std::vector<std::uint64_t> out;
  if (node.is_map()) {
    node.check_keys(std::vector<std::string>{"from", "to", "factor"});
    const std::uint64_t from = node.get_bytes("from"), to = node.get_bytes("to");
    const std::int64_t factor = node.get_int("factor", 2);
    if (from == 0) node.fail_key("from", "0 (expected a size >= 1)");
    if (to < from) node.fail_key("to", "below from (expected to >= from)");
    if (factor < 2) node.fail_key("factor", "(expected an integer >= 2)");
    for (std::uint64_t b = from; b <= to; b *= static_cast<std::uint64_t>(factor)) out.push_back(b);
    return out;
  }
  if (!node.is_sequence() || node.size() == 0)
    node.fail("expected a list of sizes or {from, to, factor}");
  for (std::size_t i = 0; i < node.size(); ++i) out.push_back(node.at(i).as_bytes());
  return out;
}

// A steady-state duration (min_time, warmup_time): human units, 0 .. 10 min.
double steady_time(const ConfigNode& node, const char* key, double def) {
  const double s = node.get_duration_s(key, def);
  if (s < 0 || s > 600) node.fail_key(key, fmt::format("{} s (expected 0 .. 10min)", s));
  return s;
}

template <class T>
std::vector<std::vector<T>> in_chunks(const std::vector<T>& v) {
  std::vector<std::vector<T>> out;
  for (std::size_t i = 0; i < v.size(); i += kMaxItemsPerCase)
    out.emplace_back(v.begin() + static_cast<long>(i),
                     v.begin() + static_cast<long>(std::min(v.size(), i + kMaxItemsPerCase)));
  return out;
}

// A case of `op` from its section's settings, for a collective or interference: designs
// and chunk counts belong to pairs, so none are kept.
SuiteCase without_designs(const SuiteCase& base, const std::string& op) {
  SuiteCase sc = base;
  sc.op = op;
  sc.designs.clear();
  sc.chunks.clear();
  return sc;
}

}  // namespace

std::vector<std::string> SuiteCase::bench_args() const {
  std::vector<std::string> a = {"--op", op};
  if (!designs.empty()) a.insert(a.end(), {"--designs", join(designs, ",")});
  if (!shapes.empty()) a.insert(a.end(), {"--shapes", join(shapes, ",")});
  if (!bytes.empty()) {
    std::vector<std::string> b;
    for (auto x : bytes) b.push_back(std::to_string(x));
    a.insert(a.end(), {"--bytes", join(b, ",")});
  }
  if (!chunks.empty()) {
    std::vector<std::string> c;
    for (int x : chunks) c.push_back(std::to_string(x));
    a.insert(a.end(), {"--chunks", join(c, ",")});
  }
  if (table_rows > 0) a.insert(a.end(), {"--table-rows", std::to_string(table_rows)});
  if (!collectives.empty()) a.insert(a.end(), {"--collectives", join(collectives, ",")});
  if (!interference_ctas.empty()) {
    std::vector<std::string> c;
    for (int x : interference_ctas) c.push_back(std::to_string(x));
    a.insert(a.end(), {"--ctas", join(c, ",")});
  }
  if (min_time_s > 0) a.insert(a.end(), {"--min-time-ms", fmt::format("{:g}", min_time_s * 1e3)});
  if (warmup_s > 0) a.insert(a.end(), {"--warmup-ms", fmt::format("{:g}", warmup_s * 1e3)});
  a.insert(a.end(), {"--dtype", dtype, "--warmup", std::to_string(warmup), "--iterations",
                     std::to_string(iterations)});
  return a;
}

bool SuiteCase::may_fail() const {
  return op == "interference" ||
         std::find(designs.begin(), designs.end(), "tilewise") != designs.end();
}

double SuiteCase::estimate_s() const {
  constexpr double kStartS = 4.0, kFlopsPerS = 7e14, kBusBps = 2.5e11, kLatencyS = 20e-6;
  // One measurement of a kernel taking t: the counted warm-up, then the timed iterations
  // (at least min_time of them), after warmup_time of untimed work.
  const auto measurement_s = [&](double t) {
    return warmup * t + std::max(iterations * t, min_time_s) + warmup_s;
  };
  const auto shape_of = [](const std::string& s) {
    long long m = 0, n = 0, k = 0;
    std::sscanf(s.c_str(), "%lldx%lldx%lld", &m, &n, &k);
    return std::array<double, 3>{static_cast<double>(m), static_cast<double>(n),
                                 static_cast<double>(k)};
  };
  const auto collective_s = [&](double b) { return b / kBusBps + kLatencyS; };
  if (op == "interference") {
    // Per point (shape x size x CTA limit): rounds of four bursts of >= 2 ms (or 3 kernels);
    // the beside bursts run with twice their length of cover on the other stream; every
    // round ends with a host sync and a reduction (~1 ms). Rounds until `iterations`
    // samples and min_time of each; one untimed round; warmup_time; a result check.
    // A communicator split per CTA limit > 0: ~0.5 s (assumed, not measured yet).
    constexpr double kBurstS = 2e-3, kRoundOverheadS = 1e-3, kCheckS = 0.05, kSplitS = 0.5;
    double total = kStartS;
    for (int c : interference_ctas)
      if (c > 0) total += kSplitS;
    for (const auto& s : shapes) {
      const auto [m, n, k] = shape_of(s);
      const double tg = 2.0 * m * n * k / kFlopsPerS;
      for (auto b : bytes) {
        const double tc = collective_s(static_cast<double>(b));
        const double ng = std::max(3.0, std::ceil(kBurstS / tg));
        const double nc = std::max(3.0, std::ceil(kBurstS / tc));
        const double round_s = 3 * ng * tg + 3 * nc * tc + kRoundOverheadS;
        const double rounds = std::max({std::ceil(iterations / ng), std::ceil(iterations / nc),
                                        std::ceil(min_time_s / (ng * tg)),
                                        std::ceil(min_time_s / (nc * tc))});
        total += static_cast<double>(interference_ctas.size()) *
                 ((rounds + 1) * round_s + warmup_s + kCheckS);
      }
    }
    return total;
  }
  double total = kStartS;
  const double design_count = designs.empty() ? 1.0 : static_cast<double>(designs.size());
  for (const auto& s : shapes) {
    const auto [m, n, k] = shape_of(s);
    const double compute = 2.0 * m * n * k / kFlopsPerS;
    const double comm = is_compute_op(op) ? 0 : collective_s(2.0 * m * n * 2);
    // pairs: alone parts, sequential, and each chunking of the decomposed design
    const double variants = is_compute_op(op) ? design_count : 2 + design_count + chunks.size();
    total += variants * measurement_s(compute + comm);
  }
  for (auto b : bytes) total += measurement_s(collective_s(static_cast<double>(b)));
  return total;
}

Suite parse_suite(const std::string& yaml, const std::string& name) {
  const ConfigNode root = ConfigNode::load_string(yaml, name);
  if (!root.is_map()) root.fail("expected a suite map (see calibration/suite.hpp)");
  root.check_keys(std::vector<std::string>{"format", "name", "gpus", "defaults", "sections"});
  if (root.get_int("format") != 1) root.fail_key("format", "unsupported (expected 1)");
  Suite suite;
  suite.file = name;
  suite.name = root.get_string("name");
  suite.hash = fnv1a64_hex(yaml);
  suite.gpus = root.get_positive_int32("gpus", 1);
  std::string dtype = "bf16";
  int warmup = 3, iterations = 10;
  double min_time_s = 0, warmup_s = 0;
  if (auto d = root.optional_child("defaults")) {
    d->check_keys(
        std::vector<std::string>{"dtype", "warmup", "iterations", "min_time", "warmup_time"});
    dtype = d->get_enum("dtype", {"bf16", "fp16", "fp8"}, dtype);
    warmup = d->get_int32("warmup", warmup);
    iterations = d->get_positive_int32("iterations", iterations);
    min_time_s = steady_time(*d, "min_time", 0);
    warmup_s = steady_time(*d, "warmup_time", 0);
  }
  const ConfigNode sections = root.child("sections");
  if (!sections.is_sequence() || sections.size() == 0)
    sections.fail("expected a non-empty list of sections");
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const ConfigNode s = sections.at(i);
    s.check_keys(std::vector<std::string>{"name", "op", "ops", "designs", "grid", "shapes", "bytes",
                                          "ctas", "chunks", "table_rows", "warmup", "iterations",
                                          "dtype", "collectives", "min_time", "warmup_time"});
    SuiteCase base;
    base.section = s.get_string("name");
    base.dtype = s.get_enum("dtype", {"bf16", "fp16", "fp8"}, dtype);
    base.warmup = s.get_int32("warmup", warmup);
    base.iterations = s.get_positive_int32("iterations", iterations);
    base.table_rows = s.get_int("table_rows", 0);
    base.min_time_s = steady_time(s, "min_time", min_time_s);
    base.warmup_s = steady_time(s, "warmup_time", warmup_s);
    if (s.has("op") == s.has("ops")) s.fail("give either op: or ops: (expected exactly one)");
    const std::vector<std::string> ops =
        s.has("op") ? std::vector<std::string>{s.get_string("op")} : string_list(s.child("ops"));
    for (std::size_t j = 0; j < ops.size(); ++j) {
      const std::string& op = ops[j];
      const ConfigNode where = s.has("op") ? s.child("op") : s.child("ops").at(j);
      if (!is_compute_op(op) && !is_collective_op(op) && !is_pair_op(op) && op != "interference")
        where.fail(
            fmt::format("unknown op '{}' (expected gemm, gemv, embedding, a collective, "
                        "a pair such as gemm+allreduce, or interference)",
                        op));
    }
    if (s.has("collectives") && !(ops.size() == 1 && ops[0] == "interference"))
      s.fail_key("collectives", "only for op: interference (expected no collectives: here)");
    if (s.has("designs")) base.designs = string_list(s.child("designs"));
    // FP8 (E4M3) is an input type of cuBLASLt's GEMM only (overlap-bench writes bf16).
    if (base.dtype == "fp8" &&
        !(ops.size() == 1 && ops[0] == "gemm" && !base.designs.empty() &&
          std::all_of(base.designs.begin(), base.designs.end(), [](const std::string& d) {
            return d == "cublas" || d == "cublas_block128";
          })))
      (s.has("dtype") ? s.child("dtype") : s)
          .fail("dtype fp8 is for op: gemm with designs: [cublas] or [cublas_block128] only "
                "(cuBLASLt's FP8 GEMM, per-tensor or block-scaled)");
    if (s.has("chunks"))
      for (auto c : int_list(s.child("chunks"), 1, std::numeric_limits<int>::max()))
        base.chunks.push_back(static_cast<int>(c));
    std::vector<std::string> shapes;
    if (s.has("grid")) {
      const ConfigNode g = s.child("grid");
      g.check_keys(std::vector<std::string>{"m", "n", "k"});
      for (auto m : int_list(g.child("m"), 1))
        for (auto n : int_list(g.child("n"), 1))
          for (auto k : int_list(g.child("k"), 1))
            shapes.push_back(fmt::format("{}x{}x{}", m, n, k));
    }
    if (s.has("shapes")) {
      const auto more = shape_list(s.child("shapes"));
      shapes.insert(shapes.end(), more.begin(), more.end());
    }
    // overlap-bench's GEMV is y = W x for one token: refuse other m here, before any GPU time
    // is spent on the suite's earlier cases.
    if (std::find(ops.begin(), ops.end(), "gemv") != ops.end())
      for (const std::string& shape : shapes)
        if (shape.rfind("1x", 0) != 0)
          s.fail(
              fmt::format("gemv shape {} (expected m = 1: overlap-bench's GEMV multiplies "
                          "one token)",
                          shape));
    std::vector<std::uint64_t> bytes;
    if (s.has("bytes")) bytes = bytes_list(s.child("bytes"));
    std::vector<std::int64_t> ctas = {0};
    if (s.has("ctas")) ctas = int_list(s.child("ctas"), 0, std::numeric_limits<int>::max());
    for (const auto& op : ops) {
      if (op == "interference") {
        if (shapes.empty() || bytes.empty())
          s.fail("interference needs shapes: (GEMMs) and bytes: (collective sizes)");
        std::vector<std::string> collectives = {"allreduce"};
        if (s.has("collectives")) collectives = string_list(s.child("collectives"));
        for (std::size_t j = 0; j < collectives.size(); ++j)
          if (!is_collective_op(collectives[j]) || collectives[j] == "broadcast" ||
              collectives[j] == "sendrecv")
            s.child("collectives")
                .at(j)
                .fail(fmt::format("unknown collective '{}' (expected allreduce, reducescatter, "
                                  "allgather or alltoall)",
                                  collectives[j]));
        std::vector<std::string> cta_names;
        std::vector<int> cta_list;
        for (auto c : ctas) {
          cta_list.push_back(static_cast<int>(c));
          cta_names.push_back(std::to_string(c));
        }
        for (const auto& coll : collectives)
          for (const auto& part : in_chunks(shapes)) {
            SuiteCase sc = without_designs(base, op);
            sc.shapes = part;
            sc.bytes = bytes;
            sc.collectives = {coll};
            sc.interference_ctas = cta_list;
            sc.key = fmt::format("{}/interference/{}/ctas{}/{}..{}", sc.section, coll,
                                 join(cta_names, "."), part.front(), part.back());
            suite.cases.push_back(std::move(sc));
          }
        continue;
      }
      if (is_collective_op(op)) {
        if (bytes.empty()) s.fail(fmt::format("{} needs bytes: (expected sizes)", op));
        for (auto c : ctas)
          for (const auto& part : in_chunks(bytes)) {
            SuiteCase sc = without_designs(base, op);
            sc.bytes = part;
            sc.ctas = static_cast<int>(c);
            sc.key =
                fmt::format("{}/{}/ctas{}/{}..{}", sc.section, op, c, part.front(), part.back());
            suite.cases.push_back(std::move(sc));
          }
        continue;
      }
      if (shapes.empty())
        s.fail(fmt::format("{} needs shapes: or grid: (expected [m, n, k] lists)", op));
      // Compute alone: one call per design, so a design's rows are one case.
      const std::vector<std::vector<std::string>> design_sets =
          is_compute_op(op) && base.designs.size() > 1
              ? [&] {
                  std::vector<std::vector<std::string>> v;
                  for (const auto& d : base.designs) v.push_back({d});
                  return v;
                }()
              : std::vector<std::vector<std::string>>{base.designs};
      for (const auto& designs : design_sets)
        for (const auto& part : in_chunks(shapes)) {
          SuiteCase sc = base;
          sc.op = op;
          sc.designs = designs;
          sc.shapes = part;
          sc.key = fmt::format("{}/{}/{}/{}..{}", sc.section, op,
                               designs.empty() ? "default" : join(designs, "+"), part.front(),
                               part.back());
          suite.cases.push_back(std::move(sc));
        }
    }
  }
  return suite;
}

Suite load_suite(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config::ConfigError(path + ":1:1: cannot open (expected a suite YAML file)");
  std::ostringstream text;
  text << in.rdbuf();
  Suite s = parse_suite(text.str(), path);
  s.file = path;
  return s;
}

}  // namespace overlapsim::calibration
