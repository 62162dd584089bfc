// CausalLMBase: what every decoder-only family shares under the CausalLM walk contract — the
// config, backend and unit layouts, the activation allocations (each counted against the family's
// activation_bytes_for), the batch on the backend with its checks, the unit-call checks, and the
// head's logits and per-position losses. A family (GPT2, Llama) adds its blocks' buffers and its
// forward and backward; its own constructor takes what it needs in its own order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "runtime/model/causal_lm.h"
#include "runtime/model/model_config.h"
#include "runtime/model/unit_layout.h"

namespace zt {

class CausalLMBase : public CausalLM {
 public:
  ~CausalLMBase() override;  // frees every allocation
  CausalLMBase(const CausalLMBase&) = delete;
  CausalLMBase& operator=(const CausalLMBase&) = delete;

  const ModelConfig& config() const override { return config_; }
  const ModelRunOptions& options() const override { return options_; }
  Backend& backend() override { return backend_; }
  int num_units() const override { return int(layouts_.size()); }
  const UnitLayout& layout(int u) const override { return layouts_.at(size_t(u)); }
  const std::vector<UnitLayout>& layouts() const override { return layouts_; }
  bool needs_embedding_unit(int u) const override { return u == num_units() - 1 && config_.tied_embeddings; }

  // B <= max_batch, 1 <= T <= seq_len and every id inside the vocabulary (std::invalid_argument
  // naming the position), then the batch copied to the backend.
  void set_batch(const int32_t* tokens, const int32_t* targets, int B, int T, float dloss = 1.0f) override;
  float loss() override;
  double loss_sum() override;
  const void* logits() const override { return kept_logits_; }
  int64_t valid_targets() const override { return valid_targets_; }
  size_t activation_bytes() const override { return activation_bytes_; }

 protected:
  // `family` names the class in every message ("GPT2", "Llama"). Allocates nothing: the family
  // checks its shape first, then takes its buffers, the batch's first.
  CausalLMBase(const char* family, const ModelConfig& config, Backend& backend, ModelRunOptions options);

  // `bytes` of backend memory held until the model is destroyed, counted in activation_bytes().
  void* take(size_t bytes);
  // The batch's token and target buffers (max_batch x seq_len each; max_batch >= 1 or
  // std::invalid_argument).
  void take_batch();
  // The head's outputs: logits [N, padded_vocab] (and their kept copy with keep_logits) and the fp32
  // per-position losses [N].
  void take_head_outputs();
  // What the family's activation_bytes_for counts must be what its constructor took (std::logic_error).
  void check_taken(size_t counted) const;
  // u a unit, params not null, and a batch set: std::out_of_range / invalid_argument / logic_error.
  void check_unit(int u, const void* params) const;
  // A backward call's gradient buffer is not null (std::invalid_argument).
  void check_grads(int u, const void* grads) const;
  // The head's LM matrix and its gradient: the head unit's lm_head_w, or the embedding unit's wte
  // when tied (std::invalid_argument naming the pass, `what`, when a tied head's call lacks the
  // embedding unit's buffers).
  const void* head_matrix(const void* params, const void* embedding_params, const char* what) const;
  void* head_matrix_grad(void* grads, void* embedding_grads) const;
  // The head after its final norm (`normed`, [N, C]): the logits over the padded vocabulary (kept
  // with keep_logits), then softmax, loss and d(loss)/d(logits) in one pass, the gradient written
  // over the logits.
  void head_forward(const void* normed, const void* lm_matrix);
  size_t element_bytes() const { return dtype_size(backend_.act_dtype()); }
  // Rows of the largest batch the buffers are sized for: max_batch x seq_len.
  size_t max_rows() const { return size_t(options_.max_batch) * size_t(config_.seq_len); }

  const char* family_;
  ModelConfig config_;
  Backend& backend_;
  ModelRunOptions options_;
  std::vector<UnitLayout> layouts_;

  int B_ = 0, T_ = 0;
  float dloss_ = 1.0f;
  int64_t valid_targets_ = 0;
  int32_t* tokens_ = nullptr;   // [B, T] on the backend
  int32_t* targets_ = nullptr;  // [B, T]
  void* logits_ = nullptr;      // [B, T, padded_vocab]: the logits, then (in place) their gradient
  void* kept_logits_ = nullptr; // keep_logits only
  float* losses_ = nullptr;     // [B, T] per-position cross-entropy

 private:
  std::vector<void*> allocations_;
  size_t activation_bytes_ = 0;
};

}  // namespace zt
