// register_train: the root app's training options (model shape, data, schedule via AutoFlags) and
// the root callback that runs train_single when no subcommand is given.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>

#include "runtime/cli/commands.h"
#include "runtime/common/diagnostics.h"
#include "runtime/config/auto_flags.h"
#include "runtime/train/train_single.h"

namespace zt {

namespace {

struct TrainFlags {
  AutoFlags autos;
  std::string model = "small";
  std::optional<int> layers, heads, dim, vocab, seq_len;
  bool untied = false;
  TrainOptions opts;
};

std::string preset_list() {
  std::string s;
  for (const auto& n : model_preset_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

TrainOptions resolve(const TrainFlags& f) {
  TrainOptions o = f.opts;
  auto preset = model_preset(f.model);
  if (!preset) throw UserError("--model", f.model, "unknown model preset", "use one of: " + preset_list());
  o.model = *preset;
  if (f.layers) o.model.layers = *f.layers;
  if (f.heads) o.model.heads = *f.heads;
  if (f.dim) o.model.dim = *f.dim;
  if (f.vocab) o.model.vocab = *f.vocab;
  if (f.seq_len) o.model.seq_len = *f.seq_len;
  if (f.layers || f.heads || f.dim || f.vocab || f.seq_len) o.model.name = f.model + "+custom";
  if (f.untied) o.model.tied_embeddings = false;
  const AutoFlags& a = f.autos;
  if (a.micro_batch) o.micro_batch = int(*a.micro_batch);
  if (a.grad_accum) o.grad_accum = int(*a.grad_accum);
  if (a.lr) o.lr = *a.lr;
  if (a.weight_decay) o.weight_decay = *a.weight_decay;
  if (a.adam_beta1) o.beta1 = *a.adam_beta1;
  if (a.adam_beta2) o.beta2 = *a.adam_beta2;
  if (a.adam_eps) o.eps = *a.adam_eps;
  if (a.max_grad_norm) o.max_grad_norm = *a.max_grad_norm;
  if (a.warmup_steps) o.warmup_steps = *a.warmup_steps;
  if (a.steps) o.steps = *a.steps;
  return o;
}

}  // namespace

void register_train(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<TrainFlags>();
  add_auto_flags(app, f->autos);
  app.add_option("--model", f->model, "Model preset: " + preset_list())->capture_default_str();
  app.add_option("--layers", f->layers, "Override the preset's number of blocks");
  app.add_option("--heads", f->heads, "Override the preset's attention heads");
  app.add_option("--dim", f->dim, "Override the preset's width (divisible by --heads)");
  app.add_option("--vocab", f->vocab, "Override the preset's vocabulary size");
  app.add_option("--seq-len", f->seq_len, "Override the preset's context length");
  app.add_flag("--untied-embeddings", f->untied, "Give the LM head its own matrix instead of reusing wte");
  app.add_option("--seed", f->opts.seed, "Seed for initialisation, built-in data and sample order")
      ->capture_default_str();
  app.add_option("--data", f->opts.data_dir, "Directory with train.bin/val.bin (default: built-in language)");
  app.add_option("--eval-every", f->opts.eval_every, "Validation loss every K steps (0: only at the end)")
      ->capture_default_str();
  app.add_option("--eval-batches", f->opts.eval_batches, "Micro-batches per validation")->capture_default_str();
  app.add_flag("--checkpoint-activations", f->opts.checkpoint_activations,
               "Recompute each block's forward in backward instead of keeping its activations");
  app.add_option("--threads", f->opts.threads, "CPU threads (default: OpenMP's)");
  app.callback([&app, f, &exit_code] {
    if (!app.get_subcommands().empty()) return;  // a subcommand ran instead
    train_single(resolve(*f));
    exit_code = 0;
  });
}

}  // namespace zt
