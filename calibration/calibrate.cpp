#include "calibration/calibrate.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "calibration/calibrate_csv.hpp"
#include "calibration/calibrate_dir.hpp"
#include "calibration/calibrate_process.hpp"
#include "calibration/csv.hpp"
#include "calibration/manifest.hpp"
#include "calibration/measurement.hpp"
#include "config/atomic_file.hpp"
#include "config/error.hpp"

namespace overlapsim::calibration {
namespace {

namespace fs = std::filesystem;

std::string tail_of(const std::string& path, std::size_t max_chars = 600) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  std::string t = s.str();
  if (t.size() > max_chars) t = "..." + t.substr(t.size() - max_chars);
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
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

// What a previous run into the directory left: the cases its markers vouch for.
struct ResumeState {
  std::string text;  // calibration.csv as found ("" when absent)
  CalibrateCsvScan scan;
  std::vector<std::string> header;  // of the trusted rows; empty before the first case
  std::set<std::string> done;
};

ResumeState read_resume_state(const fs::path& csv_path) {
  ResumeState s;
  s.scan.marked = true;  // no file: nothing to trust, nothing to discard
  if (!fs::exists(csv_path)) return s;
  std::ifstream in(csv_path, std::ios::binary);
  if (!in) throw std::runtime_error("calibrate: cannot read " + csv_path.string());
  std::ostringstream buffer;
  buffer << in.rdbuf();
  s.text = buffer.str();
  s.scan = scan_calibrate_csv(s.text);
  if (!s.scan.marked) {
    // A plain CSV: overlap-bench's own, or an older calibrate's without markers, whose
    // finished cases cannot be told from cut ones.
    const CsvTable t = parse_csv(s.text, csv_path.string());
    throw CalibrateUnavailable(fmt::format(
        "{}: {} (expected a fresh --out, or one that calibrate wrote with completion markers)",
        csv_path.string(),
        t.column("case") < 0 ? "no 'case' column: not written by overlapsim calibrate"
                             : "written without completion markers, so its finished cases "
                               "cannot be told from cut ones"));
  }
  const CsvTable t = parse_trusted_calibrate_csv(s.text, s.scan, csv_path.string());
  s.header = t.header;
  for (const MarkedCase& c : s.scan.cases) s.done.insert(c.key);
  return s;
}

// Temp files of runs that died: per-case outputs and probes. Only under the lock, so no
// live run owns them.
void remove_stale_temp_files(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    const bool temp =
        (name.rfind(".case.", 0) == 0 || name.rfind(".probe.", 0) == 0 || name == ".probe.csv") &&
        name.size() > 4 && name.substr(name.size() - 4) == ".csv";
    if (temp) fs::remove(e.path());
  }
}

// One row of the CSV: the scanner reads lines, so a row must be one line that does not
// look like a marker.
std::string row_line(const std::vector<std::string>& fields, const std::string& file, int line) {
  std::string l = csv_join(fields);
  if (l.empty() || l.front() == '#' || l.find_first_of("\r\n") != std::string::npos)
    throw std::runtime_error(fmt::format(
        "{}:{}: a row that is empty, starts with '#' or holds a line break (expected one line "
        "per row: calibrate's markers are lines starting with '#')",
        file, line));
  return l + "\n";
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
  const auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };

  // Cases a previous, interrupted run into the same directory finished: those its markers
  // vouch for. Read again under the lock below; this read only sizes the dry run.
  ResumeState state = read_resume_state(csv_path);
  const auto plan = [&] {
    std::vector<const SuiteCase*> todo;
    for (const auto& c : suite.cases)
      if (!state.done.count(c.key)) todo.push_back(&c);
    result.cases_skipped = result.cases_total - static_cast<int>(todo.size());
    result.estimate_s = 0;
    for (const SuiteCase* c : todo) result.estimate_s += c->estimate_s();
    return todo;
  };
  std::vector<const SuiteCase*> todo = plan();
  if (o.dry_run) {
    if (!state.scan.why.empty())
      say(fmt::format("calibrate [{}] {}: a rerun discards {} line(s) from line {}: {}", suite.name,
                      csv_path.string(), state.scan.tail_lines, state.scan.tail_line,
                      state.scan.why));
    return result;
  }

