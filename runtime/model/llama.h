// Llama: transformers' LlamaForCausalLM run unit by unit on a Backend under the CausalLM walk
// contract (causal_lm.h): token embedding without positions, pre-norm blocks with RMSNorm, RoPE on
// q and k, grouped-query attention and a SwiGLU MLP, no biases, a tied or untied LM head.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "runtime/model/causal_lm_base.h"
#include "runtime/model/model_config.h"
#include "runtime/model/unit_layout.h"

namespace zt {

class Llama final : public CausalLMBase {
 public:
  // Throws std::invalid_argument when config is not a Llama shape (model_shape_problems).
  Llama(const ModelConfig& config, Backend& backend, ModelRunOptions options = {});
  ~Llama() override;  // out of line: BlockActs is complete there

  void forward_unit(int u, const void* params, const void* embedding_params = nullptr) override;
  void backward_unit(int u, const void* params, void* grads, const void* embedding_params = nullptr,
                     void* embedding_grads = nullptr) override;
  // What a Llama of `config` run with `options` allocates, without allocating: element_bytes is
  // the backend's working type, attention_saved its attention_saved_bytes(max_batch, seq_len,
  // attention_width, heads). The memory plan counts this; the constructor checks its allocations
  // against it.
  static size_t activation_bytes_for(const ModelConfig& config, const ModelRunOptions& options, size_t element_bytes,
                                     size_t attention_saved);

 private:
  struct BlockActs;
  void block_forward(int l, const void* params, BlockActs& a);

  float *rope_cos_ = nullptr, *rope_sin_ = nullptr;  // fp32 [seq_len, head_dim / 2], built once
  std::vector<void*> resid_;    // resid_[0] embedding output, resid_[l+1] block l's output: [B, T, C]
  std::vector<std::unique_ptr<BlockActs>> blocks_;  // one per block, or one shared when checkpointing
  // head: final RMSNorm (logits and losses are the base's)
  void* lnf_ = nullptr;
  float* lnf_rstd_ = nullptr;
  // gradient scratch: C, C, H·hd, (H + 2Hkv)·hd, 2I and I wide
  void *dresid_ = nullptr, *dln_ = nullptr, *datty_ = nullptr, *dqkv_ = nullptr, *dgate_up_ = nullptr,
       *dact_ = nullptr;
};

}  // namespace zt
