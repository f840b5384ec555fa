#include "kernels/bench/suite.hpp"

#include <algorithm>
#include <stdexcept>

#include "config/error.hpp"
#include "kernels/collectives/nccl_collectives.hpp"

namespace overlapsim::kernels::bench {
namespace {

const std::vector<std::string> kCaseKeys{"op",     "design",     "designs",   "dtype",
                                         "shapes", "bytes",      "chunks",    "parts",
                                         "warmup", "iterations", "table_rows",
                                         "min_time", "warmup_time", "collectives", "ctas"};
const std::vector<std::string> kDefaultKeys{"dtype",  "warmup",   "iterations",
                                            "chunks", "parts",    "min_time",
                                            "warmup_time"};

std::vector<int> read_chunks(const config::ConfigNode& list) {
  if (!list.is_sequence()) list.fail("expected a list of chunk counts such as [2, 4, 8]");
  std::vector<int> chunks;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::int64_t value = list.at(i).as_int();
    if (value < 1 || value > 64) list.at(i).fail("chunk count must be in [1, 64]");
    chunks.push_back(static_cast<int>(value));
  }
  return chunks;
}

// Settings shared by `defaults` and each case.
void read_common(const config::ConfigNode& node, BenchCase* c) {
  if (node.has("dtype")) {
    const std::string name = node.get_enum("dtype", {"bf16", "fp16", "fp8"});
    c->dtype = *parse_dtype(name);
  }
  c->warmup = static_cast<int>(node.get_int("warmup", c->warmup));
  if (c->warmup < 0) node.fail_key("warmup", "must be >= 0");
  c->iterations = static_cast<int>(node.get_positive_int("iterations", c->iterations));
  if (node.has("chunks")) c->chunks = read_chunks(node.child("chunks"));
  c->parts = node.get_bool("parts", c->parts);
  c->min_time_s = node.get_duration_s("min_time", c->min_time_s);
  if (c->min_time_s < 0 || c->min_time_s > 600) node.fail_key("min_time", "must be in [0, 10min]");
  c->warmup_s = node.get_duration_s("warmup_time", c->warmup_s);
  if (c->warmup_s < 0 || c->warmup_s > 600) node.fail_key("warmup_time", "must be in [0, 10min]");
}

PairShape read_shape(const config::ConfigNode& node) {
  if (!node.is_sequence() || node.size() != 3) node.fail("expected a shape [m, n, k]");
  PairShape shape;
  shape.m = node.at(0).as_int();
  shape.n = node.at(1).as_int();
  shape.k = node.at(2).as_int();
  if (shape.m < 1 || shape.n < 1 || shape.k < 1) node.fail("m, n and k must be >= 1");
  return shape;
}

BenchCase read_case(const config::ConfigNode& node, const BenchCase& defaults) {
  if (!node.is_map()) node.fail("expected a case map with at least `op`");
  node.check_keys(kCaseKeys);
  BenchCase c = defaults;
  c.op = node.get_string("op");
  if (!case_kind_of(c.op, &c.kind))
    node.fail_key("op",
                  "unknown op (expected allreduce, reducescatter, allgather, alltoall, gemm, gemv, "
                  "embedding, gemm+allreduce, gemm+reducescatter, allgather+gemm, gemm+alltoall, "
                  "gemv+allreduce, embedding+alltoall or interference)");
  read_common(node, &c);
  const auto& allowed = designs_for(c.kind, c.op);
  c.designs.clear();
  if (node.has("design") && node.has("designs"))
    node.fail_key("designs", "give either `design` or `designs`, not both");
  if (node.has("design")) {
    c.designs.push_back(node.get_enum("design", allowed));
  } else if (node.has("designs")) {
    const config::ConfigNode list = node.child("designs");
    if (!list.is_sequence()) list.fail("expected a list of designs");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string name = list.at(i).as_string();
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        std::string expected;
        for (const auto& a : allowed) expected += (expected.empty() ? "" : ", ") + a;
        list.at(i).fail("unknown design '" + name + "' for " + c.op + " (expected " + expected +
                        ")");
      }
      c.designs.push_back(name);
    }
  } else {
    c.designs = c.kind == CaseKind::Compute ? std::vector<std::string>{allowed.front()} : allowed;
  }

  const std::int64_t table_rows = node.get_int("table_rows", 0);
  if (node.has("collectives")) {
    const config::ConfigNode list = node.child("collectives");
    if (!list.is_sequence() || list.size() == 0) list.fail("expected a list of collectives");
    c.collectives.clear();
    for (std::size_t i = 0; i < list.size(); ++i)
      c.collectives.push_back(
          list.at(i).as_string());  // checked by validate_case
  }
  if (node.has("ctas")) {
    const config::ConfigNode list = node.child("ctas");
    if (!list.is_sequence() || list.size() == 0)
      list.fail("expected a list of NCCL CTA limits such as [4, 8, 16, 32, 0]");
    c.ctas.clear();
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::int64_t v = list.at(i).as_int();
      if (v < 0 || v > 1024) list.at(i).fail("CTA limit must be in [0, 1024] (0: NCCL's default)");
      c.ctas.push_back(static_cast<int>(v));
    }
  }
  if (c.kind == CaseKind::Interference && !node.has("bytes"))
    node.fail("an interference case needs `bytes` and `shapes`");
  if (c.kind == CaseKind::Collective || c.kind == CaseKind::Interference) {
    if (!node.has("bytes")) node.fail("a collective case needs `bytes`, e.g. [1MiB, 1GiB]");
    const config::ConfigNode list = node.child("bytes");
    if (!list.is_sequence()) list.fail("expected a list of sizes such as [1MiB, 1GiB]");
    for (std::size_t i = 0; i < list.size(); ++i) c.bytes.push_back(list.at(i).as_bytes());
  }
  if (c.kind != CaseKind::Collective) {
    if (!node.has("shapes")) node.fail("a compute or pair case needs `shapes`: [[m, n, k], ...]");
    const config::ConfigNode list = node.child("shapes");
    if (!list.is_sequence()) list.fail("expected a list of shapes [[m, n, k], ...]");
    for (std::size_t i = 0; i < list.size(); ++i) {
      PairShape shape = read_shape(list.at(i));
      shape.table_rows = table_rows;
      c.shapes.push_back(shape);
    }
  }
  try {
    validate_case(c);
  } catch (const std::invalid_argument& e) {
    node.fail(e.what());
  }
  return c;
}

}  // namespace

