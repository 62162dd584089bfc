// The table of DeepSpeed keys (v0.19.5) that zerotrain recognises without reading them into its
// Config, with what each does in DeepSpeed and which value means "off".
#include "runtime/config/deepspeed_keys.h"

#include <algorithm>

namespace zt {
namespace {

using C = DsKeyClass;
using O = DsOff;
using V = DsValue;

const std::vector<DsKey> kTable = {
    // Top level: features that change what is trained.
    {"", "amp", C::Unimplemented, O::EnabledFalse, V::Object,
     "NVIDIA Apex automatic mixed precision; zerotrain's mixed precision is the fp16 / bf16 block"},
    {"", "torch_autocast", C::Unimplemented, O::EnabledFalse, V::Object,
     "torch.autocast around the forward pass (lower-precision matmuls over fp32 weights)"},
    {"", "sparse_attention", C::Unimplemented, O::Never, V::Object,
     "block-sparse attention kernels (fixed, variable, BigBird, Longformer layouts) in place of dense attention"},
    {"", "progressive_layer_drop", C::Unimplemented, O::EnabledFalse, V::Object,
     "Progressive Layer Dropping: transformer layers are skipped stochastically during training"},
    {"", "eigenvalue", C::Unimplemented, O::EnabledFalse, V::Object,
     "Hessian eigenvalue estimation feeding the quantization and layer-drop schedules"},
    {"", "curriculum_learning", C::Unimplemented, O::EnabledFalse, V::Object,
     "legacy curriculum learning: the sequence length grows during training"},
    {"", "data_efficiency", C::Unimplemented, O::EnabledFalse, V::Object,
     "the data efficiency library: curriculum data sampling and random layerwise token dropping"},
    {"", "compression_training", C::Unimplemented, O::NullOrEmpty, V::Object,
     "compression-aware training: weight and activation quantization, pruning, layer reduction"},
    {"", "elasticity", C::Unimplemented, O::EnabledFalse, V::Object,
     "elastic training: DeepSpeed chooses the batch size and micro batch for the GPUs available"},
    {"", "tensor_parallel", C::Unimplemented, O::Custom, V::Object,
     "AutoTP tensor parallelism: each layer's weights split across autotp_size ranks"},
    {"", "expert_parallel", C::Unimplemented, O::NullOrEmpty, V::Object, "mixture-of-experts expert parallelism"},
    {"", "sequence_parallel_size", C::Unimplemented, O::AtMostOne, V::Int,
     "Ulysses sequence parallelism: the data-parallel world size is divided by this number"},
    {"", "weight_quantization", C::Unimplemented, O::NullOrEmpty, V::Object, "quantized weights (ZeRO-Inference)"},
    {"", "managed_gradient_accumulation", C::Unimplemented, O::True, V::Bool,
     "false hands the accumulation boundary to the caller (every step() applies an update); zerotrain always steps "
     "every gradient_accumulation_steps micro-batches"},
    // Top level: features that leave the result alone.
    {"", "hybrid_engine", C::NotBuilt, O::EnabledFalse, V::Object,
     "the hybrid engine that switches a model between training and fast generation (RLHF)"},
    {"", "autotuning", C::Compat, O::EnabledFalse, V::Object,
     "the autotuner's settings, read by `zerotrain tune` (DeepSpeed's `deepspeed --autotuning`); a training run "
     "does not tune, and does not stop at end_profile_step as DeepSpeed's engine does under the tuner"},
    {"", "nebula", C::NotBuilt, O::EnabledFalse, V::Object, "the Nebula asynchronous checkpoint engine"},
    {"", "datastates", C::NotBuilt, O::EnabledFalse, V::Object, "the DataStates asynchronous checkpoint engine"},
    {"", "compile", C::NotBuilt, O::Custom, V::Object, "DeepCompile: compiler passes over the training graph"},
    {"", "wandb", C::NotBuilt, O::EnabledFalse, V::Object, "the Weights & Biases monitor, which sends metrics over the network; zerotrain writes them locally only: use "
     "\"tensorboard\" or \"csv_monitor\""},
    {"", "comet", C::NotBuilt, O::EnabledFalse, V::Object, "the Comet monitor, which sends metrics over the network; zerotrain writes them locally only: use "
     "\"tensorboard\" or \"csv_monitor\""},
    // Top level: switches with nothing to do here.
    {"", "zero_force_ds_cpu_optimizer", C::Compat, O::True, V::Bool,
     "with optimizer offload, insist on DeepSpeed's own CPU Adam; zerotrain always steps offloaded state with its "
     "SIMD CPU Adam"},
    {"", "seq_parallel_communication_data_type", C::Compat, O::Never, V::String,
     "the dtype of Ulysses sequence-parallel all-to-alls; zerotrain has no sequence parallelism"},
    {"", "dump_state", C::Compat, O::False, V::Bool, "print the engine's state after initialisation"},
    {"", "disable_allgather", C::Compat, O::False, V::Bool, "a legacy switch of the pre-0.5.9 ZeRO stage 1"},
    {"", "sparse_gradients", C::Compat, O::False, V::Bool,
     "all-reduce embedding gradients as sparse CSR tensors (the same sums in fewer bytes)"},
    {"", "graph_harvesting", C::Compat, O::False, V::Bool, "CUDA-graph capture in DeepSpeed's bf16 optimizer"},
    {"", "dataloader_drop_last", C::Compat, O::False, V::Bool,
     "drop the last partial batch of DeepSpeed's own data loader; zerotrain's sampler never forms a partial batch"},
    {"", "log_level", C::Compat, O::Never, V::String, "DeepSpeed's logger level"},
    {"", "use_data_before_expert_parallelism", C::Compat, O::False, V::Bool, "the rank order of MoE process groups"},
    {"", "vocabulary_size", C::Compat, O::Never, V::Int,
     "only used by DeepSpeed to warn when the vocabulary is not a multiple of 8"},
    {"", "pipeline", C::Compat, O::NullOrEmpty, V::Object,
     "settings for a PipelineModule model class (pipeline parallelism is chosen in code); zerotrain trains "
     "data-parallel"},
    {"", "timers", C::Compat, O::NullOrEmpty, V::Object, "DeepSpeed's throughput timer settings"},
    // Top level: names DeepSpeed does not read.
    {"", "comms_config", C::Ignored, O::Never, V::Any,
     "DeepSpeed has no comms_config block (communication logging is the comms_logger block)"},
    {"", "monitor_config", C::Ignored, O::Never, V::Any,
     "DeepSpeed has no monitor_config block (its monitors are the top-level tensorboard, wandb, csv_monitor and "
     "comet blocks)"},
    {"", "log", C::Ignored, O::Never, V::Any,
     "DeepSpeed has no log block (steps_per_print and wall_clock_breakdown control what it logs)"},
    {"", "fp8", C::Ignored, O::Never, V::Any,
     "DeepSpeed has no fp8 block (FP8 training comes from Transformer Engine in the training script)"},
    {"", "sequence_parallel", C::Ignored, O::Never, V::Any,
     "DeepSpeed has no sequence_parallel block (a training framework's own setting; DeepSpeed's is "
     "sequence_parallel_size)"},
    // zero_optimization (a pydantic model in DeepSpeed: these are its fields zerotrain does not read).
    {"zero_optimization", "zenflow", C::Unimplemented, O::NullOrEmpty, V::Object,
     "ZenFlow: the optimizer waits only for the important gradients and updates the rest asynchronously on the CPU"},
    {"zero_optimization", "legacy_stage1", C::Unimplemented, O::False, V::Bool,
     "the ZeRO stage 1 of DeepSpeed before 0.5.9 (DeepSpeed itself raises an error for it now)"},
    {"zero_optimization", "zero_quantized_nontrainable_weights", C::Unimplemented, O::False, V::Bool,
     "frozen parameters stored and gathered in int8"},
    {"zero_optimization", "zeropp_loco_param", C::Unimplemented, O::NullOrEmpty, V::Object,
     "LoCo-ZeRO++: error feedback for quantized gradients"},
    {"zero_optimization", "pipeline_loading_checkpoint", C::Compat, O::False, V::Bool,
     "load a stage-3 checkpoint in pipeline mode"},
    {"zero_optimization", "override_module_apply", C::Compat, O::True, V::Bool,
     "gather parameters around nn.Module.apply under stage 3"},
    {"zero_optimization", "log_trace_cache_warnings", C::Compat, O::False, V::Bool,
     "log stage-3 trace-cache invalidations"},
    {"zero_optimization", "enable_sanity_checks", C::Compat, O::False, V::Bool, "internal stage-3 consistency checks"},
    {"zero_optimization", "save_muon_momentum_buffer_in_memory", C::Compat, O::False, V::Bool,
     "keep the Muon momentum buffer out of NVMe swapping"},
    {"zero_optimization", "leaf_module", C::Compat, O::NullOrEmpty, V::Object,
     "module classes stage 3 fetches as one unit; zerotrain always fetches whole units (embedding, block, head)"},
    {"zero_optimization", "stage3_module_granularity_threshold", C::Compat, O::AtMostZero, V::Int,
     "modules below this parameter granularity are fetched as one unit; zerotrain always fetches whole units"},
    {"zero_optimization", "module_granularity_threshold", C::Compat, O::AtMostZero, V::Int,
     "modules below this parameter granularity are fetched as one unit; zerotrain always fetches whole units"},
    {"zero_optimization", "stage3_use_all_reduce_for_fetch_params", C::Compat, O::False, V::Bool,
     "fetch stage-3 parameters with an all-reduce instead of an all-gather (the same values)"},
    {"zero_optimization", "use_all_reduce_for_fetch_params", C::Compat, O::False, V::Bool,
     "fetch stage-3 parameters with an all-reduce instead of an all-gather (the same values)"},
    {"zero_optimization", "stage3_allgather_sequential", C::Compat, O::False, V::Bool,
     "all-gather stage-3 parameters one tensor at a time instead of bucketed"},
    {"zero_optimization", "allgather_sequential", C::Compat, O::False, V::Bool,
     "all-gather stage-3 parameters one tensor at a time instead of bucketed"},
    {"zero_optimization.offload_optimizer", "super_offload", C::Compat, O::False, V::Bool,
     "SuperOffload: a different overlap of the CPU optimizer with the GPU (the same update)"},
    {"zero_optimization.offload_optimizer", "cpuadam_cores_perc", C::Compat, O::Never, V::Number,
     "the share of CPU cores DeepSpeed's CPU Adam uses; zerotrain's is set with --threads"},
    // bf16 (a pydantic model).
    {"bf16", "bf16_master_weights_and_grads", C::Unimplemented, O::False, V::Bool,
     "bf16 master weights and gradients in the ZeRO optimizer (zerotrain keeps fp32 masters)"},
    {"bf16", "bf16_optimizer_states", C::Unimplemented, O::False, V::Bool,
     "bf16 Adam moments (zerotrain keeps them in fp32)"},
    // optimizer.params: constructor arguments of DeepSpeed's and torch's optimizers.
    {"optimizer.params", "set_grad_none", C::Compat, O::Never, V::Bool, "FusedAdam sets gradients to None after zero_grad"},
    {"optimizer.params", "fp32_optimizer_states", C::Compat, O::True, V::Bool,
     "keep CPU-offloaded optimizer states in fp32 (zerotrain always does)"},
    {"optimizer.params", "eps_inside_sqrt", C::Unimplemented, O::False, V::Bool,
     "Lamb adds eps inside the square root of the second moment"},
    {"optimizer.params", "maximize", C::Unimplemented, O::False, V::Bool, "torch optimizers: ascend the loss"},
    {"optimizer.params", "foreach", C::Compat, O::Never, V::Any, "torch optimizers: the multi-tensor implementation"},
    {"optimizer.params", "fused", C::Compat, O::Never, V::Any, "torch optimizers: the fused CUDA implementation"},
    {"optimizer.params", "capturable", C::Compat, O::Never, V::Any, "torch optimizers: CUDA-graph-safe state"},
    {"optimizer.params", "differentiable", C::Compat, O::Never, V::Any, "torch optimizers: autograd through step()"},
    // checkpoint and data_types (read key by key in DeepSpeed).
    {"checkpoint", "writer", C::NotBuilt, O::NullOrEmpty, V::Object, "the decoupled (fast) checkpoint writer"},
    {"checkpoint", "checkpoint_serialization", C::Compat, O::Never, V::Any, "torch.save's zipfile serialization"},
    {"data_types", "param_dtype", C::Compat, O::Never, V::String,
     "the parameters' dtype; DeepSpeed requires it to match the fp16 / bf16 block, which zerotrain reads"},
    {"data_types", "buffer_dtype", C::Compat, O::Never, V::String, "the dtype module buffers are cast to"},
};

bool enabled(const nlohmann::json& v) {
  return v.is_object() && v.contains("enabled") && v["enabled"].is_boolean() && v["enabled"].get<bool>();
}
double number_or(const nlohmann::json& v, double fallback) { return v.is_number() ? v.get<double>() : fallback; }

}  // namespace

const std::vector<DsKey>& ds_key_table() { return kTable; }

const DsKey* find_ds_key(const std::string& block, const std::string& key) {
  for (const auto& k : kTable)
    if (block == k.block && key == k.key) return &k;
  return nullptr;
}

std::vector<std::string> ds_keys_of(const std::string& block) {
  std::vector<std::string> v;
  for (const auto& k : kTable)
    if (block == k.block && k.cls != DsKeyClass::Ignored) v.push_back(k.key);
  return v;
}

bool ds_key_is_off(const DsKey& k, const nlohmann::json& v) {
  switch (k.off) {
    case DsOff::Never: return false;
    case DsOff::False: return v.is_null() || (v.is_boolean() && !v.get<bool>());
    case DsOff::True: return v.is_null() || (v.is_boolean() && v.get<bool>());
    case DsOff::EnabledFalse: return v.is_null() || !enabled(v);
    case DsOff::AtMostOne: return v.is_null() || number_or(v, 2) <= 1;
    case DsOff::AtMostZero: return v.is_null() || number_or(v, 1) <= 0;
    case DsOff::NullOrEmpty: return v.is_null() || (v.is_object() && v.empty()) || (v.is_array() && v.empty());
    case DsOff::Custom:
      if (v.is_null() || (v.is_object() && v.empty())) return true;
      if (!v.is_object()) return false;
      if (std::string(k.key) == "compile")  // DeepCompile runs only with deepcompile: true
        return !(v.contains("deepcompile") && v["deepcompile"].is_boolean() && v["deepcompile"].get<bool>());
      if (std::string(k.key) == "tensor_parallel") {
        const double autotp = v.contains("autotp_size") ? number_or(v["autotp_size"], 2) : 0;
        double tp = 1;
        for (const char* alias : {"tp", "tensor_parallel"})
          if (v.contains(alias) && v[alias].is_object() && v[alias].contains("tp_size"))
            tp = number_or(v[alias]["tp_size"], 2);
        return autotp <= 1 && tp <= 1;
      }
      return false;
  }
  return false;
}

bool ds_key_kind_ok(const DsKey& k, const nlohmann::json& v) {
  if (v.is_null()) return true;
  switch (k.value) {
    case DsValue::Any: return true;
    case DsValue::Bool: return v.is_boolean();
    case DsValue::Int: return v.is_number_integer() || (v.is_number_float() && v.get<double>() == double(int64_t(v.get<double>())));
    case DsValue::Number: return v.is_number();
    case DsValue::String: return v.is_string();
    case DsValue::Object: return v.is_object();
  }
  return true;
}

}  // namespace zt
