// The tile-wise planners (sim/tilewise_plan/) against the measured 4-rank pairs:
//   - the ring route (ring.hpp): every 4-rank ring reduce-scatter and all-reduce candidate
//     and final row of benchmarks/results/h100x4/tilewise_ring4/run{1..4}/detail.csv, each
//     predicted from its own run's measured parts only: the GEMM with its signals alone
//     (t_own_signal_ce_s), the peer-copy curve (peer_copy copy_engine rows, world 4), the
//     stream operations per copy (copy_engine_with_stream_ops minus copy_engine at 1 MiB)
//     and the tail kernel's line as the simulator charges it, latency + (n - 1) b / rate,
//     fitted as `overlapsim fit` fits it (calibration/fit_copy_engine.hpp) through the run's
//     peer_copy tail_kernel rows of every world. Only the all-reduce's phase-2 contention
//     is fitted to pair rows (runs 1 and 2); runs 3 and 4 are held out. The slab order's runs
//     (benchmarks/results/h100x4/tilewise_slab4/run{1,2,3} and run6/w4: every ring candidate,
//     with and without slabs, plain and skewed, phase 2 on the comm stream, a stream a peer
//     or one side stream) are held out too: pair "ARS" for the slab order's rows.
//   - AllGather+GEMM (allgather.hpp, the simulator's path): the push step from a line
//     latency + bytes / rate fitted to run 2's transport-alone rows
//     (gather_only_tw_loop, rotated pushes) of benchmarks/results/h200x4/tilewise_ag4,
//     the GEMM alone from each row's own_alone_tw_loop; run 2 is the fit, runs 3 and 4
//     are held out.
// Prints the comparison and the fitted push line, writes one CSV row per prediction.
//   tilewise_4rank_check [--root DIR] [--csv FILE]
// Exit 2 with a one-line error naming the file and what is wrong.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "calibration/fit.hpp"
#include "calibration/fit_copy_engine.hpp"
#include "calibration/ring_name.hpp"
#include "sim/tilewise_plan/allgather.hpp"
#include "sim/tilewise_plan/comm_curve.hpp"
#include "sim/tilewise_plan/ring.hpp"

namespace tp = overlapsim::tilewise_plan;
namespace cal = overlapsim::calibration;

namespace {

struct Input : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using Row = std::map<std::string, std::string>;

std::vector<Row> read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Input(path + ": cannot open");
  std::string line;
  if (!std::getline(in, line)) throw Input(path + ": empty (expected a header)");
  std::vector<std::string> header;
  {
    std::stringstream ss(line);
    for (std::string f; std::getline(ss, f, ',');) header.push_back(f);
  }
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    Row r;
    std::stringstream ss(line);
    std::size_t i = 0;
    for (std::string f; std::getline(ss, f, ',') && i < header.size(); ++i) r[header[i]] = f;
    rows.push_back(std::move(r));
  }
  return rows;
}

double num(const Row& r, const std::string& key, const std::string& path) {
  const auto it = r.find(key);
  if (it == r.end() || it->second.empty()) throw Input(path + ": " + key + ": missing");
  try {
    std::size_t used = 0;
    const double v = std::stod(it->second, &used);
    if (used != it->second.size() || !std::isfinite(v)) throw std::invalid_argument("");
    return v;
  } catch (const std::logic_error&) {
    throw Input(path + ": " + key + ": '" + it->second + "' is not a number");
  }
}

const std::string& str(const Row& r, const std::string& key, const std::string& path) {
  const auto it = r.find(key);
  if (it == r.end()) throw Input(path + ": " + key + ": missing");
  return it->second;
}

// One run's measured transport parts at world 4.
struct Parts {
  tp::CommCurve copy;
  std::vector<std::pair<double, double>> tail_points;  // ((world - 1) x bytes per peer, s)
  tp::TimeOfBytes tail;
  cal::CopyLine tail_line;
  double ops_s = 0;
};

