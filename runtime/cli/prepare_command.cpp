// `zerotrain prepare`: the sub-command over runtime/data's prepare_text.
#include "runtime/cli/subcommands.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "runtime/data/prepare.h"

namespace zt {

void register_prepare_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("prepare", "Turn a text file into byte-level (vocab 256) train.bin/val.bin shards");
  struct Opts {
    std::string text, out;
    double val_fraction = 0.1;
  };
  auto opts = std::make_shared<Opts>();
  cmd->add_option("--text", opts->text, "Input text file (any bytes)")->required();
  cmd->add_option("--out", opts->out, "Output directory for train.bin and val.bin")->required();
  cmd->add_option("--val-fraction", opts->val_fraction, "Fraction of the file, from its end, used for validation")
      ->capture_default_str();
  cmd->callback([opts, &exit_code] {
    exit_code = 0;
    if (leaves_it_to_rank0()) return;
    const auto r = prepare_text(opts->text, opts->out, opts->val_fraction);
    std::printf("prepare: %s -> %s/train.bin (%lld tokens), %s/val.bin (%lld tokens), vocab 256 (bytes)\n",
                opts->text.c_str(), opts->out.c_str(), (long long)r.train_tokens, opts->out.c_str(),
                (long long)r.val_tokens);
    exit_code = 0;
  });
}

}  // namespace zt
