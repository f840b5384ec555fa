// redistribution-bench: times redistribution plans executed by our own NCCL executor
// (plan_executor.hpp) on one host's GPUs, the synthesised plan against the naive one
// (all-gather, then slice), both per layout pair of a pairs file, every result checked
// bit for bit against the target block's values.
//
// Per pair whose mesh has as many devices as there are ranks (others are skipped), both
// plans are prepared, run once on poisoned buffers and checked, warmed up, then timed
// --iterations times, the two plans in turn; before each timed run an untimed 1-element
// all-reduce lines the ranks up. A time is the maximum over ranks of one run (CUDA events
// on the rank's stream), then the median (and min, max) over the iterations; each step is
// timed the same way between the events around it. After timing the result is checked
// again. `wrong` sums both checks over the ranks.
//
// CSV (nccl-tests' habit: tags first, then times, then the check), one row per plan
// (step "all") and one per step:
//   gpu,driver,cuda,nccl,ranks,pair,mesh,shape,dtype,from,to,plan,steps,step,kind,
//   bytes_moved,time_us,time_min_us,time_max_us,iterations,wrong
// Rank 0 prints the rows; --output also writes them to a file (atomically).
//   redistribution-bench --pairs FILE [--world N] [--only NAME,...] [--iterations 30]
//                        [--warmup 5] [--timeout 120] [--output FILE]
// The pairs file is a CSV with at least the columns name, mesh, shape, dtype, from, to
// (benchmarks/redistribution/gpu_pairs.csv). Exit 2 on bad flags or pairs, 1 on a failed
// run (a wrong result is reported in its rows, not as a failure).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "kernels/bench/bench_row.hpp"
#include "kernels/harness/comm.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/flag_parse.hpp"
#include "kernels/harness/multi_gpu.hpp"
#include "kernels/redistribution/plan_executor.hpp"

namespace {

using namespace overlapsim::kernels;
using overlapsim::kernels::redistribution::PlanExecutor;
namespace rd = overlapsim::redistribution;

const std::string kProgram = "redistribution-bench";

struct Settings {
  std::string pairs_file;
  std::vector<std::string> only;
  int world = 0;
  int iterations = 30;
  int warmup = 5;
  double timeout_s = 120;
  std::string output;
};

Settings parse(const std::vector<std::string>& args) {
  Settings s;
  FlagCursor cursor(kProgram, args);
  std::string flag;
  while (cursor.next(&flag)) {
    if (flag == "--pairs") {
      s.pairs_file = cursor.value();
    } else if (flag == "--only") {
      s.only = split_list(cursor.value());
    } else if (flag == "--world") {
      s.world = static_cast<int>(flag_int(kProgram, flag, cursor.value(), 1, 64));
    } else if (flag == "--iterations") {
      s.iterations = static_cast<int>(flag_int(kProgram, flag, cursor.value(), 1, 100000));
    } else if (flag == "--warmup") {
      s.warmup = static_cast<int>(flag_int(kProgram, flag, cursor.value(), 0, 100000));
    } else if (flag == "--timeout") {
      s.timeout_s = flag_double(kProgram, flag, cursor.value(), 1, 3600, "seconds in 1..3600");
    } else if (flag == "--output") {
      s.output = cursor.value();
    } else if (flag == "--help") {
      throw std::invalid_argument(kProgram +
                                  ": --pairs FILE [--world N] [--only NAME,...] "
                                  "[--iterations 30] [--warmup 5] [--timeout 120] [--output FILE]");
    } else {
      bad_flag(kProgram, flag, "", "a known flag (--help lists them)");
    }
  }
  if (s.pairs_file.empty()) bad_flag(kProgram, "--pairs", "", "a pairs CSV file");
  return s;
}

// One CSV record: fields split at commas outside double quotes ("" is a quote).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  return out;
}

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

struct Pair {
  std::string name, mesh_text, shape_text, dtype, from_text, to_text;
  rd::Plan synthesised, naive;
};