  if (o.bench.empty() || !fs::exists(o.bench) || access(o.bench.c_str(), X_OK) != 0)
    throw CalibrateUnavailable(fmt::format(
        "no overlap-bench binary at '{}' (expected --bench PATH to overlap-bench, built where "
        "nvcc, cuBLASLt and NCCL exist: cmake -DOVERLAPSIM_CUDA=ON, target overlap-bench)",
        o.bench));
  fs::create_directories(dir);
  const DirectoryLock lock(o.out_dir);
  const BenchSignalGuard forward_signals;
  remove_stale_temp_files(dir);
  state = read_resume_state(csv_path);
  todo = plan();
  if (!state.scan.why.empty()) {
    // Rows no marker vouches for: a case cut short. Its case runs again.
    say(
        fmt::format("calibrate [{}] {}: discarding {} line(s) from line {}: {}; their case runs "
                    "again",
                    suite.name, csv_path.string(), state.scan.tail_lines, state.scan.tail_line,
                    state.scan.why));
    truncate_durably(csv_path.string(), state.scan.trusted_bytes);
    result.discarded_lines = state.scan.tail_lines;
  }

  // Probe: a 1 KiB allreduce on the requested GPUs says whether they exist and who they are.
  const fs::path probe_csv = dir / fmt::format(".probe.{}.csv", getpid());
  const int probe_rc =
      run_bench(o.bench,
                {"--op", "allreduce", "--bytes", "1024", "--iterations", "1", "--warmup", "0",
                 "--world", std::to_string(gpus), "--output", probe_csv.string()},
                0, log_path.string(), o.timeout_s);
  if (probe_rc != 0 || !fs::exists(probe_csv)) {
    fs::remove(probe_csv);
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

  // Bytes of calibration.csv now on disk (the trusted part): the signature comes first.
  bool need_signature = state.scan.trusted_bytes == 0;
  std::vector<std::string> header = state.header;
  const auto start = std::chrono::steady_clock::now();
  double estimated_done = 0, estimated_left = result.estimate_s;
  int index = result.cases_skipped;
  for (const SuiteCase* c : todo) {
    ++index;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = estimated_done > 0 ? elapsed / estimated_done : 1.0;
    say(fmt::format("calibrate [{}] case {}/{} {:<12} rows {:>5}  elapsed {}  ETA {}", suite.name,
                    index, result.cases_total, c->section, result.rows_written, clock_text(elapsed),
                    clock_text(estimated_left * rate)));
    // A file of this run and case alone: nothing another run or call wrote can be taken
    // for this case's rows.
    const fs::path out_csv = dir / fmt::format(".case.{}.{}.csv", getpid(), index);
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
      const std::string why =
          fmt::format("overlap-bench exited {} ({})", rc, tail_of(log_path.string(), 300));
      result.failed_cases.push_back(c->key + ": " + why);
      say(fmt::format("calibrate [{}] case {} failed, skipped (rerun to retry): {}", suite.name,
                      c->key, why));
      fs::remove(out_csv);
      estimated_done += c->estimate_s();
      estimated_left -= c->estimate_s();
      continue;
    }
    if (rc != 0 || !fs::exists(out_csv)) {
      fs::remove(out_csv);
      throw std::runtime_error(fmt::format(
          "case {} failed: overlap-bench exited {} ({}); finished cases are kept in {}, rerun the "
          "same command to resume",
          c->key, rc, tail_of(log_path.string()), csv_path.string()));
    }
    const CsvTable t = read_csv(out_csv.string());
    parse_measurements(t);  // the columns and numbers are checked before anything is kept
    std::vector<std::string> want = t.header;
    want.insert(want.end(), {"ctas", "case"});
    // The block: the header before the first case, the rows, then the marker over both.
    std::string block;
    if (header.empty()) {
      header = want;
      block += row_line(header, out_csv.string(), 1);
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
      block += row_line(f, out_csv.string(), r.line);
    }
    if (c->key.find_first_of("\r\n") != std::string::npos)
      throw std::runtime_error("case key with a line break: " + c->key);
    const int rows = static_cast<int>(t.rows.size());
    const std::string marker = format_case_marker(block, rows, c->key);
    // One append: the marker lands with its rows or, cut anywhere, vouches for none of them.
    append_durably(
        csv_path.string(),
        (need_signature ? std::string(kCalibrateCsvSignature) + "\n" : "") + block + marker);
    need_signature = false;
    fs::remove(out_csv);
    if (rows == 0) say(fmt::format("calibrate [{}] case {} wrote no row", suite.name, c->key));
    result.rows_written += rows;
    ++result.cases_run;
    estimated_done += c->estimate_s();
    estimated_left -= c->estimate_s();
  }
  say(fmt::format(
      "calibrate [{}] done: {} case(s) run, {} skipped, {} failed, {} row(s) in {} ({})",
      suite.name, result.cases_run, result.cases_skipped, result.failed_cases.size(),
      result.rows_written, csv_path.string(),
      clock_text(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count())));
  return result;
}

}  // namespace overlapsim::calibration
