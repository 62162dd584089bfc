// CausalLMBase: the shared allocations, batch, checks and losses of the causal-LM families.
#include "runtime/model/causal_lm_base.h"

#include <stdexcept>
#include <string>

namespace zt {

CausalLMBase::CausalLMBase(const char* family, const ModelConfig& config, Backend& backend, ModelRunOptions options)
    : family_(family), config_(config), backend_(backend), options_(options), layouts_(build_unit_layouts(config)) {}

CausalLMBase::~CausalLMBase() {
  for (void* p : allocations_) backend_.free(p);
}

void* CausalLMBase::take(size_t bytes) {
  void* p = backend_.alloc(bytes);
  allocations_.push_back(p);
  activation_bytes_ += bytes;
  return p;
}

void CausalLMBase::take_batch() {
  if (options_.max_batch < 1) throw std::invalid_argument("ModelRunOptions.max_batch must be >= 1");
  tokens_ = static_cast<int32_t*>(take(max_rows() * sizeof(int32_t)));
  targets_ = static_cast<int32_t*>(take(max_rows() * sizeof(int32_t)));
}

void CausalLMBase::take_head_outputs() {
  const size_t logit_bytes = max_rows() * size_t(config_.padded_vocab()) * element_bytes();
  logits_ = take(logit_bytes);
  if (options_.keep_logits) kept_logits_ = take(logit_bytes);
  losses_ = static_cast<float*>(take(max_rows() * sizeof(float)));
}

void CausalLMBase::check_taken(size_t counted) const {
  if (activation_bytes_ != counted)
    throw std::logic_error(std::string(family_) + ": allocated " + std::to_string(activation_bytes_) +
                           " activation bytes, activation_bytes_for counts " + std::to_string(counted));
}

void CausalLMBase::set_batch(const int32_t* tokens, const int32_t* targets, int B, int T, float dloss) {
  const std::string who(family_);
  if (B < 1 || B > options_.max_batch || T < 1 || T > config_.seq_len)
    throw std::invalid_argument(who + "::set_batch: B=" + std::to_string(B) + " T=" + std::to_string(T) +
                                " outside 1..max_batch=" + std::to_string(options_.max_batch) +
                                ", 1..seq_len=" + std::to_string(config_.seq_len));
  const size_t n = size_t(B) * size_t(T);
  int64_t valid = 0;
  for (size_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= config_.vocab || targets[i] >= config_.vocab)
      throw std::invalid_argument(who + "::set_batch: token or target id outside the vocabulary at position " +
                                  std::to_string(i));
    valid += targets[i] >= 0;
  }
  valid_targets_ = valid;
  backend_.copy_to_device(tokens_, tokens, n * sizeof(int32_t));
  backend_.copy_to_device(targets_, targets, n * sizeof(int32_t));
  B_ = B;
  T_ = T;
  dloss_ = dloss;
}

void CausalLMBase::check_unit(int u, const void* params) const {
  const std::string who(family_);
  if (u < 0 || u >= num_units()) throw std::out_of_range(who + ": unit " + std::to_string(u) + " out of range");
  if (!params) throw std::invalid_argument(who + ": null parameter buffer for unit " + std::to_string(u));
  if (B_ == 0) throw std::logic_error(who + ": set_batch() must come before forward/backward");
}

void CausalLMBase::check_grads(int u, const void* grads) const {
  if (!grads) throw std::invalid_argument(std::string(family_) + ": null gradient buffer for unit " + std::to_string(u));
}

const void* CausalLMBase::head_matrix(const void* params, const void* embedding_params, const char* what) const {
  if (!config_.tied_embeddings) return UnitView{layouts_.back(), (char*)params, element_bytes()}("lm_head_w");
  if (!embedding_params)
    throw std::invalid_argument(std::string(family_) + ": the tied head's " + what +
                                " needs the embedding unit's parameters");
  return UnitView{layouts_[0], (char*)embedding_params, element_bytes()}("wte");
}

void* CausalLMBase::head_matrix_grad(void* grads, void* embedding_grads) const {
  if (!config_.tied_embeddings) return UnitView{layouts_.back(), (char*)grads, element_bytes()}("lm_head_w");
  if (!embedding_grads)
    throw std::invalid_argument(std::string(family_) + ": the tied head's backward needs the embedding unit's gradients");
  return UnitView{layouts_[0], (char*)embedding_grads, element_bytes()}("wte");
}

void CausalLMBase::head_forward(const void* normed, const void* lm_matrix) {
  const int N = B_ * T_, C = config_.dim, V = config_.vocab, Vp = config_.padded_vocab();
  backend_.lm_head_forward(logits_, normed, lm_matrix, N, C, V, Vp);
  if (kept_logits_) backend_.copy(kept_logits_, logits_, size_t(N) * size_t(Vp) * element_bytes());
  backend_.crossentropy_forward_backward(losses_, logits_, logits_, targets_, N, V, Vp, dloss_);
}

double CausalLMBase::loss_sum() {
  const size_t n = size_t(B_) * size_t(T_);
  std::vector<float> host(n);
  backend_.synchronize();
  backend_.copy_to_host(host.data(), losses_, n * sizeof(float));
  double sum = 0.0;
  for (float x : host) sum += x;
  return sum;
}

float CausalLMBase::loss() { return valid_targets_ > 0 ? float(loss_sum() / double(valid_targets_)) : 0.f; }

}  // namespace zt
