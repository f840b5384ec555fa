#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include "app/commands.hpp"
#include "config/error.hpp"
#include "config/text.hpp"

int main(int argc, char** argv) {
  using namespace overlapsim::app;
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
