#include <cstdio>
#include <exception>

#if defined(__GLIBC__)
#include <malloc.h>
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

}  // namespace

int main(int argc, char** argv) {
  using namespace overlapsim::app;
  keep_freed_memory();
  CLI::App app{"overlapsim: training step times under communication/computation overlap designs"};
  app.require_subcommand(0, 1);
  Runner selected;
  add_collective_command(app, selected);
  add_simulate_command(app, selected);
  add_calibrate_command(app, selected);
  add_fit_command(app, selected);
  add_fit_shaped_command(app, selected);
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
