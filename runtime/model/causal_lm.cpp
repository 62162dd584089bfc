// The model factory by family, the activation-bytes formula by family, and the whole-model walks.
#include "runtime/model/causal_lm.h"

#include "runtime/model/gpt2.h"
#include "runtime/model/llama.h"

namespace zt {

std::unique_ptr<CausalLM> make_causal_lm(const ModelConfig& config, Backend& backend, ModelRunOptions options) {
  if (config.llama()) return std::make_unique<Llama>(config, backend, options);
  return std::make_unique<GPT2>(config, backend, options);
}

size_t causal_lm_activation_bytes_for(const ModelConfig& config, const ModelRunOptions& options, size_t element_bytes,
                                      size_t attention_saved) {
  if (config.llama()) return Llama::activation_bytes_for(config, options, element_bytes, attention_saved);
  return GPT2::activation_bytes_for(config, options, element_bytes, attention_saved);
}

float forward_only(CausalLM& model, const std::vector<void*>& params) {
  for (int u = 0; u < model.num_units(); ++u)
    model.forward_unit(u, params[size_t(u)], model.needs_embedding_unit(u) ? params[0] : nullptr);
  return model.loss();
}

float forward_backward(CausalLM& model, const std::vector<void*>& params, const std::vector<void*>& grads) {
  const float l = forward_only(model, params);
  for (int u = model.num_units() - 1; u >= 0; --u) {
    const bool tied = model.needs_embedding_unit(u);
    model.backward_unit(u, params[size_t(u)], grads[size_t(u)], tied ? params[0] : nullptr,
                        tied ? grads[0] : nullptr);
  }
  return l;
}

}  // namespace zt
