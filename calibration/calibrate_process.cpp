#include "calibration/calibrate_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <stdexcept>

namespace overlapsim::calibration {
namespace {

// The process group of the running call (its leader's pid), 0 when none runs. Read by the
// signal handler, so a lock-free atomic type.
volatile sig_atomic_t g_bench_group = 0;

constexpr std::array<int, 4> kForwarded = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
struct sigaction g_previous[kForwarded.size()];

void kill_group_then_die(int sig) {
  const pid_t group = g_bench_group;
  if (group > 0) kill(-group, SIGKILL);
  // The default action of the signal, now that the call cannot outlive us.
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

BenchSignalGuard::BenchSignalGuard() {
  struct sigaction sa {};
  sa.sa_handler = kill_group_then_die;
  sigemptyset(&sa.sa_mask);
  for (std::size_t i = 0; i < kForwarded.size(); ++i) sigaction(kForwarded[i], &sa, &g_previous[i]);
}

BenchSignalGuard::~BenchSignalGuard() {
  for (std::size_t i = 0; i < kForwarded.size(); ++i)
    sigaction(kForwarded[i], &g_previous[i], nullptr);
}

int run_bench(const std::string& bench, const std::vector<std::string>& args, int ctas,
              const std::string& log, double timeout_s) {
  // Everything the child needs is prepared before fork: after it, only async-signal-safe
  // calls until exec.
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(bench.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string ctas_text = std::to_string(ctas);
  const pid_t parent = getpid();
  // A signal between fork and the group's recording must not find a group unrecorded.
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old);
  const pid_t pid = fork();
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    throw std::runtime_error("calibrate: fork failed");
  }
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // Calibrate died before the prctl: no signal will come, so go now.
    if (getppid() != parent) _exit(126);
    // exec resets the forwarding handlers to their defaults, not the blocked mask.
    sigprocmask(SIG_SETMASK, &old, nullptr);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    if (ctas > 0) setenv("NCCL_MAX_CTAS", ctas_text.c_str(), 1);
    execv(bench.c_str(), argv.data());
    _exit(127);
  }
  // Both sides set the group, so it exists whichever runs first.
  setpgid(pid, pid);
  g_bench_group = pid;
  sigprocmask(SIG_SETMASK, &old, nullptr);

  const auto start = std::chrono::steady_clock::now();
  // Poll fast at first (most calls of a small case end in milliseconds), then every 20 ms.
  // WNOWAIT leaves the leader a zombie, so its pid (the group's id) is not reused before
  // the group is killed.
  useconds_t nap_us = 500;
  bool timed_out = false;
  while (true) {
    siginfo_t info{};
    const int r = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (r < 0 && errno != EINTR) {
      kill(-pid, SIGKILL);
      g_bench_group = 0;
      throw std::runtime_error("calibrate: waiting for overlap-bench failed");
    }
    if (r == 0 && info.si_pid == pid) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
        timeout_s) {
      timed_out = true;
      break;
    }
    usleep(nap_us);
    nap_us = std::min<useconds_t>(nap_us * 2, 20000);
  }
  // Whatever the call left running in its group (helpers it started) goes with it.
  kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_bench_group = 0;
  if (timed_out) return 124;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace overlapsim::calibration