// Reads the pairs of `world` devices (all when world is 0); throws ConfigError naming the
// file, line and column on a bad one.
std::vector<Pair> read_pairs(const Settings& s, int world) {
  std::ifstream in(s.pairs_file);
  if (!in)
    throw overlapsim::config::ConfigError(s.pairs_file + ": cannot be read (expected a pairs CSV)");
  std::string line;
  std::getline(in, line);
  const auto header = csv_fields(line);
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* need : {"name", "mesh", "shape", "dtype", "from", "to"})
    if (!col.count(need))
      throw overlapsim::config::ConfigError(s.pairs_file + ":1: no column '" + need +
                                            "' (expected name,mesh,shape,dtype,from,to)");
  std::vector<Pair> pairs;
  int number = 1;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    const auto f = csv_fields(line);
    if (f.size() < header.size())
      throw overlapsim::config::ConfigError(s.pairs_file + ":" + std::to_string(number) +
                                            ": too few fields (expected " +
                                            std::to_string(header.size()) + ")");
    Pair p;
    p.name = f[col["name"]];
    if (!s.only.empty() && std::find(s.only.begin(), s.only.end(), p.name) == s.only.end())
      continue;
    p.mesh_text = f[col["mesh"]];
    p.shape_text = f[col["shape"]];
    p.dtype = f[col["dtype"]];
    p.from_text = f[col["from"]];
    p.to_text = f[col["to"]];
    const std::string where = s.pairs_file + ":" + std::to_string(number) + ": ";
    const rd::Mesh mesh = rd::parse_mesh(p.mesh_text, where + "mesh");
    if (world > 0 && mesh.num_devices() != world) continue;
    const rd::Shape shape = rd::parse_shape(p.shape_text, where + "shape");
    const int eb = rd::parse_dtype_bytes(p.dtype, where + "dtype");
    if (eb != 2)
      throw overlapsim::config::ConfigError(where + "dtype: '" + p.dtype +
                                            "' (expected a 2-byte type: bf16 or fp16)");
    const rd::Layout from = rd::parse_layout(p.from_text, mesh, shape, where + "from");
    const rd::Layout to = rd::parse_layout(p.to_text, mesh, shape, where + "to");
    p.synthesised = rd::synthesize(mesh, shape, eb, from, to);
    p.naive = rd::naive_plan(mesh, shape, eb, from, to);
    pairs.push_back(std::move(p));
  }
  return pairs;
}