void validate_case(const BenchCase& c) {
  const bool embedding = c.op == "embedding" || c.op == "embedding+alltoall";
  const bool gemv = c.op == "gemv" || c.op == "gemv+allreduce";
  for (const PairShape& s : c.shapes) {
    if (embedding && s.table_rows < 1)
      throw std::invalid_argument("embedding cases need table_rows >= 1");
    if (embedding && s.table_rows > 2147483647)
      throw std::invalid_argument("table_rows must fit int32 indices");
    if (gemv && s.m != 1) throw std::invalid_argument("gemv shapes need m = 1");
  }
  for (std::uint64_t b : c.bytes)
    if (b < 2) throw std::invalid_argument("collective sizes must be >= 2 bytes");
  if (c.designs.empty()) throw std::invalid_argument("no design given");
  if (c.dtype == DType::FP8_E4M3) {
    if (c.op != "gemm")
      throw std::invalid_argument("dtype fp8 is for op gemm only (got op " + c.op + ")");
    for (const std::string& d : c.designs)
      if (d != "cublas" && d != "cublas_block128")
        throw std::invalid_argument(
            "dtype fp8 runs only the cublas and cublas_block128 designs (got " + d + ")");
  } else {
    for (const std::string& d : c.designs)
      if (d == "cublas_block128")
        throw std::invalid_argument("design cublas_block128 needs dtype fp8 (block-scaled FP8)");
  }
  if (c.kind == CaseKind::Interference) {
    for (const std::string& name : c.collectives)
      if (!parse_collective_op(name))
        throw std::invalid_argument("unknown collective '" + name +
                                    "' (expected allreduce, reducescatter, allgather or alltoall)");
    if (c.collectives.empty() || c.ctas.empty())
      throw std::invalid_argument("interference needs collectives and ctas");
  }
}

BenchPlan parse_suite(const config::ConfigNode& root) {
  if (!root.is_map()) root.fail("expected a map with `cases`");
  root.check_keys({"seed", "defaults", "cases"});
  BenchPlan plan;
  plan.seed = static_cast<std::uint64_t>(root.get_int("seed", 0));
  BenchCase defaults;
  if (root.has("defaults")) {
    const config::ConfigNode d = root.child("defaults");
    if (!d.is_map()) d.fail("expected a map of default settings");
    d.check_keys(kDefaultKeys);
    read_common(d, &defaults);
  }
  const config::ConfigNode cases = root.child("cases");
  if (!cases.is_sequence() || cases.size() == 0) cases.fail("expected a non-empty list of cases");
  for (std::size_t i = 0; i < cases.size(); ++i)
    plan.cases.push_back(read_case(cases.at(i), defaults));
  return plan;
}

BenchPlan load_suite(const std::string& path) {
  return parse_suite(config::ConfigNode::load_file(path));
}

}  // namespace overlapsim::kernels::bench
