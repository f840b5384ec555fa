// calibrate killed at random points, then resumed: the final calibration.csv must be byte
// for byte the one an uninterrupted run writes (no row lost, duplicated or put under
// another case), and no overlap-bench call may outlive the calibrate that started it.
// Also: a file cut at every byte, a second run on a locked directory, a changed row.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "calibration/calibrate.hpp"
#include "calibration/calibrate_csv.hpp"
#include "calibration/calibrate_dir.hpp"
#include "calibration/measurement.hpp"
#include "config/error.hpp"

namespace overlapsim::calibration {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Four cases, 13 rows: collectives at two CTA limits, GEMMs of two designs.
const char* kKillSuite = R"(format: 1
name: kill
gpus: 2
defaults: {dtype: bf16, warmup: 1, iterations: 2}
sections:
  - name: coll
    ops: [allreduce]
    bytes: {from: 1KiB, to: 64KiB, factor: 4}
    ctas: [0, 4]
  - name: gemm
    op: gemm
    designs: [cublas, own]
    grid: {m: [128], n: [256, 512], k: [64, 512]}
)";
constexpr std::size_t kRows = 2 * 4 + 2 * 4;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class CalibrateKill : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("overlapsim_calibrate_kill_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    std::ofstream(root_ / "suite.yaml") << kKillSuite;
    for (const char* v : {"FAKE_BENCH_CALLS", "FAKE_BENCH_FAIL_AFTER", "FAKE_BENCH_NO_GPU",
                          "FAKE_BENCH_FAIL_OP", "FAKE_BENCH_SLEEP", "FAKE_BENCH_PIDS"})
      unsetenv(v);
  }
  void TearDown() override {
    unsetenv("FAKE_BENCH_SLEEP");
    unsetenv("FAKE_BENCH_PIDS");
    fs::remove_all(root_);
  }

  CalibrateOptions options(const fs::path& out) const {
    CalibrateOptions o;
    o.out_dir = out.string();
    o.suite_path = (root_ / "suite.yaml").string();
    o.bench = std::string(OVERLAPSIM_SOURCE_DIR) + "/tests/calibration/fake_overlap_bench.sh";
    o.timeout_s = 30;
    return o;
  }

  // calibrate in a child process (as a user's run is one), exit 0 on success.
  pid_t start(const fs::path& out) const {
    const CalibrateOptions o = options(out);
    const pid_t pid = fork();
    if (pid == 0) {
      int rc = 0;
      try {
        run_calibration(o);
      } catch (...) {
        rc = 1;
      }
      _exit(rc);
    }
    return pid;
  }

  // The reference: an uninterrupted run in this process.
  std::string reference() const {
    const fs::path out = root_ / "reference";
    run_calibration(options(out));
    return slurp(out / "calibration.csv");
  }

  // How long an uninterrupted run takes the way the trials start one (a forked child, whose
  // fork alone can take longer than the run under a sanitizer on a busy machine); its file
  // must be the reference's.
  double child_run_s(const std::string& want) const {
    const fs::path out = root_ / "timed";
    fs::remove_all(out);
    const auto t0 = Clock::now();
    const pid_t pid = start(out);
    int status = 0;
    waitpid(pid, &status, 0);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    EXPECT_EQ(slurp(out / "calibration.csv"), want);
    fs::remove_all(out);
    return s;
  }

  fs::path root_;
};

bool alive(pid_t pid) {
  // A zombie (waiting for whoever adopted it to reap it) has stopped running.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

bool dies_within(pid_t pid, double seconds) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (alive(pid)) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::vector<pid_t> pids_in(const fs::path& file) {
  std::vector<pid_t> pids;
  std::ifstream in(file);
  for (pid_t p; in >> p;) pids.push_back(p);
  return pids;
}

std::vector<std::string> temp_files(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".case", 0) == 0 || name.rfind(".probe", 0) == 0) found.push_back(name);
  }
  return found;
}