std::string steps_text(const rd::Plan& p) {
  std::string s;
  for (const rd::Step& st : p.steps) {
    if (!s.empty()) s += '+';
    s += rd::to_string(st.kind);
  }
  return s.empty() ? "none" : s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

class Runner {
 public:
  Runner(const Settings& s, const std::vector<Pair>& pairs, RankContext& ctx,
         std::vector<std::string>* lines)
      : settings_(s), pairs_(pairs), ctx_(ctx), lines_(lines) {}

  Status run() {
    tags_ = bench::read_device_tags(ctx_.comm.world);
    OVERLAPSIM_TRY(quiesce(ctx_, "redistribution align buffer"));
    OVERLAPSIM_TRY(align_.allocate(256));
    CUDA_CHECK(cudaMemsetAsync(align_.data(), 0, 256, ctx_.compute_stream));
    OVERLAPSIM_TRY(quiesce(ctx_, "redistribution align ready"));
    for (const Pair& p : pairs_) OVERLAPSIM_TRY(run_pair(p));
    return Status::success();
  }

 private:
  Status run_pair(const Pair& pair) {
    cudaStream_t s = ctx_.compute_stream;
    const rd::Plan* plans[2] = {&pair.synthesised, &pair.naive};
    PlanExecutor exec[2];
    OVERLAPSIM_TRY(quiesce(ctx_, "redistribution prepare"));
    for (int v = 0; v < 2; ++v) OVERLAPSIM_TRY(exec[v].prepare(ctx_, *plans[v]));
    OVERLAPSIM_TRY(quiesce(ctx_, "redistribution prepared"));

    // Check on poisoned buffers, warm up, time (the plans in turn), check again.
    std::vector<double> wrong(2, 0.0);
    for (int v = 0; v < 2; ++v) {
      std::uint64_t w = 0;
      OVERLAPSIM_TRY(exec[v].poison_outputs(s));
      OVERLAPSIM_TRY(exec[v].run(s));
      OVERLAPSIM_TRY(exec[v].count_wrong(s, &w));
      wrong[static_cast<std::size_t>(v)] += static_cast<double>(w);
    }
    for (int i = 0; i < settings_.warmup; ++i)
      for (int v = 0; v < 2; ++v) OVERLAPSIM_TRY(exec[v].run(s));
    const int iters = settings_.iterations;
    // Per plan and iteration: a start event and one event after each step.
    std::vector<std::vector<std::vector<cudaEvent_t>>> ends(2);
    std::vector<std::vector<cudaEvent_t>> starts(2);
    for (int v = 0; v < 2; ++v) {
      starts[static_cast<std::size_t>(v)].resize(static_cast<std::size_t>(iters));
      ends[static_cast<std::size_t>(v)].resize(static_cast<std::size_t>(iters));
      for (int i = 0; i < iters; ++i) {
        CUDA_CHECK(cudaEventCreate(&starts[static_cast<std::size_t>(v)][static_cast<std::size_t>(i)]));
        auto& e = ends[static_cast<std::size_t>(v)][static_cast<std::size_t>(i)];
        e.resize(std::max<std::size_t>(plans[v]->steps.size(), 1));
        for (auto& ev : e) CUDA_CHECK(cudaEventCreate(&ev));
      }
    }
    for (int i = 0; i < iters; ++i)
      for (int j = 0; j < 2; ++j) {
        const int v = (i + j) % 2;
        auto& e = ends[static_cast<std::size_t>(v)][static_cast<std::size_t>(i)];
        NCCL_SETTLE(ctx_.comm, ncclAllReduce(align_.data(), align_.data(), 1, ncclBfloat16, ncclSum,
                                             ctx_.comm.comm, s));
        CUDA_CHECK(cudaEventRecord(starts[static_cast<std::size_t>(v)][static_cast<std::size_t>(i)], s));
        if (plans[v]->steps.empty()) {
          CUDA_CHECK(cudaEventRecord(e[0], s));
        } else {
          OVERLAPSIM_TRY(exec[v].run(s, &e));
        }
      }
    OVERLAPSIM_TRY(wait_stream(ctx_.comm, s, "redistribution timing"));
    // times[v]: per iteration, the whole plan then each step (seconds).
    std::vector<double> flat;
    std::vector<std::size_t> at(2);
    for (int v = 0; v < 2; ++v) {
      at[static_cast<std::size_t>(v)] = flat.size();
      const std::size_t nsteps = plans[v]->steps.size();
      for (int i = 0; i < iters; ++i) {
        cudaEvent_t start = starts[static_cast<std::size_t>(v)][static_cast<std::size_t>(i)];
        const auto& e = ends[static_cast<std::size_t>(v)][static_cast<std::size_t>(i)];
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, e.back()));
        flat.push_back(1e-3 * ms);
        cudaEvent_t prev = start;
        for (std::size_t k = 0; k < nsteps; ++k) {
          CUDA_CHECK(cudaEventElapsedTime(&ms, prev, e[k]));
          flat.push_back(1e-3 * ms);
          prev = e[k];
        }
      }
    }
    for (auto& per_plan : starts)
      for (auto& ev : per_plan) cudaEventDestroy(ev);
    for (auto& per_plan : ends)
      for (auto& it : per_plan)
        for (auto& ev : it) cudaEventDestroy(ev);
    for (int v = 0; v < 2; ++v) {
      std::uint64_t w = 0;
      OVERLAPSIM_TRY(exec[v].count_wrong(s, &w));
      wrong[static_cast<std::size_t>(v)] += static_cast<double>(w);
    }
    OVERLAPSIM_TRY(allreduce_host(ctx_.comm, s, flat, ncclMax));
    OVERLAPSIM_TRY(allreduce_host(ctx_.comm, s, wrong, ncclSum));

    if (ctx_.comm.rank == 0)
      for (int v = 0; v < 2; ++v) {
        const rd::Plan& plan = *plans[v];
        const std::size_t stride = plan.steps.size() + 1;
        const auto series = [&](std::size_t k) {
          std::vector<double> t;
          for (int i = 0; i < iters; ++i)
            t.push_back(flat[at[static_cast<std::size_t>(v)] + static_cast<std::size_t>(i) * stride + k]);
          return t;
        };
        const auto eb = static_cast<std::uint64_t>(plan.element_bytes);
        emit(pair, plan, "all", "plan", plan.bytes_moved(), series(0), wrong[static_cast<std::size_t>(v)]);
        for (std::size_t k = 0; k < plan.steps.size(); ++k) {
          std::uint64_t moved = 0;
          for (auto e : plan.steps[k].received_elements) moved += static_cast<std::uint64_t>(e) * eb;
          emit(pair, plan, std::to_string(k + 1), rd::to_string(plan.steps[k].kind), moved,
               series(k + 1), wrong[static_cast<std::size_t>(v)]);
        }
      }
    OVERLAPSIM_TRY(quiesce(ctx_, "redistribution release"));
    for (int v = 0; v < 2; ++v) OVERLAPSIM_TRY(exec[v].release());
    return quiesce(ctx_, "redistribution released");
  }

  void emit(const Pair& pair, const rd::Plan& plan, const std::string& step,
            const std::string& kind, std::uint64_t bytes, const std::vector<double>& t,
            double wrong) {
    const auto [mn, mx] = std::minmax_element(t.begin(), t.end());
    char times[128];
    std::snprintf(times, sizeof times, "%.2f,%.2f,%.2f", 1e6 * median(t), 1e6 * *mn, 1e6 * *mx);
    std::ostringstream row;
    row << csv_quote(tags_.gpu) << "," << csv_quote(tags_.driver) << "," << csv_quote(tags_.cuda)
        << "," << csv_quote(tags_.nccl) << "," << ctx_.comm.world << "," << csv_quote(pair.name)
        << "," << csv_quote(pair.mesh_text) << "," << csv_quote(pair.shape_text) << ","
        << pair.dtype << "," << csv_quote(pair.from_text) << "," << csv_quote(pair.to_text) << ","
        << plan.name << "," << steps_text(plan) << "," << step << "," << kind << "," << bytes
        << "," << times << "," << t.size() << "," << static_cast<std::uint64_t>(wrong);
    lines_->push_back(row.str());
    std::printf("%s\n", lines_->back().c_str());
    std::fflush(stdout);
  }

  const Settings& settings_;
  const std::vector<Pair>& pairs_;
  RankContext& ctx_;
  std::vector<std::string>* lines_;
  bench::DeviceTags tags_;
  DeviceBuffer align_;
};

