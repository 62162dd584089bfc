// The zerotrain subcommands: each module registers its own on the CLI11 app, and sets exit_code
// from its callback (0 ok, kUserErrorExit for bad input).
#pragma once

namespace CLI {
class App;
}

namespace zt {

void register_check_command(CLI::App& app, int& exit_code);    // runtime/config: validate a ds_config
void register_env_command(CLI::App& app, int& exit_code);      // runtime/plan: the ds_report of zerotrain
void register_prepare_command(CLI::App& app, int& exit_code);  // runtime/data: text -> .bin shards
void register_train(CLI::App& app, int& exit_code);            // runtime/train: options of the root app
void register_export_command(CLI::App& app, int& exit_code);     // runtime/cli: checkpoint -> consolidated weights
void register_checkpoint_command(CLI::App& app, int& exit_code); // runtime/cli: checkpoint info
void register_sample_command(CLI::App& app, int& exit_code);     // runtime/train: generate from weights
void register_eval_command(CLI::App& app, int& exit_code);       // runtime/train: loss over a whole split

}  // namespace zt
