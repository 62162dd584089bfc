// The ds_config schema: every block's known keys bound to Config fields, and did-you-mean.
#include "runtime/config/config_schema.h"

#include <algorithm>
#include <cctype>

namespace zt {
namespace {

KeyBinding key(std::string name, Kind kind, FieldPtr f) {
  KeyBinding b;
  b.key = std::move(name);
  b.kind = kind;
  b.field = f;
  return b;
}
KeyBinding with_auto(KeyBinding b, std::string flag) {
  b.accepts_auto = true;
  b.auto_flag = std::move(flag);
  return b;
}
KeyBinding choices(KeyBinding b, std::vector<std::string> c) {
  b.choices = std::move(c);
  return b;
}
KeyBinding alias(KeyBinding b, std::string canonical, bool deprecated) {
  b.canonical = std::move(canonical);
  b.deprecated = deprecated;
  return b;
}
// One of a binding's yes/no marks set: stage 3 only, exact integer, null accepted, choices in any case.
KeyBinding mark(KeyBinding b, bool KeyBinding::*flag) {
  b.*flag = true;
  return b;
}
KeyBinding s3(KeyBinding b) { return mark(std::move(b), &KeyBinding::stage3_only); }
KeyBinding exact_int(KeyBinding b) { return mark(std::move(b), &KeyBinding::exact_int); }
KeyBinding nullable(KeyBinding b) { return mark(std::move(b), &KeyBinding::nullable); }
KeyBinding ignore_case(KeyBinding b) { return mark(std::move(b), &KeyBinding::choices_ignore_case); }
// DeepSpeed's DtypeEnum spellings of the three dtypes.
KeyBinding dtype_aliases(KeyBinding b) {
  b.choice_aliases = {{"float32", "fp32"}, {"float", "fp32"},  {"torch.float32", "fp32"}, {"float16", "fp16"},
                      {"half", "fp16"},    {"torch.float16", "fp16"}, {"bfloat16", "bf16"}, {"torch.bfloat16", "bf16"}};
  return b;
}
KeyBinding hidden(KeyBinding b) {
  b.hidden = true;
  b.deprecated = true;
  return b;
}

bool iequals(const std::string& a, const std::string& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); });
}

void offload_keys(OffloadConfig& o, bool is_param, BlockSchema& s) {
  s.keys = {
      choices(key("device", Kind::String, &o.device), {"none", "cpu", "nvme"}),
      key("nvme_path", Kind::String, &o.nvme_path),
      key("buffer_count", Kind::Int, &o.buffer_count),
      key("pin_memory", Kind::Bool, &o.pin_memory),
  };
  if (is_param) {
    s.keys.push_back(key("buffer_size", Kind::Count, &o.buffer_size));
    s.keys.push_back(key("max_in_cpu", Kind::Count, &o.max_in_cpu));
  } else {
    s.keys.push_back(key("pipeline_read", Kind::Bool, &o.pipeline_read));
    s.keys.push_back(key("pipeline_write", Kind::Bool, &o.pipeline_write));
    s.keys.push_back(key("fast_init", Kind::Bool, &o.fast_init));
    s.keys.push_back(key("ratio", Kind::Number, &o.ratio));
  }
}

