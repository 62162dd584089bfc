// zerotrain's sub-commands, each defined in its own file beside this one: register_* adds it to the
// CLI11 app (register_train: the root command's training options), and its callback sets
// exit_code (0 ok, kUserErrorExit for bad input).
#pragma once

namespace CLI {
class App;
}

namespace zt {

void register_train(CLI::App& app, int& exit_code);               // train_command.cpp: the root command
void register_eval_command(CLI::App& app, int& exit_code);        // train_command.cpp: loss over a split
void register_check_command(CLI::App& app, int& exit_code);       // check_command.cpp: config and plan
void register_env_command(CLI::App& app, int& exit_code);         // env_command.cpp: the ds_report of zerotrain
void register_prepare_command(CLI::App& app, int& exit_code);     // prepare_command.cpp: text -> .bin shards
void register_sample_command(CLI::App& app, int& exit_code);      // sample_command.cpp: generate from weights
void register_export_command(CLI::App& app, int& exit_code);      // checkpoint_commands.cpp: whole weights
void register_checkpoint_command(CLI::App& app, int& exit_code);  // checkpoint_commands.cpp: checkpoint info

}  // namespace zt
