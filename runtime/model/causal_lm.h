// CausalLM: what the engine, the training loop and the memory plan call on a decoder-only language
// model run unit by unit on a Backend (GPT2 and Llama implement it over CausalLMBase,
// causal_lm_base.h), the factory choosing the class by ModelConfig::family, and the whole-model
// walks used by tests and the single-process loop.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "runtime/model/model_config.h"
#include "runtime/model/unit_layout.h"

namespace zt {

struct ModelRunOptions {
  int max_batch = 1;                    // micro-batch rows B the activations are sized for
  bool checkpoint_activations = false;  // keep only each block's input; recompute it in backward
  bool keep_logits = false;             // keep a copy of the logits for logits() (tests, inspection)
};

// Walk order of one micro-batch (u = 0 embedding, 1..L blocks, L+1 head):
//   set_batch(tokens, targets, B, T, dloss);
//   for u = 0 .. L+1:  forward_unit(u, params[u], params[0] when u is the tied head);
//   loss();                                 // mean cross-entropy of this micro-batch
//   for u = L+1 .. 0:  backward_unit(u, params[u], grads[u], params[0], grads[0] when u is the tied head);
// Parameter buffers hold act_dtype() values laid out as layout(u); gradients use the same layout and
// ACCUMULATE (zero them yourself at the start of a step). The head's forward computes the loss and
// the logits' gradient together (scaled by dloss, e.g. 1/grad_accum); backward_unit must follow
// every forward walk before the next set_batch, except for evaluation-only walks.
class CausalLM {
 public:
  virtual ~CausalLM() = default;

  virtual const ModelConfig& config() const = 0;
  virtual const ModelRunOptions& options() const = 0;
  virtual Backend& backend() = 0;
  virtual int num_units() const = 0;
  virtual const UnitLayout& layout(int u) const = 0;
  virtual const std::vector<UnitLayout>& layouts() const = 0;
  // True when unit u reads (forward) and writes (backward) the embedding unit's buffers too.
  virtual bool needs_embedding_unit(int u) const = 0;

  // Host tokens and targets, B*T each (B <= max_batch, 1 <= T <= seq_len); targets < 0 are ignored.
  virtual void set_batch(const int32_t* tokens, const int32_t* targets, int B, int T, float dloss = 1.0f) = 0;
  virtual void forward_unit(int u, const void* params, const void* embedding_params = nullptr) = 0;
  virtual void backward_unit(int u, const void* params, void* grads, const void* embedding_params = nullptr,
                             void* embedding_grads = nullptr) = 0;
  // Mean loss over the valid targets of the last head forward (synchronises the backend).
  virtual float loss() = 0;
  // Sum of the per-position losses of the last head forward, in position order (ignored targets add 0).
  virtual double loss_sum() = 0;
  // Logits of the last head forward (act_dtype), rows config().padded_vocab() apart, the first
  // vocab columns real, the rest 0. Only with ModelRunOptions::keep_logits (else nullptr): the head
  // overwrites its logits with their gradient in place.
  virtual const void* logits() const = 0;
  // Number of targets >= 0 in the current batch.
  virtual int64_t valid_targets() const = 0;
  // Bytes of activation and scratch memory this model holds on the backend.
  virtual size_t activation_bytes() const = 0;
};

// The model class of config.family (GPT2 or Llama) on `backend`.
std::unique_ptr<CausalLM> make_causal_lm(const ModelConfig& config, Backend& backend, ModelRunOptions options = {});

// What make_causal_lm(config, ...) allocates, without allocating (GPT2::activation_bytes_for or
// Llama::activation_bytes_for): element_bytes is the backend's working type, attention_saved its
// attention_saved_bytes(max_batch, seq_len, config.attention_width(), heads).
size_t causal_lm_activation_bytes_for(const ModelConfig& config, const ModelRunOptions& options, size_t element_bytes,
                                      size_t attention_saved);

// Convenience walks over all units with whole-model buffers (tests and the single-process loop).
// params[u] / grads[u] point at unit u's buffers. Returns the micro-batch's mean loss.
float forward_backward(CausalLM& model, const std::vector<void*>& params, const std::vector<void*>& grads);
float forward_only(CausalLM& model, const std::vector<void*>& params);

}  // namespace zt
