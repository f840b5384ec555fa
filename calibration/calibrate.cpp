#include "calibration/calibrate.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "calibration/csv.hpp"
#include "calibration/manifest.hpp"
#include "calibration/measurement.hpp"
#include "config/atomic_file.hpp"
#include "config/error.hpp"

namespace overlapsim::calibration {
namespace {

namespace fs = std::filesystem;

// Runs `bench args...` with NCCL_MAX_CTAS set when ctas > 0, stdout and stderr appended to
// `log`. Returns the exit code (128 + signal when killed, 124 on timeout).
int run_bench(const std::string& bench, const std::vector<std::string>& args, int ctas,
              const std::string& log, double timeout_s) {
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("calibrate: fork failed");
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    if (ctas > 0) setenv("NCCL_MAX_CTAS", std::to_string(ctas).c_str(), 1);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(bench.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(bench.c_str(), argv.data());
    _exit(127);
  }
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  while (true) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
        timeout_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return 124;
    }
    usleep(20000);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string tail_of(const std::string& path, std::size_t max_chars = 600) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  std::string t = s.str();
  if (t.size() > max_chars) t = "..." + t.substr(t.size() - max_chars);
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

// One write + fsync, so a case's rows land whole or (crash before the write) not at all.
void append_durably(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) throw std::runtime_error("calibrate: cannot open " + path + " for appending");
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) {
      close(fd);
      throw std::runtime_error("calibrate: write to " + path + " failed");
    }
    done += static_cast<std::size_t>(n);
  }
  fsync(fd);
  close(fd);
}

std::string today_utc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string clock_text(double s) {
  const int t = static_cast<int>(s + 0.5);
  return fmt::format("{}:{:02d}", t / 60, t % 60);
}

