// Config: the typed DeepSpeed-style ds_config (every block zerotrain reads), where each value
// remembers where it came from (file, default, derived, auto<-flag, deprecated<-old key).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/zero/zero_rules.h"

namespace zt {

enum class SourceKind { Default, File, Derived, Auto, Flag, Deprecated };

struct Source {
  SourceKind kind = SourceKind::Default;
  std::string detail;  // the flag ("--lr"), the old key, or how a value was derived
  std::string describe() const;  // "default", "file", "derived (T // W)", "auto<---lr", ...
};

// One config value and its source. `is_auto` is true while the file said "auto" and nothing has
// resolved it yet; `present` is true when the key appeared in the file (under any spelling).
template <class T>
struct Field {
  T value{};
  Source source;
  bool present = false;
  bool is_auto = false;
  bool invalid = false;  // the file gave a value of the wrong type or range (already reported)
  Field() = default;
  Field(T v) : value(std::move(v)) {}  // NOLINT: defaults read naturally as `Field<int64_t> x = 3;`
  const T& operator*() const { return value; }
  bool from_file() const { return source.kind == SourceKind::File || source.kind == SourceKind::Deprecated; }
};

struct OptimizerConfig {
  bool present = false;           // the "optimizer" block appeared in the file
  Field<std::string> type = std::string("AdamW");
  Field<double> lr = 1e-3;
  Field<std::vector<double>> betas = std::vector<double>{0.9, 0.999};
  Field<double> eps = 1e-8;
  Field<double> weight_decay = 0.0;
  Field<bool> bias_correction = true;
  Field<bool> amsgrad = false;
  Field<bool> adam_w_mode = true;
  Field<bool> torch_adam = false;
  Field<double> momentum = 0.0;   // SGD
  Field<double> dampening = 0.0;  // SGD
  Field<bool> nesterov = false;   // SGD
  Field<double> max_coeff = 10.0; // Lamb, OneBitLamb
  Field<double> min_coeff = 0.01; // Lamb, OneBitLamb
  Field<double> coeff_beta = 0.9;        // OneBitLamb: the warm-up trust ratios' moving average weight
  Field<double> factor_max = 4.0;        // OneBitLamb: the compressed phase's factor bounds
  Field<double> factor_min = 0.5;
  Field<double> factor_threshold = 0.1;  // OneBitLamb: the factor's largest relative change a step
  Field<int64_t> freeze_step = 100000;                    // OneBitAdam: warm-up updates before compression
  Field<int64_t> var_freeze_step = 100000;                // ZeroOneAdam: steps before the variance freezes
  Field<int64_t> var_update_scaler = 16;                  // ZeroOneAdam: variance updates per var_interval doubling
  Field<int64_t> local_step_scaler = 32678;               // ZeroOneAdam: frozen steps per local_step_interval doubling
  Field<int64_t> local_step_clipper = 16;                 // ZeroOneAdam: the largest local_step_interval
  Field<bool> cuda_aware = false;                         // OneBitAdam, ZeroOneAdam: MPI moves device buffers itself
  Field<std::string> comm_backend_name = std::string("nccl");  // OneBitAdam, ZeroOneAdam: nccl or mpi
  Field<bool> legacy_fusion = false;
};

struct SchedulerConfig {
  bool present = false;
  Field<std::string> type = std::string("");  // "" = no scheduler (constant lr)
  Field<double> warmup_min_lr = 0.0;
  Field<double> warmup_max_lr = 1e-3;
  Field<int64_t> warmup_num_steps = 1000;
  Field<std::string> warmup_type = std::string("log");
  Field<int64_t> total_num_steps = 0;  // required by WarmupDecayLR / WarmupCosineLR
  Field<double> warmup_min_ratio = 0.0;
  Field<double> cos_min_ratio = 0.0001;
  Field<int64_t> last_batch_iteration = -1;
  // OneCycle (DeepSpeed's names and defaults; cycle_min_lr and cycle_max_lr are required).
  Field<double> cycle_min_lr = 0.0;
  Field<double> cycle_max_lr = 0.0;
  Field<double> decay_lr_rate = 0.0;
  Field<int64_t> cycle_first_step_size = 2000;
  Field<int64_t> cycle_second_step_size = 0;  // absent: equal to cycle_first_step_size
  Field<int64_t> cycle_first_stair_count = 0;
  Field<int64_t> cycle_second_stair_count = 0;
  Field<int64_t> decay_step_size = 0;
  Field<bool> cycle_momentum = true;
  Field<double> cycle_min_mom = 0.8;
  Field<double> cycle_max_mom = 0.9;
  Field<double> decay_mom_rate = 0.0;
};

struct Fp16Config {
  bool present = false;
  Field<bool> enabled = false;
  Field<bool> auto_cast = false;
  Field<double> loss_scale = 0.0;  // 0 = dynamic
  Field<int64_t> initial_scale_power = 16;
  Field<int64_t> loss_scale_window = 1000;
  Field<int64_t> hysteresis = 2;
  Field<bool> consecutive_hysteresis = false;
  Field<int64_t> min_loss_scale = 1;  // an integer in DeepSpeed's config model
  Field<bool> fp16_master_weights_and_grads = false;
};

struct Bf16Config {
  bool present = false;
  std::string spelling = "bf16";  // "bf16" or its alias "bfloat16"
  Field<bool> enabled = false;
  Field<bool> immediate_grad_update = false;
  Field<bool> check_grad_overflow = true;  // skip a step whose gradients are not finite
};

struct OffloadConfig {
  bool present = false;
  Field<std::string> device = std::string("none");
  Field<std::string> nvme_path = std::string("");
  Field<int64_t> buffer_count = 4;  // 4 for the optimizer, 5 for params
  Field<bool> pin_memory = true;
  Field<int64_t> buffer_size = 100000000;   // offload_param only
  Field<int64_t> max_in_cpu = 1000000000;   // offload_param only
  Field<bool> pipeline_read = false;         // offload_optimizer only
  Field<bool> pipeline_write = false;        // offload_optimizer only
  Field<bool> fast_init = false;             // offload_optimizer only
  Field<double> ratio = 1.0;                 // offload_optimizer only
};

struct ZeroConfig {
  bool present = false;
  Field<int64_t> stage = 0;
  Field<bool> contiguous_gradients = true;
  Field<bool> reduce_scatter = true;
  Field<int64_t> reduce_bucket_size = 500000000;
  Field<bool> use_multi_rank_bucket_allreduce = true;
  Field<bool> allgather_partitions = true;
  Field<int64_t> allgather_bucket_size = 500000000;
  Field<bool> overlap_comm = false;  // resolved: true for stage 3 unless the file says otherwise
  Field<bool> load_from_fp32_weights = true;
  Field<bool> elastic_checkpoint = false;
  Field<int64_t> sub_group_size = 1000000000;
  Field<bool> round_robin_gradients = false;
  Field<bool> ignore_unused_parameters = true;
  Field<bool> memory_efficient_linear = true;
  // Stage-3 keys: written either with the "stage3_" prefix or bare.
  Field<int64_t> prefetch_bucket_size = 50000000;
  Field<int64_t> param_persistence_threshold = 100000;
  Field<int64_t> model_persistence_threshold = INT64_MAX;
  Field<int64_t> max_live_parameters = 1000000000;
  Field<int64_t> max_reuse_distance = 1000000000;
  Field<bool> gather_16bit_weights_on_model_save = false;
  // ZeRO++ hpZ: a secondary copy of each gathered unit partitioned over groups of this many
  // consecutive ranks (one node), which backward and later micro-steps gather from. 1: off.
  Field<int64_t> hpz_partition_size = 1;
  // MiCS: the model states sharded over groups of this many consecutive ranks and replicated across
  // the world / size groups (stage 3); -1 (or any value <= 0): off. mics_hierarchical_params_gather:
  // each unit gathered across nodes among same-local-index ranks first, then inside each node.
  Field<int64_t> mics_shard_size = -1;
  Field<bool> mics_hierarchical_params_gather = false;
  // ZeRO++ qwZ: stage 3's parameter all-gathers send int8 levels and one fp32 scale per block.
  Field<bool> quantized_weights = false;
  // ZeRO++ qgZ: stage 3's gradient reduce-scatters run as two int4 all-to-alls (inside each node,
  // then across nodes) with an fp32 sum between them (runtime/zero/quantized_reduce.h).
  Field<bool> quantized_gradients = false;
  OffloadConfig offload_optimizer;
  OffloadConfig offload_param;
  // Deprecated spellings, read only to be mapped onto offload_optimizer / offload_param.
  Field<bool> cpu_offload = false;
  Field<bool> cpu_offload_param = false;
  Field<bool> cpu_offload_use_pin_memory = false;
  ZeroConfig() { offload_param.buffer_count = Field<int64_t>(5); }
};

struct AioConfig {
  bool present = false;
  Field<int64_t> block_size = 1048576;
  Field<int64_t> queue_depth = 8;
  Field<int64_t> intra_op_parallelism = 1;  // "thread_count" before DeepSpeed 0.16.4
  Field<bool> single_submit = false;
  Field<bool> overlap_events = true;
  Field<bool> use_gds = false;
};

struct ActivationCheckpointingConfig {
  bool present = false;
  Field<bool> partition_activations = false;
  Field<bool> contiguous_memory_optimization = false;
  Field<bool> cpu_checkpointing = false;
  Field<std::optional<int64_t>> number_checkpoints;
  Field<bool> synchronize_checkpoint_boundary = false;
  Field<bool> profile = false;
};

struct DataTypesConfig {
  bool present = false;
  Field<std::string> grad_accum_dtype = std::string("");  // "" = same as the training dtype
};

struct FlopsProfilerConfig {
  bool present = false;
  Field<bool> enabled = false;
  Field<double> recompute_fwd_factor = 0.0;
  Field<int64_t> profile_step = 1;
  Field<int64_t> module_depth = -1;
  Field<int64_t> top_modules = 1;
  Field<bool> detailed = true;
  Field<std::string> output_file = std::string("");  // "" (or null): standard output
};

struct CommsLoggerConfig {
  bool present = false;
  Field<bool> enabled = false;
  Field<bool> verbose = false;
  Field<bool> prof_all = true;
  Field<bool> debug = false;
  Field<std::vector<std::string>> prof_ops;
};

struct MonitorConfig {  // tensorboard and csv_monitor
  bool present = false;
  Field<bool> enabled = false;
  Field<std::string> output_path = std::string("");
  Field<std::string> job_name = std::string("DeepSpeedJobName");
};

struct CheckpointConfig {
  bool present = false;
  Field<std::string> tag_validation = std::string("Warn");
  Field<bool> load_universal = false;
  Field<bool> use_node_local_storage = false;
  Field<bool> parallel_write_pipeline_stage = false;  // checkpoint.parallel_write.pipeline_stage
};

struct Config {
  std::string file;  // where it was loaded from
  // Batch (resolved by resolve_batch; before that, is_auto/present say what the file gave).
  Field<int64_t> train_batch_size = 0;
  Field<int64_t> train_micro_batch_size_per_gpu = 0;
  Field<int64_t> gradient_accumulation_steps = 0;
  Field<int64_t> world_size = 1;
  // Not a ds_config key: the optimizer step this run trains to (resolve_run_length): --steps, else
  // a concrete schedule's total_num_steps, else kDefaultRunSteps.
  Field<int64_t> run_steps = 0;

