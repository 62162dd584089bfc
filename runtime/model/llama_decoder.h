// LlamaDecoder: Llama's forward for generation (decoder.h): token embedding, the shared block
// forward (llama_block.h) with q and k rotated at the new rows' positions (the training table's
// rows) and each block's q, k, v written into its cache — grouped-query: the cache's key/value part
// holds NKV heads, and query head h reads key/value head h / (NH / NKV) — and the final RMSNorm of
// the last row.
#pragma once

#include <vector>

#include "kernels/backend.h"
#include "runtime/model/decoder.h"
#include "runtime/model/llama_block.h"
#include "runtime/model/model_config.h"

namespace zt {

class LlamaDecoder final : public Decoder {
 public:
  // See Decoder's constructor; std::invalid_argument when config is not a Llama shape.
  LlamaDecoder(const ModelConfig& config, Backend& backend, std::vector<const void*> unit_params, int max_len);

 private:
  const void* forward_rows(int first, int n) override;

  float *rope_cos_ = nullptr, *rope_sin_ = nullptr;  // fp32 [seq_len, head_dim / 2], training's table
  std::vector<void*> qkv_cache_;  // per block: [max_len, (H + 2Hkv)·hd], q, k, v of every position so far
  LlamaBlockBuffers acts_;        // max_len rows; acts_.qkv points into the cache per block
  void* attention_saved_ = nullptr;
  void *x_ = nullptr, *y_ = nullptr, *lnf_ = nullptr;
  float* lnf_rstd_ = nullptr;
};

}  // namespace zt