void optimizer_params(OptimizerConfig& o, BlockSchema& s) {
  const std::string& t = o.type.value;
  s.keys = {with_auto(key("lr", Kind::Number, &o.lr), "--lr"),
            with_auto(key("weight_decay", Kind::Number, &o.weight_decay), "--weight-decay")};
  if (t == "SGD") {
    s.keys.push_back(key("momentum", Kind::Number, &o.momentum));
    s.keys.push_back(key("dampening", Kind::Number, &o.dampening));
    s.keys.push_back(key("nesterov", Kind::Bool, &o.nesterov));
    return;
  }
  s.keys.push_back(with_auto(key("betas", Kind::Betas, &o.betas), "--adam-beta1 and --adam-beta2"));
  s.keys.push_back(with_auto(key("eps", Kind::Number, &o.eps), "--adam-eps"));
  s.keys.push_back(key("bias_correction", Kind::Bool, &o.bias_correction));
  if (t == "Lamb" || t == "OneBitLamb") {
    s.keys.push_back(key("max_coeff", Kind::Number, &o.max_coeff));
    s.keys.push_back(key("min_coeff", Kind::Number, &o.min_coeff));
    if (t == "Lamb") return;
  }
  if (t == "OneBitLamb") {  // DeepSpeed's runtime/fp16/onebit/lamb.py; amsgrad is read to be refused
    s.keys.push_back(exact_int(key("freeze_step", Kind::Int, &o.freeze_step)));
    s.keys.push_back(key("coeff_beta", Kind::Number, &o.coeff_beta));
    s.keys.push_back(key("factor_max", Kind::Number, &o.factor_max));
    s.keys.push_back(key("factor_min", Kind::Number, &o.factor_min));
    s.keys.push_back(key("factor_threshold", Kind::Number, &o.factor_threshold));
    s.keys.push_back(key("cuda_aware", Kind::Bool, &o.cuda_aware));
    s.keys.push_back(choices(key("comm_backend_name", Kind::String, &o.comm_backend_name), {"nccl", "mpi"}));
    s.keys.push_back(key("amsgrad", Kind::Bool, &o.amsgrad));
    return;
  }
  if (t == "OneBitAdam" || t == "ZeroOneAdam") {  // DeepSpeed's runtime/fp16/onebit/{adam,zoadam}.py; amsgrad is read to be refused
    if (t == "OneBitAdam") {
      s.keys.push_back(exact_int(key("freeze_step", Kind::Int, &o.freeze_step)));
    } else {
      s.keys.push_back(exact_int(key("var_freeze_step", Kind::Int, &o.var_freeze_step)));
      s.keys.push_back(exact_int(key("var_update_scaler", Kind::Int, &o.var_update_scaler)));
      s.keys.push_back(exact_int(key("local_step_scaler", Kind::Int, &o.local_step_scaler)));
      s.keys.push_back(exact_int(key("local_step_clipper", Kind::Int, &o.local_step_clipper)));
    }
    s.keys.push_back(key("cuda_aware", Kind::Bool, &o.cuda_aware));
    s.keys.push_back(choices(key("comm_backend_name", Kind::String, &o.comm_backend_name), {"nccl", "mpi"}));
    s.keys.push_back(key("amsgrad", Kind::Bool, &o.amsgrad));
    return;
  }
  s.keys.push_back(key("amsgrad", Kind::Bool, &o.amsgrad));
  s.keys.push_back(key("adam_w_mode", Kind::Bool, &o.adam_w_mode));
  s.keys.push_back(key("torch_adam", Kind::Bool, &o.torch_adam));
}

void scheduler_params(SchedulerConfig& sc, BlockSchema& s) {
  const std::string& t = sc.type.value;
  if (t == "OneCycle") {
    s.keys = {key("cycle_min_lr", Kind::Number, &sc.cycle_min_lr), key("cycle_max_lr", Kind::Number, &sc.cycle_max_lr),
              key("decay_lr_rate", Kind::Number, &sc.decay_lr_rate),
              key("cycle_first_step_size", Kind::Int, &sc.cycle_first_step_size),
              key("cycle_second_step_size", Kind::Int, &sc.cycle_second_step_size),
              key("cycle_first_stair_count", Kind::Int, &sc.cycle_first_stair_count),
              key("cycle_second_stair_count", Kind::Int, &sc.cycle_second_stair_count),
              key("decay_step_size", Kind::Int, &sc.decay_step_size),
              key("cycle_momentum", Kind::Bool, &sc.cycle_momentum),
              key("cycle_min_mom", Kind::Number, &sc.cycle_min_mom),
              key("cycle_max_mom", Kind::Number, &sc.cycle_max_mom),
              key("decay_mom_rate", Kind::Number, &sc.decay_mom_rate),
              key("last_batch_iteration", Kind::Int, &sc.last_batch_iteration)};
    return;
  }
  KeyBinding type = choices(key("warmup_type", Kind::String, &sc.warmup_type), {"log", "linear"});
  type.choice_fallback = "log";  // DeepSpeed warns and uses log for any other value
  s.keys = {exact_int(with_auto(key("warmup_num_steps", Kind::Int, &sc.warmup_num_steps), "--warmup-steps or --warmup-ratio")),
            type,
            key("last_batch_iteration", Kind::Int, &sc.last_batch_iteration)};
  if (t == "WarmupCosineLR") {
    s.keys.push_back(with_auto(key("total_num_steps", Kind::Int, &sc.total_num_steps), "--steps"));
    s.keys.push_back(key("warmup_min_ratio", Kind::Number, &sc.warmup_min_ratio));
    s.keys.push_back(key("cos_min_ratio", Kind::Number, &sc.cos_min_ratio));
    return;
  }
  s.keys.push_back(with_auto(key("warmup_min_lr", Kind::Number, &sc.warmup_min_lr), ""));
  s.keys.push_back(with_auto(key("warmup_max_lr", Kind::Number, &sc.warmup_max_lr), "--lr"));
  if (t == "WarmupDecayLR")
    s.keys.push_back(with_auto(key("total_num_steps", Kind::Int, &sc.total_num_steps), "--steps"));
}