Parts read_parts(const std::string& path) {
  Parts p;
  double copy_1mib = -1, ops_1mib = -1;
  for (const Row& r : read_csv(path)) {
    if (str(r, "op", path) != "peer_copy") continue;
    const std::string& d = str(r, "design", path);
    const double world = num(r, "world", path);
    const double bytes = num(r, "bytes", path), t = num(r, "time_us", path) * 1e-6;
    if (d == "tail_kernel") {
      p.tail_points.emplace_back((world - 1) * bytes, t);
      continue;
    }
    if (world != 4) continue;
    if (d == "copy_engine") {
      p.copy.add_point(bytes, t);
      if (bytes == 1 << 20) copy_1mib = t;
    } else if (d == "copy_engine_with_stream_ops" && bytes == 1 << 20) {
      ops_1mib = t;
    }
  }
  if (p.copy.size() < 2) throw Input(path + ": peer_copy copy_engine: fewer than 2 world-4 rows");
  if (copy_1mib < 0 || ops_1mib < 0)
    throw Input(path + ": peer_copy copy_engine_with_stream_ops: no world-4 row at 1 MiB");
  if (p.tail_points.size() < 2) throw Input(path + ": peer_copy tail_kernel: fewer than 2 rows");
  // The tail kernel's rows scatter (16 MiB at world 4: 161 to 230 us between runs), so its
  // line, not the curve through them. At 4 ranks it carries b bytes to each of 3 peers.
  const cal::CopyLine line = cal::fit_copy_line(p.tail_points);
  p.tail = tp::tail_exchange_time(4, line.latency_s, line.Bps);
  p.tail_line = line;
  p.ops_s = std::max(0.0, ops_1mib - copy_1mib);
  return p;
}

struct Result {
  std::string pair, run, record, shape, config, set;
  double measured_s = 0, predicted_s = 0;
  double error() const { return (predicted_s - measured_s) / measured_s; }
};

// The ring route's configuration from the tuner's `wait` name,
// {copy_engine,tail_kernel}_ring then the suffix calibration/ring_name.hpp reads.
bool ring_config(const std::string& wait, tp::RingProblem& p) {
  const auto ring = cal::parse_ring_name(wait, 1);
  if (!ring) return false;
  p.phase2 = wait.rfind("tail_kernel", 0) == 0 ? tp::Phase2::TailKernel : tp::Phase2::CopyEngine;
  p.row_chunks = ring->row_chunks;
  p.slabs = ring->slabs;
  p.slab_skew = ring->slab_skew;
  p.phase2_own_streams = ring->phase2_own_streams;
  p.tail_whole_part = ring->tail_whole_part;
  return true;
}

constexpr int kH100Sms = 132, kH200Sms = 132;  // GH100: 132 SMs on both SXM parts
constexpr double kTileM = 128, kTileN = 256;    // the own GEMM's block tile (design.md)

double tiles_of(double m, double n) { return std::ceil(m / kTileM) * std::ceil(n / kTileN); }

// A run's tail-kernel line and how many rows it went through.
struct TailLine {
  std::string run;
  cal::CopyLine line;
  std::size_t rows = 0;
};

struct RingCase {
  tp::RingProblem problem;
  Result result;
};

// One run's ring rows: every world-4 candidate and final row of `detail` whose `wait` names
// the ring, predicted from `parts` (the run's peer copies and tail kernel). `held_out`: no
// row of the run was fitted (else the all-reduce's rows fit the phase-2 contention).
void ring_run(const std::string& parts_path, const std::string& path, const std::string& run,
              bool held_out, std::vector<RingCase>& out, std::vector<TailLine>& tails) {
  const Parts parts = read_parts(parts_path);
  tails.push_back({run, parts.tail_line, parts.tail_points.size()});
  for (const Row& r : read_csv(path)) {
    const std::string& record = str(r, "record", path);
    if ((record != "candidate" && record != "final") || num(r, "world", path) != 4) continue;
    tp::RingProblem p;
    if (!ring_config(str(r, "wait", path), p)) continue;
    const std::string& op = str(r, "op", path);
    p.op = op == "gemm+allreduce" ? tp::Collective::AllReduce : tp::Collective::ReduceScatter;
    const double m = num(r, "m", path), n = num(r, "n", path), k = num(r, "k", path);
    p.world = 4;
    p.groups_per_part = static_cast<int>(num(r, "groups", path));
    p.tiles = tiles_of(m, n);
    p.ctas = kH100Sms;
    p.gemm_s = num(r, "t_own_signal_ce_s", path);
    p.bytes = m * n * 2;
    p.copy_s = parts.copy.as_function();
    p.copy_ops_s = parts.ops_s;
    p.tail_s = parts.tail;
    Result res;
    res.pair = p.op == tp::Collective::ReduceScatter ? "RS" : p.slabs > 1 ? "ARS" : "AR";
    res.run = run;
    res.record = record;
    std::ostringstream shape;
    shape << m << "x" << n << "x" << k;
    res.shape = shape.str();
    res.config = str(r, "wait", path) + "/g" + str(r, "groups", path);
    // Only the all-reduce's phase-2 contention is fitted (ring runs 1 and 2).
    res.set = !held_out && p.op == tp::Collective::AllReduce ? "fit" : "heldout";
    res.measured_s = num(r, "measured_s", path);
    out.push_back({p, res});
  }
}