  OptimizerConfig optimizer;
  SchedulerConfig scheduler;
  Fp16Config fp16;
  Bf16Config bf16;
  ZeroConfig zero_optimization;
  AioConfig aio;
  ActivationCheckpointingConfig activation_checkpointing;
  Field<double> gradient_clipping = 1.0;  // DeepSpeed's default since it changed from 0
  Field<std::optional<int64_t>> steps_per_print = std::optional<int64_t>(10);  // null: no periodic report
  Field<bool> wall_clock_breakdown = false;
  Field<bool> memory_breakdown = false;
  Field<bool> prescale_gradients = false;
  Field<double> gradient_predivide_factor = 1.0;
  Field<std::string> communication_data_type = std::string("");  // "" = the training dtype
  Field<bool> zero_allow_untested_optimizer = false;
  DataTypesConfig data_types;
  FlopsProfilerConfig flops_profiler;
  CommsLoggerConfig comms_logger;
  MonitorConfig tensorboard;
  MonitorConfig csv_monitor;
  CheckpointConfig checkpoint;

  // The schedule's own length: total_num_steps of WarmupDecayLR / WarmupCosineLR; nullopt for the
  // schedules that never end (WarmupLR holds its peak, OneCycle its decay) and for none.
  std::optional<int64_t> schedule_steps() const;

