// zerotrain's sub-commands, each defined in its own file beside this one: register_* adds it to the
// CLI11 app (register_train: the root command's training options), and its callback sets
// exit_code (0 ok, kUserErrorExit for bad input).
#pragma once

#include "collectives/bootstrap.h"

namespace CLI {
class App;
}

namespace zt {

// The commands that are one process's work (check, env, prepare, sample): under a launcher
// (mpirun -np N) launcher rank 0 runs them and every other rank returns 0 at once, so a report is
// printed once and files are written by one process.
inline bool leaves_it_to_rank0() { return Bootstrap::launcher_world_size() > 1 && Bootstrap::launcher_rank() != 0; }

void register_train(CLI::App& app, int& exit_code);               // train_command.cpp: the root command
void register_eval_command(CLI::App& app, int& exit_code);        // train_command.cpp: loss over a split
void register_check_command(CLI::App& app, int& exit_code);       // check_command.cpp: config and plan
void register_env_command(CLI::App& app, int& exit_code);         // env_command.cpp: the ds_report of zerotrain
void register_prepare_command(CLI::App& app, int& exit_code);     // prepare_command.cpp: text -> .bin shards
void register_sample_command(CLI::App& app, int& exit_code);      // sample_command.cpp: generate from weights
void register_export_command(CLI::App& app, int& exit_code);      // checkpoint_commands.cpp: whole weights
void register_checkpoint_command(CLI::App& app, int& exit_code);  // checkpoint_commands.cpp: checkpoint info
void register_tune_command(CLI::App& app, int& exit_code);        // tune_command.cpp: the autotuner

}  // namespace zt
