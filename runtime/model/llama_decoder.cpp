// LlamaDecoder: the new rows through Llama's embedding, blocks and final RMSNorm against the cache.
#include "runtime/model/llama_decoder.h"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/rope_table.h"

namespace zt {

LlamaDecoder::LlamaDecoder(const ModelConfig& config, Backend& backend, std::vector<const void*> unit_params,
                           int max_len)
    : Decoder("LlamaDecoder", config, backend, std::move(unit_params), max_len) {
  if (!config.llama()) throw std::invalid_argument("LlamaDecoder: model '" + config.name + "' is not a Llama config");
  if (const std::vector<std::string> bad = model_shape_problems(config); !bad.empty())
    throw std::invalid_argument("LlamaDecoder: model '" + config.name + "': " + bad.front());
  const size_t es = element_bytes();
  const size_t rows = size_t(max_len), C = size_t(config.dim), A = size_t(config.attention_width()),
               Q = size_t(config.qkv_rows()), I = size_t(config.intermediate);
  // The whole training table: row t is position t's rotation whatever the sequence's length.
  const RopeTable tab = rope_table(config.seq_len, config.head_width(), config.rope_theta, config.rope_scaling);
  const size_t table_bytes = tab.cos.size() * sizeof(float);
  rope_cos_ = static_cast<float*>(take(table_bytes));
  rope_sin_ = static_cast<float*>(take(table_bytes));
  backend.copy_to_device(rope_cos_, tab.cos.data(), table_bytes);
  backend.copy_to_device(rope_sin_, tab.sin.data(), table_bytes);
  for (int l = 0; l < config.layers; ++l) qkv_cache_.push_back(take_cache(rows * Q * es));
  acts_.ln1 = take(rows * C * es);
  acts_.rstd1 = static_cast<float*>(take(rows * sizeof(float)));
  acts_.atty = take(rows * A * es);
  acts_.r2 = take(rows * C * es);
  acts_.ln2 = take(rows * C * es);
  acts_.rstd2 = static_cast<float*>(take(rows * sizeof(float)));
  acts_.gate_up = take(rows * 2 * I * es);
  acts_.act = take(rows * I * es);
  attention_saved_ = take(backend.attention_saved_bytes(1, max_len, int(A), config.heads));
  x_ = take(rows * C * es);
  y_ = take(rows * C * es);
  lnf_ = take(C * es);
  lnf_rstd_ = static_cast<float*>(take(sizeof(float)));
}

const void* LlamaDecoder::forward_rows(int first, int n) {
  const int C = config_.dim, L = config_.layers, half = config_.head_width() / 2;
  const size_t es = element_bytes(), Q = size_t(config_.qkv_rows());
  backend_.embedding_forward(x_, tokens_, unit(0)("wte"), nullptr, 1, n, C);  // no position table
  const float* cos = rope_cos_ + size_t(first) * half;  // the new rows' positions first..
  const float* sin = rope_sin_ + size_t(first) * half;
  void* x = x_;
  void* y = y_;
  for (int l = 0; l < L; ++l) {
    LlamaBlockBuffers a = acts_;
    char* cache = static_cast<char*>(qkv_cache_[size_t(l)]);
    a.qkv = cache + size_t(first) * Q * es;  // the new rows' q, k, v land in the cache (rotated)
    llama_block_forward(backend_, config_, layouts_[size_t(l) + 1], params_[size_t(l) + 1], x, y, a, cos, sin, 1, n,
                        [&] { cached_attention(a.atty, attention_saved_, cache, first, n); });
    std::swap(x, y);
  }
  const void* last = static_cast<char*>(x) + size_t(n - 1) * C * es;
  backend_.rmsnorm_forward(lnf_, lnf_rstd_, last, unit(L + 1)("lnf_w"), 1, C, config_.norm_eps);
  return lnf_;
}

}  // namespace zt
