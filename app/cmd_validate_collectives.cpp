// `overlapsim validate-collectives`: under construction.
#include "app/commands.hpp"
#include "config/error.hpp"

namespace overlapsim::app {

void add_validate_collectives_command(CLI::App& app, Runner& selected) {
  auto* sub = app.add_subcommand("validate-collectives", "not built yet");
  sub->callback([&selected] {
    selected = [] () -> int { throw config::ConfigError("validate-collectives: not built yet"); };
  });
}

}  // namespace overlapsim::app