bool looks_like_no_gpu(const std::string& text) {
  for (const char* needle : {"no GPU", "no CUDA", "cudaGetDeviceCount", "CUDA driver version is",
                             "no CUDA-capable device", "cudaErrorNoDevice"})
    if (text.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

CalibrateResult run_calibration(const CalibrateOptions& o,
                                const std::function<void(const std::string&)>& progress) {
  const Suite suite = load_suite(o.suite_path);
  const int gpus = o.gpus > 0 ? o.gpus : suite.gpus;
  CalibrateResult result;
  result.cases_total = static_cast<int>(suite.cases.size());
  const fs::path dir(o.out_dir);
  const fs::path csv_path = dir / "calibration.csv";
  const fs::path log_path = dir / "overlap-bench.log";

  // Cases already finished (a previous, interrupted run into the same directory).
  std::set<std::string> done;
  std::vector<std::string> header;
  if (fs::exists(csv_path)) {
    const CsvTable t = read_csv(csv_path.string());
    const int c = t.column("case");
    if (c < 0)
      throw CalibrateUnavailable(fmt::format(
          "{}: no 'case' column: not written by overlapsim calibrate (expected a fresh --out)",
          csv_path.string()));
    header = t.header;
    for (const auto& r : t.rows) done.insert(r.fields[static_cast<std::size_t>(c)]);
  }
  std::vector<const SuiteCase*> todo;
  for (const auto& c : suite.cases)
    if (!done.count(c.key)) todo.push_back(&c);
  result.cases_skipped = result.cases_total - static_cast<int>(todo.size());
  for (const SuiteCase* c : todo) result.estimate_s += c->estimate_s();
  if (o.dry_run) return result;

  if (o.bench.empty() || !fs::exists(o.bench) || access(o.bench.c_str(), X_OK) != 0)
    throw CalibrateUnavailable(fmt::format(
        "no overlap-bench binary at '{}' (expected --bench PATH to overlap-bench, built where "
        "nvcc, cuBLASLt and NCCL exist: cmake -DOVERLAPSIM_CUDA=ON, target overlap-bench)",
        o.bench));
  fs::create_directories(dir);

  // Probe: a 1 KiB allreduce on the requested GPUs says whether they exist and who they are.
  const fs::path probe_csv = dir / ".probe.csv";
  const int probe_rc =
      run_bench(o.bench,
                {"--op", "allreduce", "--bytes", "1024", "--iterations", "1", "--warmup", "0",
                 "--world", std::to_string(gpus), "--output", probe_csv.string()},
                0, log_path.string(), o.timeout_s);
  if (probe_rc != 0 || !fs::exists(probe_csv)) {
    const std::string tail = tail_of(log_path.string());
    if (looks_like_no_gpu(tail) || probe_rc == 127)
      throw CalibrateUnavailable(
          fmt::format("no usable GPU for {} rank(s): overlap-bench probe exited {} ({})", gpus,
                      probe_rc, tail));
    throw std::runtime_error(
        fmt::format("overlap-bench probe failed (exit {}): {}", probe_rc, tail));
  }
  const auto probe = read_measurements(probe_csv.string());
  fs::remove(probe_csv);
  if (probe.empty()) throw std::runtime_error("overlap-bench probe wrote no row");

  Manifest m;
  m.gpu = probe[0].gpu;
  m.gpus = gpus;
  m.driver = probe[0].driver;
  m.cuda = probe[0].cuda;
  m.nccl = probe[0].nccl;
  m.host = host_name();
  m.date = today_utc();
  m.suite = o.suite_path;
  m.suite_hash = suite.hash;
  m.files.push_back({"calibration.csv", gpus, "overlapsim calibrate --suite " + o.suite_path});
  m.heldout = "heldout.csv";
  if (fs::exists(dir / "manifest.yaml")) {
    const Manifest old = load_manifest(o.out_dir);
    if (old.suite_hash != m.suite_hash || old.gpu != m.gpu || old.gpus != m.gpus)
      throw CalibrateUnavailable(fmt::format(
          "{} was measured with suite {} ({}) on {} x {}; this run is {} ({}) on {} x {} "
          "(expected the same suite and GPUs to resume, or a new --out)",
          old.file, old.suite, old.suite_hash, old.gpus, old.gpu, m.suite, m.suite_hash, m.gpus,
          m.gpu));
    m.date = old.date;  // when the measurements began
  }
  config::write_file_atomic((dir / "manifest.yaml").string(), format_manifest(m));

  const auto start = std::chrono::steady_clock::now();
  double estimated_done = 0, estimated_left = result.estimate_s;
  int index = result.cases_skipped;
  for (const SuiteCase* c : todo) {
    ++index;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = estimated_done > 0 ? elapsed / estimated_done : 1.0;
    if (progress)
      progress(fmt::format("calibrate [{}] case {}/{} {:<12} rows {:>5}  elapsed {}  ETA {}",
                           suite.name, index, result.cases_total, c->section, result.rows_written,
                           clock_text(elapsed), clock_text(estimated_left * rate)));
    const fs::path out_csv = dir / ".case.csv";
    fs::remove(out_csv);
    std::vector<std::string> args = c->bench_args();
    // overlap-bench's own deadline (every stream wait, rendezvous and tile-wise flag wait)
    // well inside the case's: a hang then ends with overlap-bench naming the rank and the
    // wait that stalled, in the log, instead of a bare kill at the case timeout.
    const double inner_timeout_s = std::max(5.0, o.timeout_s / 3);
    args.insert(args.end(), {"--world", std::to_string(gpus), "--timeout",
                             fmt::format("{:g}s", inner_timeout_s), "--output", out_csv.string()});
    const int rc = run_bench(o.bench, args, c->ctas, log_path.string(), o.timeout_s);
    if ((rc != 0 || !fs::exists(out_csv)) && c->may_fail()) {
      // A new kind of measurement must not cost the rest of the calibration: say so, skip.
      const std::string why = fmt::format("overlap-bench exited {} ({})", rc,
                                          tail_of(log_path.string(), 300));
      result.failed_cases.push_back(c->key + ": " + why);
      if (progress)
        progress(fmt::format("calibrate [{}] case {} failed, skipped (rerun to retry): {}",
                             suite.name, c->key, why));
      fs::remove(out_csv);
      estimated_done += c->estimate_s();
      estimated_left -= c->estimate_s();
      continue;
    }
    if (rc != 0 || !fs::exists(out_csv))
      throw std::runtime_error(fmt::format(
          "case {} failed: overlap-bench exited {} ({}); finished cases are kept in {}, rerun the "
          "same command to resume",
          c->key, rc, tail_of(log_path.string()), csv_path.string()));
    const CsvTable t = read_csv(out_csv.string());
    parse_measurements(t);  // the columns and numbers are checked before anything is kept
    std::vector<std::string> want = t.header;
    want.insert(want.end(), {"ctas", "case"});
    std::string text;
    if (header.empty()) {
      header = want;
      text += csv_join(header) + "\n";
    } else if (header != want) {
      throw std::runtime_error(fmt::format(
          "case {}: overlap-bench columns '{}' differ from {}'s (expected the same overlap-bench "
          "build to resume)",
          c->key, csv_join(t.header), csv_path.string()));
    }
    for (const auto& r : t.rows) {
      std::vector<std::string> f = r.fields;
      f.push_back(std::to_string(c->ctas));
      f.push_back(c->key);
      text += csv_join(f) + "\n";
    }
    append_durably(csv_path.string(), text);
    fs::remove(out_csv);
    result.rows_written += static_cast<int>(t.rows.size());
    ++result.cases_run;
    estimated_done += c->estimate_s();
    estimated_left -= c->estimate_s();
  }
  if (progress)
    progress(fmt::format(
        "calibrate [{}] done: {} case(s) run, {} skipped, {} failed, {} row(s) in {} ({})",
        suite.name, result.cases_run, result.cases_skipped, result.failed_cases.size(),
        result.rows_written, csv_path.string(),
        clock_text(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count())));
  return result;
}

}  // namespace overlapsim::calibration
