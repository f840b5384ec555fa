#pragma once
// Each subcommand registers itself on the CLI11 app and, when chosen, stores the
// function main() runs after parsing. Runners return the process exit code; user
// errors are thrown as config::ConfigError and main() turns them into one line on stderr
// and exit code 2; any other exception is an internal error (exit code 1).
#include <functional>

#include <CLI/CLI.hpp>

namespace overlapsim::app {

using Runner = std::function<int()>;

void add_collective_command(CLI::App& app, Runner& selected);
void add_simulate_command(CLI::App& app, Runner& selected);
void add_calibrate_command(CLI::App& app, Runner& selected);
void add_fit_command(CLI::App& app, Runner& selected);
void add_fit_shaped_command(CLI::App& app, Runner& selected);
void add_validate_command(CLI::App& app, Runner& selected);
void add_validate_steps_command(CLI::App& app, Runner& selected);
void add_validate_collectives_command(CLI::App& app, Runner& selected);
void add_plan_command(CLI::App& app, Runner& selected);
void add_redistribute_command(CLI::App& app, Runner& selected);

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;   // internal error
inline constexpr int kExitBadInput = 2;  // bad file, key, value or flag

}  // namespace overlapsim::app
