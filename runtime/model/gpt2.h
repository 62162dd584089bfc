// GPT2: the GPT-2 model run unit by unit on a Backend. The caller owns every parameter and gradient
// buffer and passes a unit's pointers to each call, so an engine can gather or shard them in between.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "runtime/model/causal_lm_base.h"
#include "runtime/model/model_config.h"
#include "runtime/model/unit_layout.h"

namespace zt {

// The CausalLM walk contract (causal_lm.h) for GPT-2: learned positions, pre-LN blocks with
// LayerNorm, multi-head attention and a GELU MLP of 4C, biases everywhere.
class GPT2 final : public CausalLMBase {
 public:
  GPT2(const ModelConfig& config, Backend& backend, ModelRunOptions options = {});
  ~GPT2() override;  // out of line: BlockActs is complete there

  void forward_unit(int u, const void* params, const void* embedding_params = nullptr) override;
  void backward_unit(int u, const void* params, void* grads, const void* embedding_params = nullptr,
                     void* embedding_grads = nullptr) override;
  // What a model of `config` run with `options` allocates, without allocating: element_bytes is the
  // backend's working type, attention_saved its attention_saved_bytes(max_batch, seq_len, dim,
  // heads). The memory plan counts this; every constructor checks its allocations against it.
  static size_t activation_bytes_for(const ModelConfig& config, const ModelRunOptions& options, size_t element_bytes,
                                     size_t attention_saved);

 private:
  struct BlockActs;
  void block_forward(int l, const void* params, BlockActs& a);

  std::vector<void*> resid_;    // resid_[0] embedding output, resid_[l+1] block l's output: [B, T, C]
  std::vector<std::unique_ptr<BlockActs>> blocks_;  // one per block, or one shared when checkpointing
  // head: the final LayerNorm (logits and losses are the base's)
  void* lnf_ = nullptr;
  float *lnf_mean_ = nullptr, *lnf_rstd_ = nullptr;
  // gradient scratch
  void *dresid_ = nullptr, *dln_ = nullptr, *datty_ = nullptr, *dqkv_ = nullptr, *dfch_ = nullptr;
};

}  // namespace zt