const char* kHeader =
    "gpu,driver,cuda,nccl,ranks,pair,mesh,shape,dtype,from,to,plan,steps,step,kind,bytes_moved,"
    "time_us,time_min_us,time_max_us,iterations,wrong";

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  std::vector<Pair> pairs;
  const int gpus = visible_gpu_count();
  try {
    settings = parse(std::vector<std::string>(argv + 1, argv + argc));
    const int world = settings.world > 0 ? settings.world : gpus;
    pairs = read_pairs(settings, world);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const overlapsim::config::ConfigError& e) {
    std::fprintf(stderr, "%s: %s\n", kProgram.c_str(), e.what());
    return 2;
  }
  const int world = settings.world > 0 ? settings.world : gpus;
  if (world < 1 || gpus < world) {
    std::fprintf(stderr, "%s: needs %d GPU(s), %d visible\n", kProgram.c_str(), world, gpus);
    return 2;
  }
  if (pairs.empty()) {
    std::fprintf(stderr, "%s: no pair of %s has a mesh of %d devices\n", kProgram.c_str(),
                 settings.pairs_file.c_str(), world);
    return 2;
  }
  HarnessOptions h;
  h.world = world;
  h.timeout_s = settings.timeout_s;
  h.blocking_comms = true;  // timings: non-blocking communicators add host time per call
  std::vector<std::string> lines;
  std::printf("%s\n", kHeader);
  std::fflush(stdout);
  const Status status = run_ranks(h, [&](RankContext& ctx) -> Status {
    Runner runner(settings, pairs, ctx, &lines);
    return runner.run();
  });
  if (!settings.output.empty()) {
    const std::string tmp = settings.output + ".tmp";
    {
      std::ofstream out(tmp);
      out << kHeader << "\n";
      for (const auto& l : lines) out << l << "\n";
    }
    std::rename(tmp.c_str(), settings.output.c_str());
  }
  if (!status.ok) {
    std::fprintf(stderr, "%s: %s\n", kProgram.c_str(), status.message.c_str());
    return 1;
  }
  return 0;
}