void monitor_keys(MonitorConfig& m, BlockSchema& s) {
  s.keys = {key("enabled", Kind::Bool, &m.enabled), key("output_path", Kind::String, &m.output_path),
            key("job_name", Kind::String, &m.job_name)};
}

}  // namespace

const std::vector<std::string>& supported_optimizers() {
  static const std::vector<std::string> v{"Adam", "AdamW", "SGD", "Lamb", "OneBitAdam", "ZeroOneAdam", "OneBitLamb"};
  return v;
}
const std::vector<std::string>& supported_schedulers() {
  static const std::vector<std::string> v{"WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle"};
  return v;
}
const std::vector<std::string>& unsupported_deepspeed_optimizers() {
  static const std::vector<std::string> v{"Adagrad", "MuAdam",
                                          "MuAdamW", "MuSGD", "Lion"};
  return v;
}
const std::vector<std::string>& unsupported_deepspeed_schedulers() {
  static const std::vector<std::string> v{"LRRangeTest", "WarmupCosineLR_legacy"};
  return v;
}

std::string sub_block_path(const std::string& parent, const std::string& k) {
  if (parent.empty()) return k == "bfloat16" ? "bf16" : k;
  return parent + "." + k;
}

std::vector<std::string> block_paths(const Config& c) {
  return {"",
          "optimizer",
          "optimizer.params",
          "scheduler",
          "scheduler.params",
          "fp16",
          "bf16",
          "zero_optimization",
          "zero_optimization.offload_optimizer",
          "zero_optimization.offload_param",
          "aio",
          "activation_checkpointing",
          "data_types",
          "flops_profiler",
          "comms_logger",
          "tensorboard",
          "csv_monitor",
          "checkpoint",
          "checkpoint.parallel_write"};
}

