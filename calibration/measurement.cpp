#include "calibration/measurement.hpp"

#include <fmt/format.h>

#include <iterator>

#include "calibration/calibrate_csv.hpp"
#include "config/error.hpp"

namespace overlapsim::calibration {
namespace {

const char* kOverlapBenchColumns =
    "gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes,chunks,time_us,time_min_us,"
    "time_max_us,tflops,algbw_GBps,busbw_GBps,wrong";

}  // namespace

std::string Measurement::where() const { return fmt::format("{}:{}", file, line); }

const std::vector<std::string>& required_columns() {
  static const std::vector<std::string> cols = {
      "gpu", "driver", "cuda",  "nccl",   "world",   "op",          "design",      "dtype", "m",
      "n",   "k",      "bytes", "chunks", "time_us", "time_min_us", "time_max_us", "wrong"};
  return cols;
}

std::vector<Measurement> parse_measurements(const CsvTable& table) {
  std::vector<int> col;
  for (const auto& name : required_columns()) {
    const int c = table.column(name);
    if (c < 0)
      throw config::ConfigError(
          fmt::format("{}:1:1: missing column '{}' (expected the overlap-bench columns {})",
                      table.file, name, kOverlapBenchColumns));
    col.push_back(c);
  }
  const int ctas_col = table.column("ctas");
  const int case_col = table.column("case");
  std::vector<Measurement> out;
  out.reserve(table.rows.size());
  for (const CsvRecord& r : table.rows) {
    auto text = [&](int i) -> const std::string& {
      return r.fields[static_cast<std::size_t>(col[static_cast<std::size_t>(i)])];
    };
    auto c = [&](int i) { return col[static_cast<std::size_t>(i)]; };
    Measurement m;
    m.file = table.file;
    m.line = r.line;
    m.gpu = text(0);
    m.driver = text(1);
    m.cuda = text(2);
    m.nccl = text(3);
    m.world = csv_int32(table, r, c(4), 1);
    m.op = text(5);
    m.design = text(6);
    m.dtype = text(7);
    if (m.op.empty())
      csv_fail_at(table, r, c(5), "op: empty (expected an op such as gemm, allreduce)");
    if (m.design.empty()) csv_fail_at(table, r, c(6), "design: empty (expected a design name)");
    if (m.dtype != "bf16" && m.dtype != "fp16" && m.dtype != "fp8" && m.dtype != "fp32")
      csv_fail_at(
          table, r, c(7),
          fmt::format("dtype: unknown dtype '{}' (expected bf16, fp16, fp8 or fp32)", m.dtype));
    m.m = csv_int(table, r, c(8), 0);
    m.n = csv_int(table, r, c(9), 0);
    m.k = csv_int(table, r, c(10), 0);
    m.bytes = static_cast<std::uint64_t>(csv_int(table, r, c(11), 0));
    m.chunks = csv_int32(table, r, c(12), 0);
    m.time_s = csv_time_s(table, r, c(13));
    m.time_min_s = csv_time_s(table, r, c(14));
    m.time_max_s = csv_time_s(table, r, c(15));
    m.wrong = static_cast<std::uint64_t>(csv_int(table, r, c(16), 0));
    if (ctas_col >= 0) m.ctas = csv_int32(table, r, ctas_col, 0);
    if (case_col >= 0) m.case_key = r.fields[static_cast<std::size_t>(case_col)];
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<Measurement> read_measurements(const std::string& path) {
  return parse_measurements(read_measurement_csv(path));
}

std::vector<Measurement> read_measurements(const std::vector<std::string>& paths) {
  std::vector<Measurement> out;
  for (const std::string& path : paths) {
    std::vector<Measurement> more = read_measurements(path);
    out.insert(out.end(), std::make_move_iterator(more.begin()),
               std::make_move_iterator(more.end()));
  }
  return out;
}

bool is_collective_op(const std::string& op) {
  return op == "allreduce" || op == "allgather" || op == "reducescatter" || op == "alltoall" ||
         op == "broadcast" || op == "sendrecv";
}

bool is_compute_op(const std::string& op) {
  return op == "gemm" || op == "gemv" || op == "embedding";
}

bool is_pair_op(const std::string& op) { return op.find('+') != std::string::npos; }

bool measured_in_pair_loop(const Measurement& m) {
  // The tile-wise runner's own rows in a pair case are not timed in the pair loop: its own
  // GEMMs (design own, own_*) run back to back in GEMM-only loops (measure_own_alone,
  // measure_signal_interleaved), its CTA-limited NCCL and peer-copy curves alone.
  if (m.design == "own" || m.design.rfind("own_", 0) == 0 || m.design == "nccl_tilewise" ||
      m.op == "peer_copy")
    return false;
  // case key: section/op/designs/shapes
  const auto first = m.case_key.find('/');
  if (first == std::string::npos) return false;
  const auto second = m.case_key.find('/', first + 1);
  return is_pair_op(m.case_key.substr(first + 1, second - first - 1));
}

int effective_ctas(const Measurement& m) {
  if (m.ctas > 0) return m.ctas;
  return m.design == "nccl_tilewise" ? m.chunks : 0;
}

std::string split_key(const Measurement& m) {
  if (is_collective_op(m.op)) {
    const int ctas = effective_ctas(m);
    return ctas > 0 ? fmt::format("{}@{}#ctas{}", m.op, m.bytes, ctas)
                    : fmt::format("{}@{}", m.op, m.bytes);
  }
  return fmt::format("{}x{}x{}", m.m, m.n, m.k);
}

}  // namespace overlapsim::calibration
