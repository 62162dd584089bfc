// `zerotrain export` (consolidated weights from a checkpoint, zerotrain or Hugging Face layout) and
// `zerotrain checkpoint info` (the manifest in words, every rank file verified).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "runtime/checkpoint/export.h"
#include "runtime/checkpoint/info.h"
#include "runtime/cli/subcommands.h"
#include "runtime/common/diagnostics.h"

namespace zt {

void register_export_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("export", "Write a checkpoint's consolidated weights as one safetensors file "
                                           "(what DeepSpeed's zero_to_fp32.py gives), streamed unit by unit");
  auto o = std::make_shared<ckpt::ExportOptions>();
  cmd->add_option("--checkpoint", o->checkpoint, "Save directory (uses its `latest`) or DIR/TAG")->required();
  cmd->add_option("--tag", o->tag, "A tag inside the save directory instead of `latest`");
  cmd->add_option("--out", o->out, "Output file (--format zerotrain) or folder for model.safetensors + config.json (hf)")
      ->required();
  cmd->add_option("--dtype", o->dtype, "Element type of the weights")->check(CLI::IsMember({"fp32", "bf16"}))->capture_default_str();
  cmd->add_option("--format", o->format, "zerotrain: our tensor names; hf: Hugging Face GPT2LMHeadModel names and layout")
      ->check(CLI::IsMember({"zerotrain", "hf"}))
      ->capture_default_str();
  cmd->add_flag("!--no-verify", o->verify, "Skip the block checksums while reading");
  cmd->callback([o, &exit_code] {
    const auto r = ckpt::export_weights(*o);
    std::printf("export: %s -> %s: %lld tensors, %lld parameters, %s, %.1f MiB written (largest buffer %.1f MiB)\n",
                r.tag_dir.c_str(), r.files.front().c_str(), (long long)r.tensors, (long long)r.params, o->dtype.c_str(),
                double(r.bytes_written) / double(1 << 20), double(r.peak_buffer_bytes) / double(1 << 20));
    for (size_t i = 1; i < r.files.size(); ++i) std::printf("export: %s\n", r.files[i].c_str());
    exit_code = 0;
  });
}

void register_checkpoint_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("checkpoint", "Inspect checkpoints");
  cmd->require_subcommand(1);
  auto* info = cmd->add_subcommand("info", "The manifest in words and a checksum verification of every rank file");
  struct Opts {
    std::string dir, tag;
    bool verify = true;
  };
  auto o = std::make_shared<Opts>();
  info->add_option("dir", o->dir, "Save directory (its `latest` and the list of tags) or DIR/TAG")->required();
  info->add_option("--tag", o->tag, "A tag inside the save directory instead of `latest`");
  info->add_flag("!--no-verify", o->verify, "Describe only: do not read and hash the rank files");
  info->callback([o, &exit_code] {
    const auto r = ckpt::checkpoint_info(o->dir, o->tag, o->verify);
    std::fputs(r.text.c_str(), stdout);
    if (r.problems.has_errors()) throw UserError(r.problems);
    exit_code = 0;
  });
}

}  // namespace zt
