// Config -> PlanInput, and parsing of --params values.
#include "runtime/config/config_plan.h"

#include "runtime/config/zero_sizes.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

namespace zt {

PlanInput plan_input(const Config& c, int64_t params, const ModelConfig* model, int ranks_per_node) {
  PlanInput in;
  in.params = params;
  in.world_size = static_cast<int>(c.world_size.value);
  in.stage = static_cast<int>(c.zero_optimization.stage.value);
  in.precision = c.bf16.enabled.value ? DType::BF16 : c.fp16.enabled.value ? DType::F16 : DType::F32;
  const std::string& t = c.optimizer.type.value;
  if (const auto type = optimizer_type_of(c.optimizer)) in.optimizer = *type;
  in.sgd_momentum = t == "SGD" && c.optimizer.momentum.value > 0;
  auto dev = [](const std::string& d) {
    return d == "cpu" ? OffloadDevice::CPU : d == "nvme" ? OffloadDevice::NVMe : OffloadDevice::None;
  };
  const auto& z = c.zero_optimization;
  in.offload_optimizer = dev(z.offload_optimizer.device.value);
  in.offload_optimizer_ratio = z.offload_optimizer.ratio.value;
  in.offload_param = dev(z.offload_param.device.value);
  in.hpz_partition_size = int(std::max<int64_t>(1, z.hpz_partition_size.value));
  in.mics_shard_size = int(std::clamp<int64_t>(z.mics_shard_size.value, 0, INT32_MAX));
  in.ranks_per_node = ranks_per_node < 1 ? 1 : ranks_per_node;
  const ZeroSizes sizes = zero_sizes(z, c.world_size.value, model);
  in.reduce_bucket_size = sizes.reduce_bucket;
  in.allgather_bucket_size = sizes.allgather_bucket;
  in.stage3_prefetch_bucket_size = z.prefetch_bucket_size.value;
  in.stage3_max_live_parameters = z.max_live_parameters.value;
  in.sub_group_size = sizes.sub_group;
  in.optimizer_buffer_count = static_cast<int>(z.offload_optimizer.buffer_count.value);
  in.param_buffer_count = static_cast<int>(z.offload_param.buffer_count.value);
  in.param_buffer_size = z.offload_param.buffer_size.value;
  const auto& a = c.activation_checkpointing;
  in.activation_checkpointing = a.partition_activations.value || a.cpu_checkpointing.value || a.number_checkpoints.value.has_value();
  if (model) {
    in.micro_batch = c.train_micro_batch_size_per_gpu.value;
    in.seq_len = model->seq_len;
    in.hidden = model->dim;
    in.layers = model->layers;
    in.heads = model->heads;
    in.vocab = model->vocab;
    // DeepSpeed's largest module of transformers' Llama (the GPT-2 shapes derive their own): the
    // token embedding or LM head V·C, an MLP projection I·C, or q_proj / o_proj (H·hd)·C.
    if (model->llama())
      in.largest_layer_params = std::max({int64_t(model->vocab) * model->dim, int64_t(model->intermediate) * model->dim,
                                          model->attention_width() * model->dim});
  }
  return in;
}

bool parse_param_count(const std::string& text, int64_t& out) {
  if (text.empty()) return false;
  const char* s = text.c_str();
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (end == s || !std::isfinite(v) || v <= 0) return false;
  std::string suffix(end);
  double mult = 1;
  if (suffix.size() == 1) {
    switch (std::toupper(static_cast<unsigned char>(suffix[0]))) {
      case 'K': mult = 1e3; break;
      case 'M': mult = 1e6; break;
      case 'B': case 'G': mult = 1e9; break;
      case 'T': mult = 1e12; break;
      default: return false;
    }
  } else if (!suffix.empty()) {
    return false;
  }
  const double n = std::round(v * mult);
  if (n < 1 || n > 9e18) return false;
  out = static_cast<int64_t>(n);
  return true;
}

std::string plan_nvme_path(const Config& c) {
  const auto& z = c.zero_optimization;
  if (z.offload_optimizer.device.value == "nvme") return z.offload_optimizer.nvme_path.value;
  if (z.offload_param.device.value == "nvme") return z.offload_param.nvme_path.value;
  return "";
}

}  // namespace zt