TEST_F(CalibrateKill, FiftyRandomKillsLoseNoRow) {
  const std::string want = reference();
  ASSERT_EQ(read_measurements((root_ / "reference" / "calibration.csv").string()).size(), kRows);
  // The kill points span one run as the trials start it, timed just before each trial:
  // the faster of that run and the previous trial's, as a busy machine can stall either.
  // (Timing the run in this process instead put every kill of a sanitized build under load
  // before the child's first case; timing it once before all the trials put most kills
  // before the first case when the machine grew busier during them.)
  double last_s = child_run_s(want);  // deterministic output, too
  std::vector<double> spans;
  const fs::path pids = root_ / "pids.txt";
  setenv("FAKE_BENCH_PIDS", pids.c_str(), 1);
  std::mt19937 rng(20261126);  // fixed: the same kill points every run, timing aside
  std::uniform_real_distribution<double> when(0.0, 1.1);  // of a run
  int cut_short = 0, resumed_with_rows = 0, discarded = 0;
  for (int trial = 0; trial < 50; ++trial) {
    const fs::path out = root_ / ("trial" + std::to_string(trial));
    const double now_s = child_run_s(want);
    const double span_s = std::min(now_s, last_s);
    last_s = now_s;
    spans.push_back(span_s);
    // Each trial starts fresh; odd trials kill the first resume too.
    const int kills = 1 + trial % 2;
    for (int k = 0; k < kills; ++k) {
      const pid_t pid = start(out);
      std::this_thread::sleep_for(std::chrono::duration<double>(when(rng) * span_s));
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        ++cut_short;
      } else {
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "trial " << trial;
      }
    }
    // No call of a killed run may outlive it.
    for (pid_t p : pids_in(pids))
      EXPECT_TRUE(dies_within(p, 2.0)) << "trial " << trial << " pid " << p;
    fs::remove(pids);
    if (fs::exists(out / "calibration.csv") && fs::file_size(out / "calibration.csv") > 0)
      ++resumed_with_rows;
    const CalibrateResult r = run_calibration(options(out));
    discarded += r.discarded_lines > 0;
    ASSERT_EQ(slurp(out / "calibration.csv"), want) << "trial " << trial;
    const auto rows = read_measurements((out / "calibration.csv").string());
    ASSERT_EQ(rows.size(), kRows);
    EXPECT_TRUE(temp_files(out).empty()) << "trial " << trial << ": " << temp_files(out).front();
    fs::remove_all(out);
  }
  // The kills must land mid-run, and some after a case was kept, or the test tests nothing.
  EXPECT_GE(cut_short, 30);  // of 75 kills
  EXPECT_GE(resumed_with_rows, 10);
  std::sort(spans.begin(), spans.end());
  std::printf(
      "50 trials, %.2f-%.2f s per uninterrupted run: %d runs killed mid-way, %d resumes "
      "found kept cases, %d cut away a tail\n",
      spans.front(), spans.back(), cut_short, resumed_with_rows, discarded);
}

// The orphan of the issue: a call still measuring when calibrate is killed. It must die
// with calibrate (parent-death signal), and on SIGTERM calibrate kills its whole group.
TEST_F(CalibrateKill, CallsDieWithCalibrate) {
  const fs::path pids = root_ / "pids.txt";
  setenv("FAKE_BENCH_PIDS", pids.c_str(), 1);
  setenv("FAKE_BENCH_SLEEP", "20", 1);
  for (const int sig : {SIGKILL, SIGTERM}) {
    fs::remove(pids);
    const pid_t pid = start(root_ / ("sig" + std::to_string(sig)));
    const auto until = Clock::now() + std::chrono::seconds(20);
    while (pids_in(pids).size() < 2 && Clock::now() < until)  // the probe's sleep runs
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const std::vector<pid_t> bench = pids_in(pids);
    ASSERT_EQ(bench.size(), 2u);
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig);
    EXPECT_TRUE(dies_within(bench[0], 2.0)) << "overlap-bench outlived calibrate, signal " << sig;
    // SIGTERM reaches the whole group (the shell's sleep too); SIGKILL only the call itself
    // (its parent-death signal), which in a real overlap-bench is the only process.
    if (sig == SIGTERM) {
      EXPECT_TRUE(dies_within(bench[1], 2.0));
    } else {
      kill(bench[1], SIGKILL);  // the shell's orphaned sleep: ours to end
    }
  }
}

