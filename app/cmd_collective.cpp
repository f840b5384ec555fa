#include "app/commands.hpp"
namespace overlapsim::app {
void add_collective_command(CLI::App& app, Runner&) { app.add_subcommand("collective", "simulate one collective"); }
}