  bool fp16_enabled() const { return fp16.enabled.value; }
  bool bf16_enabled() const { return bf16.enabled.value; }
  DType training_precision() const { return bf16_enabled() ? DType::BF16 : fp16_enabled() ? DType::F16 : DType::F32; }
};

// "fp32" | "fp16" | "bf16" (validated values of communication_data_type, grad_accum_dtype).
inline DType precision_named(const std::string& s) { return s == "bf16" ? DType::BF16 : s == "fp16" ? DType::F16 : DType::F32; }
// optimizer.type with adam_w_mode (DeepSpeed's Adam is AdamW unless adam_w_mode is false);
// nullopt for a type zerotrain has no optimizer for (validation reports it).
std::optional<OptimizerType> optimizer_type_of(const OptimizerConfig& o);
inline OffloadDevice offload_device_named(const std::string& s) {
  return s == "cpu" ? OffloadDevice::CPU : s == "nvme" ? OffloadDevice::NVMe : OffloadDevice::None;
}
// The options the ZeRO rules read (runtime/zero/zero_rules.h), as the engine will run them: the
// ratio applies to offload_optimizer "cpu" only, and ratio 0 offloads nothing (DeepSpeed's reading).
// The optimizer is optimizer_type_of's (AdamW when that has none); no model: no shard size.
ZeroOptionSet zero_option_set(const Config& c);

}  // namespace zt
