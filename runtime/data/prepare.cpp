// prepare_text and the `zerotrain prepare` subcommand registration.
#include "runtime/data/prepare.h"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "runtime/cli/commands.h"
#include "runtime/common/diagnostics.h"
#include "runtime/data/token_shard.h"

namespace zt {

PrepareResult prepare_text(const std::string& text_path, const std::string& out_dir, double val_fraction) {
  if (!(val_fraction > 0.0 && val_fraction < 1.0))
    throw UserError("--val-fraction", std::to_string(val_fraction), "must be between 0 and 1 (exclusive)",
                    "use e.g. 0.1 for the last 10% as validation");
  const File in = open_regular_file(text_path, "--text input", "check the --text path");
  std::vector<char> bytes;
  char chunk[1 << 16];
  for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, in.get())) > 0;) bytes.insert(bytes.end(), chunk, chunk + n);
  if (std::ferror(in.get()))
    throw UserError(text_path, "", std::string("cannot read text file: ") + std::strerror(errno), "check the --text path");
  if (bytes.size() < 4)
    throw UserError(text_path, std::to_string(bytes.size()) + " bytes",
                    "text file too small to split into train and validation shards",
                    "use a text file of at least a few kilobytes");
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec)
    throw UserError(out_dir, "", "cannot create output directory: " + ec.message(),
                    "choose a writable --out directory");
  size_t n_val = size_t(double(bytes.size()) * val_fraction);
  n_val = std::max<size_t>(n_val, 2);
  const size_t n_train = bytes.size() - n_val;
  std::vector<uint16_t> train(n_train), val(n_val);
  for (size_t i = 0; i < n_train; ++i) train[i] = uint8_t(bytes[i]);
  for (size_t i = 0; i < n_val; ++i) val[i] = uint8_t(bytes[n_train + i]);
  write_token_shard(out_dir + "/train.bin", train);
  write_token_shard(out_dir + "/val.bin", val);
  return {int64_t(n_train), int64_t(n_val)};
}

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
    const auto r = prepare_text(opts->text, opts->out, opts->val_fraction);
    std::printf("prepare: %s -> %s/train.bin (%lld tokens), %s/val.bin (%lld tokens), vocab 256 (bytes)\n",
                opts->text.c_str(), opts->out.c_str(), (long long)r.train_tokens, opts->out.c_str(),
                (long long)r.val_tokens);
    exit_code = 0;
  });
}

}  // namespace zt
