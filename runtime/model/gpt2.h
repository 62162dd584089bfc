// GPT2: the GPT-2 model run unit by unit on a Backend. The caller owns every parameter and gradient
// buffer and passes a unit's pointers to each call, so an engine can gather or shard them in between.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "runtime/model/causal_lm.h"
#include "runtime/model/model_config.h"
#include "runtime/model/unit_layout.h"

namespace zt {

// The CausalLM walk contract (causal_lm.h) for GPT-2: learned positions, pre-LN blocks with
// LayerNorm, multi-head attention and a GELU MLP of 4C, biases everywhere.
class GPT2 final : public CausalLM {
 public:
  GPT2(const ModelConfig& config, Backend& backend, ModelRunOptions options = {});
  ~GPT2();
  GPT2(const GPT2&) = delete;
  GPT2& operator=(const GPT2&) = delete;

  const ModelConfig& config() const override { return config_; }
  const ModelRunOptions& options() const override { return options_; }
  Backend& backend() override { return backend_; }
  int num_units() const override { return int(layouts_.size()); }
  const UnitLayout& layout(int u) const override { return layouts_.at(size_t(u)); }
  const std::vector<UnitLayout>& layouts() const override { return layouts_; }
  // True when unit u reads (forward) and writes (backward) the embedding unit's buffers too.
  bool needs_embedding_unit(int u) const override { return u == num_units() - 1 && config_.tied_embeddings; }

  // Host tokens and targets, B*T each (B <= max_batch, 1 <= T <= seq_len); targets < 0 are ignored.
  void set_batch(const int32_t* tokens, const int32_t* targets, int B, int T, float dloss = 1.0f) override;
  void forward_unit(int u, const void* params, const void* embedding_params = nullptr) override;
  void backward_unit(int u, const void* params, void* grads, const void* embedding_params = nullptr,
                     void* embedding_grads = nullptr) override;
  // Mean loss over the valid targets of the last head forward (synchronises the backend).
  float loss() override;
  // Sum of the per-position losses of the last head forward, in position order (ignored targets add 0).
  double loss_sum() override;
  // Logits of the last head forward (act_dtype), rows config().padded_vocab() apart, the first
  // vocab columns real, the rest 0. Only with ModelRunOptions::keep_logits (else nullptr): the head
  // overwrites its logits with their gradient in place.
  const void* logits() const override { return kept_logits_; }
  // Number of targets >= 0 in the current batch.
  int64_t valid_targets() const override { return valid_targets_; }
  // Bytes of activation and scratch memory this model holds on the backend.
  size_t activation_bytes() const override { return activation_bytes_; }
  // What a model of `config` run with `options` allocates, without allocating: element_bytes is the
  // backend's working type, attention_saved its attention_saved_bytes(max_batch, seq_len, dim,
  // heads). The memory plan counts this; every constructor checks its allocations against it.
  static size_t activation_bytes_for(const ModelConfig& config, const ModelRunOptions& options, size_t element_bytes,
                                     size_t attention_saved);

 private:
  struct BlockActs;
  void* take(size_t bytes);
  void block_forward(int l, const float* params, BlockActs& a);
  void check_unit(int u, const void* params) const;

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
  std::vector<float*> resid_;   // resid_[0] embedding output, resid_[l+1] block l's output: [B, T, C]
  std::vector<std::unique_ptr<BlockActs>> blocks_;  // one per block, or one shared when checkpointing
  // head
  // logits_ [B, T, padded_vocab]: the logits, then (in place) their gradient
  float *lnf_ = nullptr, *lnf_mean_ = nullptr, *lnf_rstd_ = nullptr, *logits_ = nullptr, *losses_ = nullptr;
  float* kept_logits_ = nullptr;  // keep_logits only
  // gradient scratch
  float *dresid_ = nullptr, *dln_ = nullptr, *datty_ = nullptr, *dqkv_ = nullptr, *dfch_ = nullptr;
};

}  // namespace zt
