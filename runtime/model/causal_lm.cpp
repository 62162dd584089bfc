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

int64_t check_batch(const char* who, const ModelConfig& config, int max_batch, const int32_t* tokens,
                    const int32_t* targets, int B, int T) {
  if (B < 1 || B > max_batch || T < 1 || T > config.seq_len)
    throw std::invalid_argument(std::string(who) + "::set_batch: B=" + std::to_string(B) + " T=" + std::to_string(T) +
                                " outside 1..max_batch=" + std::to_string(max_batch) +
                                ", 1..seq_len=" + std::to_string(config.seq_len));
  const size_t n = size_t(B) * size_t(T);
  int64_t valid = 0;
  for (size_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= config.vocab || targets[i] >= config.vocab)
      throw std::invalid_argument(std::string(who) + "::set_batch: token or target id outside the vocabulary at position " +
                                  std::to_string(i));
    valid += targets[i] >= 0;
  }
  return valid;
}

void check_unit_call(const char* who, int u, int num_units, const void* params, int B) {
  if (u < 0 || u >= num_units) throw std::out_of_range(std::string(who) + ": unit " + std::to_string(u) + " out of range");
  if (!params) throw std::invalid_argument(std::string(who) + ": null parameter buffer for unit " + std::to_string(u));
  if (B == 0) throw std::logic_error(std::string(who) + ": set_batch() must come before forward/backward");
}

double sum_of_losses(Backend& backend, const float* losses, size_t n) {
  std::vector<float> host(n);
  backend.synchronize();
  backend.copy_to_host(host.data(), losses, n * sizeof(float));
  double sum = 0.0;
  for (float x : host) sum += x;
  return sum;
}

}  // namespace zt
