// `overlapsim validate-steps`: under construction.
#include "app/commands.hpp"
#include "config/error.hpp"

namespace overlapsim::app {

void add_validate_steps_command(CLI::App& app, Runner& selected) {
  auto* sub = app.add_subcommand("validate-steps", "not built yet");
  sub->callback([&selected] {
    selected = [] () -> int { throw config::ConfigError("validate-steps: not built yet"); };
  });
}

}  // namespace overlapsim::app
