// Llama: transformers' LlamaForCausalLM run unit by unit on a Backend under the CausalLM walk
// contract (causal_lm.h): token embedding without positions, pre-norm blocks with RMSNorm, RoPE on
// q and k, grouped-query attention and a SwiGLU MLP, no biases, a tied or untied LM head.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "runtime/model/causal_lm.h"
#include "runtime/model/model_config.h"
#include "runtime/model/unit_layout.h"

namespace zt {

class Llama final : public CausalLM {
 public:
  // Throws std::invalid_argument when config is not a Llama shape (model_shape_problems).
  Llama(const ModelConfig& config, Backend& backend, ModelRunOptions options = {});
  ~Llama() override;
  Llama(const Llama&) = delete;
  Llama& operator=(const Llama&) = delete;

  const ModelConfig& config() const override { return config_; }
  const ModelRunOptions& options() const override { return options_; }
  Backend& backend() override { return backend_; }
  int num_units() const override { return int(layouts_.size()); }
  const UnitLayout& layout(int u) const override { return layouts_.at(size_t(u)); }
  const std::vector<UnitLayout>& layouts() const override { return layouts_; }
  bool needs_embedding_unit(int u) const override { return u == num_units() - 1 && config_.tied_embeddings; }

  void set_batch(const int32_t* tokens, const int32_t* targets, int B, int T, float dloss = 1.0f) override;
  void forward_unit(int u, const void* params, const void* embedding_params = nullptr) override;
  void backward_unit(int u, const void* params, void* grads, const void* embedding_params = nullptr,
                     void* embedding_grads = nullptr) override;
  float loss() override;
  double loss_sum() override;
  const void* logits() const override { return kept_logits_; }
  int64_t valid_targets() const override { return valid_targets_; }
  size_t activation_bytes() const override { return activation_bytes_; }
  // What a Llama of `config` run with `options` allocates, without allocating: element_bytes is
  // the backend's working type, attention_saved its attention_saved_bytes(max_batch, seq_len,
  // attention_width, heads). The memory plan counts this; the constructor checks its allocations
  // against it.
  static size_t activation_bytes_for(const ModelConfig& config, const ModelRunOptions& options, size_t element_bytes,
                                     size_t attention_saved);

 private:
  struct BlockActs;
  void* take(size_t bytes);
  void block_forward(int l, const void* params, BlockActs& a);
  void check_unit(int u, const void* params) const;
  // The head's LM matrix: lm_head_w, or the embedding unit's wte when tied.
  const void* head_matrix(const void* params, const void* embedding_params, const char* what) const;

  ModelConfig config_;
  Backend& backend_;
  ModelRunOptions options_;
  std::vector<UnitLayout> layouts_;
  std::vector<void*> allocations_;
  size_t activation_bytes_ = 0;

  int B_ = 0, T_ = 0;
  float dloss_ = 1.0f;
  int64_t valid_targets_ = 0;
  int32_t* tokens_ = nullptr;   // [B, T] on the backend
  int32_t* targets_ = nullptr;  // [B, T]
  float *rope_cos_ = nullptr, *rope_sin_ = nullptr;  // fp32 [seq_len, head_dim / 2], built once
  std::vector<void*> resid_;    // resid_[0] embedding output, resid_[l+1] block l's output: [B, T, C]
  std::vector<std::unique_ptr<BlockActs>> blocks_;  // one per block, or one shared when checkpointing
  // head: final RMSNorm, logits_ [B, T, padded_vocab] (the logits, then in place their gradient)
  void *lnf_ = nullptr, *logits_ = nullptr, *kept_logits_ = nullptr;
  float *lnf_rstd_ = nullptr, *losses_ = nullptr;
  // gradient scratch: C, C, H·hd, (H + 2Hkv)·hd, 2I and I wide
  void *dresid_ = nullptr, *dln_ = nullptr, *datty_ = nullptr, *dqkv_ = nullptr, *dgate_up_ = nullptr,
       *dact_ = nullptr;
};

}  // namespace zt
