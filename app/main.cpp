#include <cstdio>
#include <exception>

#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#include <unistd.h>
#endif

#include <fmt/format.h>

#include "app/commands.hpp"
#include "config/error.hpp"
#include "config/text.hpp"

namespace {

// A simulation allocates and frees step-sized blocks (a rank's op states, its interval
// lists, the flow network's tables) once per design run. With glibc's defaults the larger
// ones are mmap'ed and the heap top is trimmed on free, so every run pays the kernel for
// zeroed pages again: in a 16-node GPT-3 plan point about a sixth of the CPU time went to
// page faults. Keeping freed memory in the heap lets the next run reuse it; what the
// simulation computes does not change.
void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 1 << 30);  // bytes: blocks below it come from the heap
  mallopt(M_TRIM_THRESHOLD, 1 << 30);  // bytes of free heap top kept before trimming
#endif
}

// A step graph and the executor's state are hundreds of MiB touched once each: on 4 KiB
// pages most of a run's system time is page faults (115,000 in a 64-node GPT-3 plan
// point). glibc backs its heap with transparent huge pages when the tunable
// glibc.malloc.hugetlb=1 is set, which it reads only at start-up: so the program runs
// itself again once with it (1,300 faults then). GLIBC_TUNABLES naming the tunable
// already (hugetlb=0 turns it off) skips this, as does an exec that fails.
// The second start puts the caller's GLIBC_TUNABLES back (kept in kTunablesWas: "-" for
// unset, "+" and the value otherwise), so that programs it starts (calibrate's benchmarks)
// see the environment they were given.
constexpr const char* kTunablesWas = "OVERLAPSIM_GLIBC_TUNABLES_WAS";

void use_huge_page_heap(char** argv) {
#if defined(__GLIBC__) && defined(__linux__) && !defined(__SANITIZE_ADDRESS__)
  if (const char* was = std::getenv(kTunablesWas)) {
    if (was[0] == '+')
      setenv("GLIBC_TUNABLES", was + 1, 1);
    else
      unsetenv("GLIBC_TUNABLES");
    unsetenv(kTunablesWas);
    return;
  }
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.hugetlb") != nullptr) return;
  std::string value = "glibc.malloc.hugetlb=1";
  if (tunables != nullptr && *tunables != '\0') value = std::string(tunables) + ":" + value;
  const std::string was = tunables != nullptr ? "+" + std::string(tunables) : "-";
  if (setenv(kTunablesWas, was.c_str(), 1) != 0) return;
  if (setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // The exec failed: run on as we are, with the environment as it came.
  if (tunables != nullptr)
    setenv("GLIBC_TUNABLES", was.c_str() + 1, 1);
  else
    unsetenv("GLIBC_TUNABLES");
  unsetenv(kTunablesWas);
#else
  (void)argv;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  using namespace overlapsim::app;
  use_huge_page_heap(argv);
  keep_freed_memory();
  CLI::App app{"overlapsim: training step times under communication/computation overlap designs"};
  app.require_subcommand(0, 1);
  Runner selected;
  add_collective_command(app, selected);
  add_simulate_command(app, selected);
  add_calibrate_command(app, selected);
  add_fit_command(app, selected);
  add_validate_command(app, selected);
  add_validate_steps_command(app, selected);
  add_validate_collectives_command(app, selected);
  add_plan_command(app, selected);
  add_redistribute_command(app, selected);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --version and the like
    // One line, like every other bad input (CLI11's own print adds a second).
    fmt::print(stderr, "error: {}\n", overlapsim::config::printable(e.what()));
    return kExitBadInput;
  }
  try {
    if (!selected) {
      // No subcommand: the default demo run, as `overlapsim simulate` with no flags.
      CLI::App demo;
      Runner sim;
      add_simulate_command(demo, sim);
      const char* args[] = {"overlapsim", "simulate"};
      demo.parse(2, const_cast<char**>(args));
      selected = sim;
    }
    return selected ? selected() : kExitFailure;
  } catch (const overlapsim::config::ConfigError& e) {
    // The one kind of user error: a file, key, flag or value, and what was expected.
    // User text inside (a name, a path) is escaped: one line, no terminal control codes.
    fmt::print(stderr, "error: {}\n", overlapsim::config::printable(e.what()));
    return kExitBadInput;
  } catch (const std::exception& e) {
    // Anything else is a broken invariant of ours, never the user's input.
    fmt::print(stderr, "internal error: {}\n", overlapsim::config::printable(e.what()));
    return kExitFailure;
  }
}