bool block_schema(Config& c, const std::string& path, BlockSchema& s) {
  s = BlockSchema{};
  s.path = path;
  if (path.empty()) {
    s.present = nullptr;  // the top level is always there
    s.keys = {
        with_auto(key("train_batch_size", Kind::Int, &c.train_batch_size), ""),
        with_auto(key("train_micro_batch_size_per_gpu", Kind::Int, &c.train_micro_batch_size_per_gpu), "--micro-batch"),
        with_auto(key("gradient_accumulation_steps", Kind::Int, &c.gradient_accumulation_steps), "--grad-accum"),
        with_auto(key("gradient_clipping", Kind::Number, &c.gradient_clipping), "--max-grad-norm"),
        key("steps_per_print", Kind::NullableInt, &c.steps_per_print),
        key("wall_clock_breakdown", Kind::Bool, &c.wall_clock_breakdown),
        key("memory_breakdown", Kind::Bool, &c.memory_breakdown),
        key("prescale_gradients", Kind::Bool, &c.prescale_gradients),
        key("gradient_predivide_factor", Kind::Number, &c.gradient_predivide_factor),
        ignore_case(choices(key("communication_data_type", Kind::String, &c.communication_data_type), {"fp32", "fp16", "bf16"})),
        key("zero_allow_untested_optimizer", Kind::Bool, &c.zero_allow_untested_optimizer),
    };
    s.sub_blocks = {"optimizer", "scheduler", "fp16", "bf16", "bfloat16", "zero_optimization", "aio",
                    "activation_checkpointing", "data_types", "flops_profiler", "comms_logger",
                    "tensorboard", "csv_monitor", "checkpoint"};
  } else if (path == "optimizer") {
    s.present = &c.optimizer.present;
    s.keys = {key("type", Kind::String, &c.optimizer.type), key("legacy_fusion", Kind::Bool, &c.optimizer.legacy_fusion)};
    s.sub_blocks = {"params"};
  } else if (path == "optimizer.params") {
    s.present = &c.optimizer.present;
    s.ds = DsBlock::Kwargs;
    optimizer_params(c.optimizer, s);
  } else if (path == "scheduler") {
    s.present = &c.scheduler.present;
    s.keys = {key("type", Kind::String, &c.scheduler.type)};
    s.sub_blocks = {"params"};
  } else if (path == "scheduler.params") {
    s.present = &c.scheduler.present;
    s.ds = DsBlock::Kwargs;
    scheduler_params(c.scheduler, s);
  } else if (path == "fp16") {
    auto& f = c.fp16;
    s.present = &f.present;
    s.ds = DsBlock::Model;
    s.keys = {with_auto(key("enabled", Kind::Bool, &f.enabled), "--fp16"),
              key("auto_cast", Kind::Bool, &f.auto_cast),
              key("loss_scale", Kind::Number, &f.loss_scale),
              key("initial_scale_power", Kind::Int, &f.initial_scale_power),
              key("loss_scale_window", Kind::Int, &f.loss_scale_window),
              key("hysteresis", Kind::Int, &f.hysteresis),
              key("consecutive_hysteresis", Kind::Bool, &f.consecutive_hysteresis),
              key("min_loss_scale", Kind::Int, &f.min_loss_scale),
              key("fp16_master_weights_and_grads", Kind::Bool, &f.fp16_master_weights_and_grads)};
  } else if (path == "bf16") {
    s.present = &c.bf16.present;
    s.ds = DsBlock::Model;
    s.keys = {with_auto(key("enabled", Kind::Bool, &c.bf16.enabled), "--bf16"),
              key("immediate_grad_update", Kind::Bool, &c.bf16.immediate_grad_update),
              key("check_grad_overflow", Kind::Bool, &c.bf16.check_grad_overflow)};
  } else if (path == "zero_optimization") {
    auto& z = c.zero_optimization;
    s.present = &z.present;
    s.ds = DsBlock::Model;
    s.keys = {
        key("stage", Kind::Int, &z.stage),
        key("contiguous_gradients", Kind::Bool, &z.contiguous_gradients),
        key("reduce_scatter", Kind::Bool, &z.reduce_scatter),
        with_auto(key("reduce_bucket_size", Kind::Count, &z.reduce_bucket_size), "--model"),
        key("use_multi_rank_bucket_allreduce", Kind::Bool, &z.use_multi_rank_bucket_allreduce),
        key("allgather_partitions", Kind::Bool, &z.allgather_partitions),
        key("allgather_bucket_size", Kind::Count, &z.allgather_bucket_size),
        key("overlap_comm", Kind::Bool, &z.overlap_comm),
        key("load_from_fp32_weights", Kind::Bool, &z.load_from_fp32_weights),
        key("elastic_checkpoint", Kind::Bool, &z.elastic_checkpoint),
        key("sub_group_size", Kind::Count, &z.sub_group_size),
        key("round_robin_gradients", Kind::Bool, &z.round_robin_gradients),
        key("ignore_unused_parameters", Kind::Bool, &z.ignore_unused_parameters),
        key("memory_efficient_linear", Kind::Bool, &z.memory_efficient_linear),
        s3(with_auto(key("stage3_prefetch_bucket_size", Kind::Count, &z.prefetch_bucket_size), "--model")),
        s3(alias(with_auto(key("prefetch_bucket_size", Kind::Count, &z.prefetch_bucket_size), "--model"),
                 "stage3_prefetch_bucket_size", false)),
        s3(with_auto(key("stage3_param_persistence_threshold", Kind::Count, &z.param_persistence_threshold), "--model")),
        s3(alias(with_auto(key("param_persistence_threshold", Kind::Count, &z.param_persistence_threshold), "--model"),
                 "stage3_param_persistence_threshold", false)),
        s3(key("stage3_model_persistence_threshold", Kind::Count, &z.model_persistence_threshold)),
        s3(alias(key("model_persistence_threshold", Kind::Count, &z.model_persistence_threshold),
                 "stage3_model_persistence_threshold", false)),
        s3(key("stage3_max_live_parameters", Kind::Count, &z.max_live_parameters)),
        s3(alias(key("max_live_parameters", Kind::Count, &z.max_live_parameters), "stage3_max_live_parameters", false)),
        s3(key("stage3_max_reuse_distance", Kind::Count, &z.max_reuse_distance)),
        s3(alias(key("max_reuse_distance", Kind::Count, &z.max_reuse_distance), "stage3_max_reuse_distance", false)),
        key("zero_hpz_partition_size", Kind::Count, &z.hpz_partition_size),
        key("mics_shard_size", Kind::Int, &z.mics_shard_size),
        key("mics_hierarchical_params_gather", Kind::Bool, &z.mics_hierarchical_params_gather),
        key("zero_quantized_weights", Kind::Bool, &z.quantized_weights),
        key("zero_quantized_gradients", Kind::Bool, &z.quantized_gradients),
        s3(key("stage3_gather_16bit_weights_on_model_save", Kind::Bool, &z.gather_16bit_weights_on_model_save)),
        s3(alias(key("gather_16bit_weights_on_model_save", Kind::Bool, &z.gather_16bit_weights_on_model_save),
                 "stage3_gather_16bit_weights_on_model_save", false)),
        s3(alias(key("stage3_gather_fp16_weights_on_model_save", Kind::Bool, &z.gather_16bit_weights_on_model_save),
                 "stage3_gather_16bit_weights_on_model_save", true)),
        hidden(alias(key("cpu_offload", Kind::Bool, &z.cpu_offload), "offload_optimizer", true)),
        hidden(alias(key("cpu_offload_param", Kind::Bool, &z.cpu_offload_param), "offload_param", true)),
        hidden(alias(key("cpu_offload_use_pin_memory", Kind::Bool, &z.cpu_offload_use_pin_memory),
                     "offload_optimizer.pin_memory and offload_param.pin_memory", true)),
    };
    s.sub_blocks = {"offload_optimizer", "offload_param"};
  } else if (path == "zero_optimization.offload_optimizer") {
    s.present = &c.zero_optimization.offload_optimizer.present;
    s.ds = DsBlock::Model;
    offload_keys(c.zero_optimization.offload_optimizer, false, s);
  } else if (path == "zero_optimization.offload_param") {
    s.present = &c.zero_optimization.offload_param.present;
    s.ds = DsBlock::Model;
    offload_keys(c.zero_optimization.offload_param, true, s);
  } else if (path == "aio") {
    auto& a = c.aio;
    s.present = &a.present;
    s.keys = {key("block_size", Kind::Count, &a.block_size),   key("queue_depth", Kind::Int, &a.queue_depth),
              key("intra_op_parallelism", Kind::Int, &a.intra_op_parallelism),
              alias(key("thread_count", Kind::Int, &a.intra_op_parallelism), "intra_op_parallelism", true),
              key("single_submit", Kind::Bool, &a.single_submit),
              key("overlap_events", Kind::Bool, &a.overlap_events), key("use_gds", Kind::Bool, &a.use_gds)};
  } else if (path == "activation_checkpointing") {
    auto& a = c.activation_checkpointing;
    s.present = &a.present;
    s.keys = {key("partition_activations", Kind::Bool, &a.partition_activations),
              key("contiguous_memory_optimization", Kind::Bool, &a.contiguous_memory_optimization),
              key("cpu_checkpointing", Kind::Bool, &a.cpu_checkpointing),
              key("number_checkpoints", Kind::NullableInt, &a.number_checkpoints),
              key("synchronize_checkpoint_boundary", Kind::Bool, &a.synchronize_checkpoint_boundary),
              key("profile", Kind::Bool, &a.profile)};
  } else if (path == "data_types") {
    s.present = &c.data_types.present;
    s.keys = {dtype_aliases(choices(key("grad_accum_dtype", Kind::String, &c.data_types.grad_accum_dtype), {"fp32", "fp16", "bf16"}))};
  } else if (path == "flops_profiler") {
    auto& f = c.flops_profiler;
    s.present = &f.present;
    s.keys = {key("enabled", Kind::Bool, &f.enabled),         key("recompute_fwd_factor", Kind::Number, &f.recompute_fwd_factor),
              key("profile_step", Kind::Int, &f.profile_step), key("module_depth", Kind::Int, &f.module_depth),
              key("top_modules", Kind::Int, &f.top_modules),   key("detailed", Kind::Bool, &f.detailed),
              nullable(key("output_file", Kind::String, &f.output_file))};
  } else if (path == "comms_logger") {
    auto& l = c.comms_logger;
    s.present = &l.present;
    s.ds = DsBlock::Model;
    s.keys = {key("enabled", Kind::Bool, &l.enabled), key("verbose", Kind::Bool, &l.verbose),
              key("prof_all", Kind::Bool, &l.prof_all), key("debug", Kind::Bool, &l.debug),
              key("prof_ops", Kind::StringList, &l.prof_ops)};
  } else if (path == "tensorboard") {
    s.present = &c.tensorboard.present;
    s.ds = DsBlock::Model;
    monitor_keys(c.tensorboard, s);
  } else if (path == "csv_monitor") {
    s.present = &c.csv_monitor.present;
    s.ds = DsBlock::Model;
    monitor_keys(c.csv_monitor, s);
  } else if (path == "checkpoint") {
    auto& k = c.checkpoint;
    s.present = &k.present;
    s.keys = {ignore_case(choices(key("tag_validation", Kind::String, &k.tag_validation), {"Ignore", "Warn", "Fail"})),
              key("load_universal", Kind::Bool, &k.load_universal),
              key("use_node_local_storage", Kind::Bool, &k.use_node_local_storage)};
    s.sub_blocks = {"parallel_write"};
  } else if (path == "checkpoint.parallel_write") {
    s.present = &c.checkpoint.present;
    s.keys = {key("pipeline_stage", Kind::Bool, &c.checkpoint.parallel_write_pipeline_stage)};
  } else {
    return false;
  }
  return true;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string suggest_key(const std::string& k, const std::vector<std::string>& valid) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& v : valid) {
    const size_t d = edit_distance(k, v);
    if (d < best_d) best_d = d, best = v;
  }
  // Close enough to be a typo: up to a third of the length, at least 2 edits.
  const size_t limit = std::max<size_t>(2, std::max(k.size(), best.size()) / 3);
  return best_d <= limit ? best : std::string();
}

std::vector<std::string> valid_keys(const BlockSchema& b) {
  std::vector<std::string> v;
  for (const auto& k : b.keys)
    if (!k.hidden) v.push_back(k.key);
  for (const auto& k : b.sub_blocks) v.push_back(k);
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::string> blocks_with_key(const Config& c, const std::string& k, const std::string& except) {
  Config copy = c;
  std::vector<std::string> out;
  for (const auto& p : block_paths(c)) {
    if (p == except) continue;
    BlockSchema s;
    if (!block_schema(copy, p, s)) continue;
    for (const auto& b : s.keys)
      if (!b.hidden && iequals(b.key, k)) out.push_back(p.empty() ? b.key : p + "." + b.key);
  }
  return out;
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Int: return "an integer";
    case Kind::Count: return "a whole number (integer or e.g. 5e8)";
    case Kind::Number: return "a number";
    case Kind::Bool: return "true or false";
    case Kind::String: return "a string";
    case Kind::Betas: return "a list of two numbers [beta1, beta2]";
    case Kind::NullableInt: return "an integer or null";
    case Kind::StringList: return "a list of strings";
  }
  return "a value";
}

}  // namespace zt