void ring_rows(const std::string& root, std::vector<RingCase>& out, std::vector<TailLine>& tails) {
  const std::string dir = root + "/benchmarks/results/h100x4/tilewise_ring4/";
  for (int run = 1; run <= 4; ++run) {
    const std::string rd = dir + "run" + std::to_string(run) + "/";
    ring_run(rd + (run == 1 ? "ring4.csv" : "bench.csv"), rd + "detail.csv",
             "run" + std::to_string(run), run > 2, out, tails);
  }
  const std::string slabs = root + "/benchmarks/results/h100x4/tilewise_slab4/";
  for (const std::string run : {"run1", "run2", "run3", "run6/w4"})
    ring_run(slabs + run + "/bench.csv", slabs + run + "/detail.csv", "slab4/" + run, true, out,
             tails);
}

// A step's time from one chunk's bytes: latency_s + bytes / rate_Bps.
struct PushLine {
  double latency_s = 0, rate_Bps = 0;
  double step_s(double bytes) const { return latency_s + bytes / rate_Bps; }
};

struct AgRow {
  std::string run, shape, design;
  double m = 0, n = 0, k = 0, chunks = 1, gemm_s = 0, gather_s = 0, measured_s = 0;
  double shard_bytes() const { return m / 4 * k * 2; }
};

std::vector<AgRow> ag_rows(const std::string& root) {
  const std::string dir = root + "/benchmarks/results/h200x4/tilewise_ag4/";
  std::vector<AgRow> out;
  for (int run = 2; run <= 4; ++run) {
    const std::string path = dir + "run" + std::to_string(run) + "/bench.csv";
    std::map<std::string, AgRow> by_shape;
    for (const Row& r : read_csv(path)) {
      if (str(r, "op", path) != "allgather+gemm" || num(r, "world", path) != 4) continue;
      std::ostringstream s;
      s << num(r, "m", path) << "x" << num(r, "n", path) << "x" << num(r, "k", path);
      AgRow& a = by_shape[s.str()];
      a.run = "run" + std::to_string(run);
      a.shape = s.str();
      a.m = num(r, "m", path);
      a.n = num(r, "n", path);
      a.k = num(r, "k", path);
      const std::string& d = str(r, "design", path);
      const double t = num(r, "time_us", path) * 1e-6;
      if (d == "own_alone_tw_loop") a.gemm_s = t;
      if (d == "gather_only_tw_loop") a.gather_s = t;
      if (d == "tilewise_ag" || d == "tilewise_ag_par") {
        a.design = d;
        a.chunks = num(r, "chunks", path);
        a.measured_s = t;
      }
    }
    for (auto& [shape, a] : by_shape) {
      if (a.design.empty()) continue;
      if (a.gemm_s <= 0 || a.gather_s <= 0)
        throw Input(path + ": " + shape + ": own_alone_tw_loop or gather_only_tw_loop missing");
      out.push_back(a);
    }
  }
  return out;
}

// Least squares on the relative error of the rotated transport alone, 3 c steps of
// latency + (shard / c) / rate: T = 3c L + 3 shard / rate, linear in (L, 1 / rate).
PushLine fit_push(const std::vector<AgRow>& rows, const std::string& run) {
  double a11 = 0, a12 = 0, a22 = 0, b1 = 0, b2 = 0;
  int used = 0;
  for (const AgRow& a : rows) {
    if (a.run != run || a.design != "tilewise_ag") continue;
    const double x1 = 3 * a.chunks / a.gather_s, x2 = 3 * a.shard_bytes() / a.gather_s;
    a11 += x1 * x1;
    a12 += x1 * x2;
    a22 += x2 * x2;
    b1 += x1;
    b2 += x2;
    ++used;
  }
  const double det = a11 * a22 - a12 * a12;
  if (used < 2 || std::fabs(det) < 1e-300) throw Input(run + ": fewer than 2 rotated AllGather rows");
  PushLine line;
  line.latency_s = (b1 * a22 - b2 * a12) / det;
  line.rate_Bps = 1 / ((a11 * b2 - a12 * b1) / det);
  return line;
}

