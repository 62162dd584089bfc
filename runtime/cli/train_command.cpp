// register_train: the root app's training options (config, model shape, data, backend, metrics;
// the "auto" flags) and the root callback that runs the ZeRO engine when no subcommand is given.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <memory>
#include <optional>
#include <stdexcept>

#include "collectives/factory.h"
#include "kernels/cpu/cpu_threads.h"
#include "runtime/cli/subcommands.h"
#include "runtime/checkpoint/checkpoint_load.h"
#include "runtime/checkpoint/file_io.h"
#include "runtime/checkpoint/hf_llama.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/common/diagnostics.h"
#include "runtime/data/synthetic.h"
#include "runtime/plan/gpu_memory.h"
#include "runtime/config/report.h"
#include "runtime/plan/env_report.h"
#include "runtime/train/backend_choice.h"
#include "runtime/train/job_report.h"
#include "runtime/train/model_flags.h"
#include "runtime/train/training_run.h"

namespace zt {

namespace {

struct TrainFlags {
  RunOptions run;
  ModelFlags model;
  std::optional<ModelConfig> recorded_model;  // zerotrain eval: the checkpoint's, instead of the flags'
  const CLI::App* app = nullptr;              // the command line, to tell which model flags it gave
  bool model_from_weights = false;            // the shape came from --init-from's config.json
  std::string backend = "auto";
  std::string comm = "auto";
  int threads = 0;
  int ranks_per_node = 0;  // --ranks-per-node; 0: ZT_RANKS_PER_NODE, else MPI's shared-memory split
};

// --ranks-per-node, else ZT_RANKS_PER_NODE, checked against the launcher's world size W: a divisor
// of W, or 0 when neither is given (the run then takes MPI's shared-memory split).
int resolve_ranks_per_node(int flag, int W) {
  std::string where = "--ranks-per-node", text = std::to_string(flag);
  int n = flag;
  if (n == 0) {
    const char* env = std::getenv("ZT_RANKS_PER_NODE");
    if (!env || !*env) return 0;
    where = "ZT_RANKS_PER_NODE";
    text = env;
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    n = (*end == '\0' && v > 0 && (W < 1 || v <= W)) ? int(v) : -1;
  }
  // W < 1: the launcher did not say (ranks_per_node_of_job checks it against MPI's world).
  if (n < 1 || (W >= 1 && W % n != 0))
    throw UserError(where, text, "ranks per node must be a whole number of at least 1 that divides the world size " +
                                     std::to_string(W),
                    "give a divisor of " + std::to_string(W) + ", e.g. " + where + (where[0] == '-' ? " " : "=") +
                        std::to_string(W));
  return n;
}

// The job's ranks per node, the same on every rank: the flag (checked again against MPI's world,
// which a launcher may not have told the command line), else rank 0's shared-memory split, which
// every rank takes (hosts with different rank counts would disagree); one that does not divide the
// world stands for one node, said once.
int ranks_per_node_of_job(int flag, const Bootstrap& boot) {
  const int W = boot.world_size();
  // Ranks placed round-robin (mpirun --map-by node): node = rank / n would name the wrong ranks as
  // neighbours, and hpZ's and MiCS's groups and the two-level collectives would cross the hosts they
  // claim to stay inside, whatever --ranks-per-node says.
  if (!boot.hosts_hold_consecutive_ranks()) {
    if (boot.rank() == 0)
      write_all(stderr, "error: the launcher placed the ranks on " + std::to_string(boot.node_count()) +
                            " hosts round-robin, not node by node (each host's ranks consecutive: 0.." +
                            std::to_string(boot.local_size() - 1) + " on the first, and so on), which zerotrain's "
                            "node layout needs. Fix: launch with --map-by slot (Open MPI's default with a hostfile)\n");
    throw ReportedError(kUserErrorExit);
  }
  if (flag > 0) {
    if (W % flag == 0) return flag;
    if (boot.rank() == 0)
      write_all(stderr, "error: --ranks-per-node = " + std::to_string(flag) +
                            ": ranks per node must be a whole number of at least 1 that divides the world size " +
                            std::to_string(W) + ". Fix: give a divisor of " + std::to_string(W) + "\n");
    throw ReportedError(kUserErrorExit);
  }
  int n = boot.local_size();
  boot.broadcast_bytes(&n, sizeof n, 0);
  if (n >= 1 && W % n == 0) return n;
  if (boot.rank() == 0)
    std::printf("zerotrain: rank 0's host holds %d of %d ranks, which does not divide the world: the bytes per link "
                "class count one node (pass --ranks-per-node)\n", n, W);
  return W;
}

// The command line's own checks, before MPI starts: every rank of the job finds the same problem, so
// launcher rank 0 alone reports it.
void check_command_line(TrainFlags& f) {
  try {
    std::string unused;
    resolve_backend(f.backend, unused);  // an unknown name
    // --init-from Hugging Face Llama weights: their config.json gives the shape --model leaves out.
    const auto described = f.recorded_model || !f.app ? std::nullopt : ckpt::hf_llama_config_at(f.run.checkpoint.init_from);
    f.model_from_weights = described.has_value();
    if (described)
      f.run.model = resolve_model(f.model, *f.app, *described,
                                  ckpt::join_path(ckpt::hf_weights_dir(f.run.checkpoint.init_from), "config.json"));
    else
      f.run.model = f.recorded_model ? *f.recorded_model : resolve_model(f.model);
    f.ranks_per_node = resolve_ranks_per_node(f.ranks_per_node, Bootstrap::launcher_world_size());
  } catch (const UserError&) {
    const FailureText f = describe_failure(std::current_exception());
    if (Bootstrap::launcher_rank() == 0) write_all(stderr, f.text);
    throw ReportedError(f.exit_code);
  }
}

void add_ranks_per_node_flag(CLI::App& app, TrainFlags& f) {
  app.add_option("--ranks-per-node", f.ranks_per_node,
                 "Ranks per node n: ranks 0..n-1 are the first node, and so on; every collective's bytes are split into "
                 "intra- and inter-node links with it (default: ZT_RANKS_PER_NODE, else the ranks MPI finds sharing "
                 "this host's memory). On one machine, -np 8 --ranks-per-node 4 stands for two nodes");
}

int run(TrainFlags& f) {
  check_command_line(f);
  Bootstrap boot;  // MPI when launched by mpirun; otherwise a world of one
  // A preset's vocabulary below the built-in data's (tiny's 61 < 256) grows to it unless --vocab
  // chose one: every preset runs on the built-in data as it is.
  const int data_vocab = make_synthetic_dataset(f.run.seed, 1, 1).vocab;
  const bool builtin_data = f.run.data_dir.empty() && f.run.data_train.empty() && f.run.data_val.empty();
  if (builtin_data && !f.model.vocab && !f.model_from_weights && f.run.model.vocab < data_vocab) {
    if (boot.rank() == 0)
      std::printf("zerotrain: --model %s: vocab %d raised to the built-in data's %d (pass --vocab to choose)\n",
                  f.model.preset.c_str(), f.run.model.vocab, data_vocab);
    f.run.model.vocab = data_vocab;
  }
  std::string why;
  const std::string asked = f.backend;
  f.backend = resolve_backend(asked, why);
  if (asked == "auto" && boot.rank() == 0) std::printf("zerotrain: --backend auto: %s (%s)\n", f.backend.c_str(), why.c_str());
  f.run.local_ranks = boot.local_size();
  f.run.ranks_per_node = ranks_per_node_of_job(f.ranks_per_node, boot);
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
  std::unique_ptr<Backend> backend = open_backend(f.backend, device);
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

// The weights zerotrain eval reads, chosen before MPI starts: a checkpoint (its model and tag folder)
// or --init-from (the model from the flags or a Llama folder's config.json). A bad path or flag is
// reported once by launcher rank 0.
void choose_eval_weights(TrainFlags& f, const std::string& checkpoint, const std::string& tag, const CLI::App& cmd) {
  try {
    if (checkpoint.empty() == f.run.checkpoint.init_from.empty())
      throw UserError("--checkpoint", checkpoint, "give exactly one of --checkpoint DIR[/TAG] and --init-from PATH",
                      "--checkpoint for a zerotrain save directory, --init-from for Hugging Face weights or an export");
    if (checkpoint.empty()) return;  // --init-from: check_command_line resolves the model
    if (f.model.any_given(cmd))
      throw UserError("--model", f.model.preset, "the checkpoint records its model; model flags apply to --init-from",
                      "drop --model/--layers/--heads/--dim/--vocab/--seq-len");
    Diagnostics d;
    const std::string tag_dir = ckpt::resolve_checkpoint(checkpoint, tag, d);
    ckpt::Manifest m;
    if (!tag_dir.empty()) ckpt::read_manifest(tag_dir, m, d);
    if (d.has_errors()) throw UserError(d);
    f.recorded_model = m.model;
    f.run.checkpoint.init_from = tag_dir;
  } catch (const UserError&) {
    const FailureText failure = describe_failure(std::current_exception());
    if (Bootstrap::launcher_rank() == 0) write_all(stderr, failure.text);
    throw ReportedError(failure.exit_code);
  }
}

}  // namespace

void register_eval_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("eval", "Validation loss and perplexity of a checkpoint's (or Hugging Face) weights "
                                         "over a whole validation split, sharded over the ranks (mpirun -np N)");
  auto f = std::make_shared<TrainFlags>();
  struct Where {
    std::string checkpoint, tag;
  };
  auto where = std::make_shared<Where>();
  f->run.evaluate_only = true;
  f->run.eval_every = 0;
  f->app = cmd;
  cmd->add_option("--checkpoint", where->checkpoint, "zerotrain save directory (uses its `latest`) or DIR/TAG");
  cmd->add_option("--tag", where->tag, "A tag inside the save directory instead of `latest`");
  cmd->add_option("--init-from", f->run.checkpoint.init_from,
                  "Weights instead of a checkpoint: a Hugging Face Llama folder (its config.json gives the model), a "
                  "GPT-2 safetensors file or a `zerotrain export` (with the model flags)");
  add_model_flags(*cmd, f->model);
  cmd->add_option("--config", f->run.config_path,
                  "ds_config.json for the stage, precision and micro-batch (default: built-in, all \"auto\")");
  cmd->add_option("--micro-batch", f->run.flags.micro_batch, "Windows per rank per forward (an \"auto\" micro batch)");
  cmd->add_option("--data", f->run.data_dir, "Folder with *train*.bin / *val*.bin shards (default: the built-in data)");
  cmd->add_option("--data-train", f->run.data_train, "Train shards by glob (with --data-val)");
  cmd->add_option("--data-val", f->run.data_val, "Validation shards by glob: the split evaluated");
  cmd->add_option("--seed", f->run.seed, "Seed of the built-in data (the one training used)")->capture_default_str();
  cmd->add_option("--backend", f->backend, "auto, cpu or cuda")->capture_default_str();
  cmd->add_option("--comm", f->comm, "auto, mpi or nccl")->check(CLI::IsMember({"auto", "mpi", "nccl"}))
      ->capture_default_str();
  cmd->add_option("--threads", f->threads, "CPU threads per rank (default: cores / ranks on this host)");
  add_ranks_per_node_flag(*cmd, *f);
  cmd->callback([f, where, cmd, &exit_code] {
    choose_eval_weights(*f, where->checkpoint, where->tag, *cmd);
    exit_code = run(*f);
  });
}

void register_train(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<TrainFlags>();
  add_auto_flags(app, f->run.flags);
  app.add_option("--config", f->run.config_path, "DeepSpeed-style ds_config.json (default: built-in, all \"auto\")");
  app.add_flag("--allow-unknown-keys", f->run.allow_unknown_keys, "Unknown config keys are warnings, not errors");
  add_model_flags(app, f->model);
  app.add_option("--seed", f->run.seed, "Seed for initialisation, built-in data and sample order")->capture_default_str();
  app.add_option("--data", f->run.data_dir,
                 "Folder of .bin token shards: *train*.bin and *val*.bin in name order, uint16 or uint32 "
                 "(default: built-in language)");
  app.add_option("--data-train", f->run.data_train, "Train shards by glob, e.g. 'fineweb/*_train_*.bin' (with --data-val)");
  app.add_option("--data-val", f->run.data_val, "Validation shards by glob (with --data-train)");
  app.add_option("--eval-every", f->run.eval_every, "Validation loss every K steps (0: only at the end)")
      ->capture_default_str();
  app.add_option("--eval-batches", f->run.eval_batches, "Micro-batches per rank per validation")->capture_default_str();
  app.add_option("--sample-every", f->run.sample_every, "Print a sample from rank 0 every K steps (0: never)")
      ->capture_default_str();
  app.add_option("--sample-tokens", f->run.sample_tokens, "Tokens per --sample-every sample")->capture_default_str();
  app.add_option("--tokenizer", f->run.tokenizer, "tokenizer.json for the samples' text (token ids without one)");
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
  add_ranks_per_node_flag(app, *f);
  auto& ck = f->run.checkpoint;
  app.add_option("--save", ck.save_dir,
                 "Save checkpoints into DIR (DIR/global_stepN, DIR/latest): at the end, every --save-every steps and "
                 "on SIGTERM/SIGINT");
  app.add_option("--save-every", ck.save_every, "Also save after every N steps (needs --save; 0: at the end only)")
      ->capture_default_str();
  app.add_option("--load", ck.load_dir, "Resume from the checkpoint DIR/latest names (or DIR/TAG, or a tag folder)");
  app.add_option("--load-tag", ck.load_tag, "Resume from DIR/TAG instead of the one `latest` names (needs --load)");
  app.add_option("--init-from", ck.init_from,
                 "Start from these weights: Hugging Face GPT-2 safetensors, a Hugging Face Llama folder (without "
                 "--model its config.json gives the model), `zerotrain export` output, or a zerotrain "
                 "checkpoint DIR[/TAG] (its fp32 master; optimizer state fresh, step 0; not with --load)");
  app.add_flag("--load-direct", ck.direct_reads,
               "Read --load / --init-from checkpoints with O_DIRECT (default: through the page cache, which a resume "
               "right after a save finds warm)");
  app.add_option("--save-writer-nice", ck.writer_nice,
                 "Nice level of the checkpoint writer thread, 0..19 (19: the step's threads come first)")
      ->capture_default_str();
  app.add_option("--save-writer-cpu-percent", ck.writer_cpu_percent,
                 "Hold the checkpoint writer to this percent of one core, (0, 100]: it sleeps between checksum "
                 "blocks (100: no pacing)")
      ->capture_default_str();
  app.callback([&app, f, &exit_code] {
    if (!app.get_subcommands().empty()) return;  // a subcommand ran instead
    f->app = &app;
    exit_code = run(*f);
  });
}

}  // namespace zt