TEST_F(CalibrateKill, ASecondRunOnTheDirectoryIsRefused) {
  const fs::path out = root_ / "locked";
  fs::create_directories(out);
  // The first run: another process holding the directory's lock until we end it.
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t holder = fork();
  if (holder == 0) {
    const DirectoryLock held(out.string());
    [[maybe_unused]] const ssize_t n = write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  try {
    run_calibration(options(out));
    ADD_FAILURE() << "a second run went ahead";
  } catch (const CalibrateUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("in use by another calibrate (pid " +
                                         std::to_string(holder) + ")"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(out / "calibration.csv"));
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
  // The holder's death frees the directory.
  EXPECT_EQ(run_calibration(options(out)).rows_written, static_cast<int>(kRows));
}

// A file cut at every byte: the scan trusts exactly the cases whose marker line is whole,
// a reader refuses the cut file, and a resume from it ends with the reference file.
TEST_F(CalibrateKill, ACutAtAnyByteKeepsExactlyTheWholeCases) {
  const std::string want = reference();
  std::vector<std::size_t> marker_ends;
  for (std::size_t pos = want.find("\n#case-done "); pos != std::string::npos;
       pos = want.find("\n#case-done ", pos + 1))
    marker_ends.push_back(want.find('\n', pos + 1) + 1);
  ASSERT_EQ(marker_ends.size(), 4u);
  ASSERT_EQ(marker_ends.back(), want.size());
  const std::size_t signature = kCalibrateCsvSignature.size() + 1;
  for (std::size_t len = 0; len <= want.size(); ++len) {
    const CalibrateCsvScan s = scan_calibrate_csv(std::string_view(want).substr(0, len));
    std::size_t whole = 0;
    while (whole < marker_ends.size() && marker_ends[whole] <= len) ++whole;
    ASSERT_TRUE(s.marked) << len;
    ASSERT_EQ(s.cases.size(), whole) << len;
    const std::size_t trusted = whole ? marker_ends[whole - 1] : (len >= signature ? signature : 0);
    ASSERT_EQ(s.trusted_bytes, trusted) << len;
    ASSERT_EQ(s.why.empty(), len == trusted) << len;
  }
  // Resumes from cuts at row boundaries inside each block (the issue's silent loss) and
  // inside a marker: the tail is cut away, said, and measured again.
  int trial = 0;
  for (std::size_t len : {want.find('\n', marker_ends[0] + 1) + 1,
                          want.rfind('\n', marker_ends[2] - 2) + 1, marker_ends[3] - 5}) {
    const fs::path out = root_ / ("cut" + std::to_string(trial++));
    fs::create_directories(out);
    std::ofstream(out / "calibration.csv", std::ios::binary) << want.substr(0, len);
    EXPECT_THROW(read_measurements((out / "calibration.csv").string()), config::ConfigError);
    std::vector<std::string> said;
    const CalibrateResult r =
        run_calibration(options(out), [&](const std::string& l) { said.push_back(l); });
    EXPECT_GT(r.discarded_lines, 0) << len;
    EXPECT_NE(said.at(0).find("discarding"), std::string::npos) << said.at(0);
    EXPECT_EQ(slurp(out / "calibration.csv"), want) << len;
  }
}

TEST_F(CalibrateKill, AChangedRowIsNotTrusted) {
  std::string text = reference();
  const fs::path csv = root_ / "changed.csv";
  // A digit of the second case's first row: that block and everything after are untrusted.
  const std::size_t second = text.find("\n#case-done ") + 1;
  const std::size_t row = text.find('\n', second) + 1;
  const std::size_t digit = text.find_first_of("0123456789", row + 30);
  text[digit] = text[digit] == '1' ? '2' : '1';
  const CalibrateCsvScan s = scan_calibrate_csv(text);
  EXPECT_EQ(s.cases.size(), 1u);
  EXPECT_NE(s.why.find("does not match"), std::string::npos) << s.why;
  std::ofstream(csv, std::ios::binary) << text;
  try {
    read_measurements(csv.string());
    FAIL();
  } catch (const config::ConfigError& e) {
    // Names the first line of the block the marker no longer vouches for.
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + row, '\n'));
    EXPECT_NE(std::string(e.what()).find("changed.csv:" + std::to_string(line) + ":1:"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(CalibrateKill, AMislabelledOrTwiceMarkedCaseIsAnError) {
  // Rows labelled with another case than their marker's (re-marked so the checksum holds).
  const std::string header =
      "gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes,chunks,"
      "time_us,time_min_us,time_max_us,tflops,algbw_GBps,busbw_GBps,"
      "wrong,ctas,case\n";
  const std::string row =
      "NVIDIA H200,580,13.0,2.28.3,2,allreduce,nccl,bf16,0,0,0,1024,1,"
      "10.5,10,11,0,0,0,0,0,";
  const auto block = [&](const std::string& first, const std::string& label,
                         const std::string& key) {
    const std::string rows = first + row + label + "\n";
    return rows + format_case_marker(rows, 1, key);
  };
  const std::string sig = std::string(kCalibrateCsvSignature) + "\n";
  const fs::path csv = root_ / "bad.csv";
  std::ofstream(csv, std::ios::binary) << sig + block(header, "a", "b");
  try {
    read_measurements(csv.string());
    FAIL();
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv:3:"), std::string::npos) << e.what();
  }
  std::ofstream(csv, std::ios::binary) << sig + block(header, "a", "a") + block("", "a", "a");
  try {
    read_measurements(csv.string());
    FAIL();
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("marked finished twice"), std::string::npos) << e.what();
  }
  // The same rows, once and labelled right, read as one measurement on line 3.
  std::ofstream(csv, std::ios::binary) << sig + block(header, "a", "a");
  const auto rows = read_measurements(csv.string());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].line, 3);
  EXPECT_EQ(rows[0].case_key, "a");
}

TEST_F(CalibrateKill, AnUnmarkedCalibrateCsvIsNotResumed) {
  // An older calibrate's file: a `case` column, no markers. Readers take it as it is.
  const fs::path out = root_ / "old";
  fs::create_directories(out);
  std::ofstream(out / "calibration.csv")
      << "gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes,chunks,time_us,time_min_us,"
         "time_max_us,tflops,algbw_GBps,busbw_GBps,wrong,ctas,case\n"
         "NVIDIA H200,580,13.0,2.28.3,2,allreduce,nccl,bf16,0,0,0,1024,1,10.5,10,11,0,0,0,0,0,a\n";
  EXPECT_EQ(read_measurements((out / "calibration.csv").string()).size(), 1u);
  try {
    run_calibration(options(out));
    FAIL();
  } catch (const CalibrateUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("without completion markers"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace overlapsim::calibration