// The all-reduce's phase-2 contention: the value in [0, 1] (steps of 0.005) with the least
// median |error| over the fit runs' chosen configurations (final rows).
double fit_contention(std::vector<RingCase>& cases) {
  double best = 0, best_err = 1e300;
  for (int i = 0; i <= 200; ++i) {
    const double c = i * 0.005;
    std::vector<double> errs;
    for (RingCase& rc : cases) {
      if (rc.result.set != "fit" || rc.result.record != "final") continue;
      rc.problem.phase2_contention = c;
      const double t = tp::plan_ring(rc.problem).end_s;
      errs.push_back(std::fabs(t - rc.result.measured_s) / rc.result.measured_s);
    }
    const double e = cal::median(errs);
    if (e < best_err - 1e-12) {
      best_err = e;
      best = c;
    }
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::string root = ".", csv;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--root" || a == "--csv") && i + 1 < argc) {
      (a == "--root" ? root : csv) = argv[++i];
    } else {
      std::fprintf(stderr, "tilewise_4rank_check: unknown argument '%s' (expected --root DIR, --csv FILE)\n",
                   a.c_str());
      return 2;
    }
  }
  std::vector<Result> results;
  PushLine push;
  double contention = 0;
  std::vector<TailLine> tails;
  try {
    std::vector<RingCase> ring;
    ring_rows(root, ring, tails);
    contention = fit_contention(ring);
    for (RingCase& rc : ring) {
      rc.problem.phase2_contention = contention;
      rc.result.predicted_s = tp::plan_ring(rc.problem).end_s;
      results.push_back(rc.result);
    }
    const std::vector<AgRow> ag = ag_rows(root);
    push = fit_push(ag, "run2");
    for (const AgRow& a : ag) {
      tp::AllGatherProblem p;
      p.world = 4;
      p.chunks = static_cast<int>(a.chunks);
      p.tiles = tiles_of(a.m, a.n);
      p.ctas = kH200Sms;
      p.gemm_s = a.gemm_s;
      p.per_peer = a.design == "tilewise_ag_par";
      // A stream a peer: the n - 1 pushes of a chunk share the rank's links.
      const double chunk = a.shard_bytes() / a.chunks;
      p.step_s = p.per_peer ? push.latency_s + 3 * chunk / push.rate_Bps : push.step_s(chunk);
      Result r;
      r.pair = "AG";
      r.run = a.run;
      r.record = "final";
      r.shape = a.shape;
      r.config = a.design + "/c" + std::to_string(p.chunks);
      r.set = a.run == "run2" ? "fit" : "heldout";
      r.measured_s = a.measured_s;
      r.predicted_s = tp::plan_allgather_consumer(p).end_s;
      results.push_back(r);
    }
  } catch (const Input& e) {
    std::fprintf(stderr, "tilewise_4rank_check: %s\n", e.what());
    return 2;
  }
  for (const TailLine& t : tails)
    std::printf("tail kernel (%s, %zu peer_copy rows): %.4g s + (n - 1) bytes / %.4g B/s\n",
                t.run.c_str(), t.rows, t.line.latency_s, t.line.Bps);
  std::printf("ring all-reduce phase-2 contention (runs 1 and 2): %.3f\n", contention);
  std::printf("AllGather push step (run 2's rotated transport-alone rows): %.4g s + bytes / %.4g B/s\n",
              push.latency_s, push.rate_Bps);
  std::printf("%-4s %-9s %-8s %5s %9s %9s\n", "pair", "record", "set", "rows", "median", "max");
  for (const char* pair : {"RS", "AR", "ARS", "AG"})
    for (const char* record : {"final", "candidate"})
      for (const char* set : {"fit", "heldout"}) {
        std::vector<double> errs;
        for (const Result& r : results)
          if (r.pair == pair && r.record == record && r.set == set) errs.push_back(std::fabs(r.error()));
        if (errs.empty()) continue;
        std::printf("%-4s %-9s %-8s %5zu %8.2f%% %8.2f%%\n", pair, record, set, errs.size(),
                    100 * cal::median(errs), 100 * *std::max_element(errs.begin(), errs.end()));
      }
  if (!csv.empty()) {
    std::ofstream out(csv);
    if (!out) {
      std::fprintf(stderr, "tilewise_4rank_check: %s: cannot write\n", csv.c_str());
      return 2;
    }
    out << "pair,run,record,shape,config,set,measured_us,predicted_us,error\n";
    char line[512];
    for (const Result& r : results) {
      std::snprintf(line, sizeof line, "%s,%s,%s,%s,%s,%s,%.2f,%.2f,%.4f\n", r.pair.c_str(),
                    r.run.c_str(), r.record.c_str(), r.shape.c_str(), r.config.c_str(),
                    r.set.c_str(), r.measured_s * 1e6, r.predicted_s * 1e6, r.error());
      out << line;
    }
  }
  return 0;
}
