// register_train: the root app's training options (config, model shape, data, backend, metrics;
// the "auto" flags) and the root callback that runs the ZeRO engine when no subcommand is given.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <stdexcept>

#include "collectives/factory.h"
#include "kernels/cpu/cpu_threads.h"
#include "runtime/cli/commands.h"
#include "runtime/common/diagnostics.h"
#include "runtime/data/synthetic.h"
#include "runtime/plan/gpu_memory.h"
#include "runtime/config/report.h"
#include "runtime/plan/env_report.h"
#include "runtime/train/job_report.h"
#include "runtime/train/training_run.h"

namespace zt {

namespace {

struct TrainFlags {
  RunOptions run;
  std::string model = "small";
  std::optional<int> layers, heads, dim, vocab, seq_len;
  bool untied = false;
  std::string backend = "auto";
  std::string comm = "auto";
  int threads = 0;
};

std::string preset_list() {
  std::string s;
  for (const auto& n : model_preset_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

ModelConfig resolve_model(const TrainFlags& f) {
  auto preset = model_preset(f.model);
  if (!preset) throw UserError("--model", f.model, "unknown model preset", "use one of: " + preset_list());
  ModelConfig m = *preset;
  if (f.layers) m.layers = *f.layers;
  if (f.heads) m.heads = *f.heads;
  if (f.dim) m.dim = *f.dim;
  if (f.vocab) m.vocab = *f.vocab;
  if (f.seq_len) m.seq_len = *f.seq_len;
  if (f.layers || f.heads || f.dim || f.vocab || f.seq_len) m.name = f.model + "+custom";
  if (f.untied) m.tied_embeddings = false;
  return m;
}

// --backend auto: CUDA when this build has it and a GPU is visible, else the CPU; says which and why.
std::string resolve_backend(const std::string& asked, std::string& why) {
  if (asked != "auto") return asked;
  if (!cuda_backend_compiled()) {
    why = "this zerotrain was built without CUDA";
    return "cpu";
  }
  if (!query_gpu_memory()) {
    why = "no GPU is visible to this process";
    return "cpu";
  }
  why = "a GPU is visible and this build has CUDA";
  return "cuda";
}

// The command line's own checks, before MPI starts: every rank of the job finds the same problem, so
// launcher rank 0 alone reports it.
void check_command_line(TrainFlags& f) {
  try {
    if (f.backend != "cpu" && f.backend != "cuda" && f.backend != "auto")
      throw UserError("--backend", f.backend, "unknown backend", "use --backend auto, cpu or cuda");
    f.run.model = resolve_model(f);
  } catch (const UserError&) {
    const FailureText f = describe_failure(std::current_exception());
    if (Bootstrap::launcher_rank() == 0) write_all(stderr, f.text);
    throw ReportedError(f.exit_code);
  }
}

int run(TrainFlags& f) {
  check_command_line(f);
  Bootstrap boot;  // MPI when launched by mpirun; otherwise a world of one
  // A preset's vocabulary below the built-in data's (tiny's 61 < 256) grows to it unless --vocab
  // chose one: every preset runs on the built-in data as it is.
  const int data_vocab = make_synthetic_dataset(f.run.seed, 1, 1).vocab;
  const bool builtin_data = f.run.data_dir.empty() && f.run.data_train.empty() && f.run.data_val.empty();
  if (builtin_data && !f.vocab && f.run.model.vocab < data_vocab) {
    if (boot.rank() == 0)
      std::printf("zerotrain: --model %s: vocab %d raised to the built-in data's %d (pass --vocab to choose)\n",
                  f.model.c_str(), f.run.model.vocab, data_vocab);
    f.run.model.vocab = data_vocab;
  }
  std::string why;
  const std::string asked = f.backend;
  f.backend = resolve_backend(asked, why);
  if (asked == "auto" && boot.rank() == 0) std::printf("zerotrain: --backend auto: %s (%s)\n", f.backend.c_str(), why.c_str());
  f.run.local_ranks = boot.local_size();
  // With N ranks on a host of C cores each rank uses C/N threads unless told otherwise.
  set_cpu_threads(f.threads > 0 ? f.threads : std::max(1, cpu_threads() / boot.local_size()));
  // --comm mpi on a GPU: MPI through pinned host buffers, so several ranks may share a GPU (local
  // rank modulo the visible GPUs); NCCL (the default there) needs one GPU per rank.
  const bool cuda = f.backend == "cuda", staged = cuda && f.comm == "mpi";
  if (f.comm == "nccl" && !cuda)
    throw UserError("--comm", f.comm, "NCCL works on GPU memory only", "use --comm mpi with --backend cpu");
  int device = boot.local_rank();
#if ZT_HAVE_CUDA
  if (staged) {
    EnvReport gpus;
    query_cuda_env(gpus);
    if (!gpus.gpus.empty()) device %= int(gpus.gpus.size());
  }
#endif
  std::unique_ptr<Backend> backend;
  try {
    backend = cuda ? make_cuda_backend(device) : make_cpu_backend();
  } catch (const std::runtime_error& e) {
    throw UserError("--backend", f.backend, e.what(), "use --backend cpu on a machine without a usable GPU");
  }
  const CommBackend choice = staged ? CommBackend::MpiHostStaged
                             : f.comm == "mpi" ? CommBackend::Mpi
                             : cuda ? CommBackend::Nccl
                                    : CommBackend::Auto;
  std::unique_ptr<Communicator> comm;
  try {
    comm = make_communicator(boot, choice, CommOptions::from_env(), backend.get());
  } catch (const std::exception& e) {
    if (f.comm == "auto") throw;
    throw UserError("--comm", f.comm, e.what(), "launch with mpirun, or leave --comm at auto");
  }
  return run_training(f.run, *comm, *backend).exit_code();
}

}  // namespace

void register_train(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<TrainFlags>();
  add_auto_flags(app, f->run.flags);
  app.add_option("--config", f->run.config_path, "DeepSpeed-style ds_config.json (default: built-in, all \"auto\")");
  app.add_flag("--allow-unknown-keys", f->run.allow_unknown_keys, "Unknown config keys are warnings, not errors");
  app.add_option("--model", f->model, "Model preset: " + preset_list())->capture_default_str();
  app.add_option("--layers", f->layers, "Override the preset's number of blocks");
  app.add_option("--heads", f->heads, "Override the preset's attention heads");
  app.add_option("--dim", f->dim, "Override the preset's width (divisible by --heads)");
  app.add_option("--vocab", f->vocab, "Override the preset's vocabulary size");
  app.add_option("--seq-len", f->seq_len, "Override the preset's context length");
  app.add_flag("--untied-embeddings", f->untied, "Give the LM head its own matrix instead of reusing wte");
  app.add_option("--seed", f->run.seed, "Seed for initialisation, built-in data and sample order")->capture_default_str();
  app.add_option("--data", f->run.data_dir,
                 "Folder of .bin token shards: *train*.bin and *val*.bin in name order, uint16 or uint32 "
                 "(default: built-in language)");
  app.add_option("--data-train", f->run.data_train, "Train shards by glob, e.g. 'fineweb/*_train_*.bin' (with --data-val)");
  app.add_option("--data-val", f->run.data_val, "Validation shards by glob (with --data-train)");
  app.add_option("--eval-every", f->run.eval_every, "Validation loss every K steps (0: only at the end)")
      ->capture_default_str();
  app.add_option("--eval-batches", f->run.eval_batches, "Micro-batches per rank per validation")->capture_default_str();
  app.add_flag("--recompute,--checkpoint-activations", f->run.recompute,
               "Activation checkpointing: recompute each block's forward in backward");
  app.add_option("--metrics", f->run.metrics_path, "Write JSON lines (start, one per step, end) here (rank 0)");
  app.add_option("--trace", f->run.trace_path,
                 "Write rank 0's timeline (compute per unit, collectives) as Chrome trace events here");
  app.add_option("--backend", f->backend,
                 "auto (cuda when a GPU is visible and the build has CUDA, else cpu), cpu (fp32/bf16/fp16, MPI) or cuda "
                 "(bf16, NCCL, one GPU per rank)")
      ->capture_default_str();
  app.add_option("--comm", f->comm,
                 "Collectives: auto (NCCL on cuda, MPI on cpu when launched by mpirun), mpi (on cuda: through "
                 "pinned host buffers, several ranks may share one GPU), nccl")
      ->check(CLI::IsMember({"auto", "mpi", "nccl"}))
      ->capture_default_str();
  app.add_option("--threads", f->threads, "CPU threads per rank (default: cores / ranks on this host)");
  auto& ck = f->run.checkpoint;
  app.add_option("--save", ck.save_dir,
                 "Save checkpoints into DIR (DIR/global_stepN, DIR/latest): at the end, every --save-every steps and "
                 "on SIGTERM/SIGINT");
  app.add_option("--save-every", ck.save_every, "Also save after every N steps (needs --save; 0: at the end only)")
      ->capture_default_str();
  app.add_option("--load", ck.load_dir, "Resume from the checkpoint DIR/latest names (or DIR/TAG, or a tag folder)");
  app.add_option("--load-tag", ck.load_tag, "Resume from DIR/TAG instead of the one `latest` names (needs --load)");
  app.add_option("--init-from", ck.init_from,
                 "Start from these weights: Hugging Face GPT-2 safetensors, `zerotrain export` output, or a zerotrain "
                 "checkpoint DIR[/TAG] (its fp32 master; optimizer state fresh, step 0; not with --load)");
  app.callback([&app, f, &exit_code] {
    if (!app.get_subcommands().empty()) return;  // a subcommand ran instead
    exit_code = run(*f);
  });
}

}  // namespace zt
