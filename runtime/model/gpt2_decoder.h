// GPT2Decoder: GPT-2's forward for generation (decoder.h): learned positions from the new rows'
// first position on, the shared block forward (gpt2_block.h) with each block's q, k, v written into
// its cache, and the final LayerNorm of the last row.
#pragma once

#include <vector>

#include "kernels/backend.h"
#include "runtime/model/decoder.h"
#include "runtime/model/gpt2_block.h"
#include "runtime/model/model_config.h"

namespace zt {

class GPT2Decoder final : public Decoder {
 public:
  // See Decoder's constructor.
  GPT2Decoder(const ModelConfig& config, Backend& backend, std::vector<const void*> unit_params, int max_len);

 private:
  const void* forward_rows(int first, int n) override;

  std::vector<void*> qkv_cache_;  // per block: [max_len, 3C], q, k, v of every position so far
  BlockForwardBuffers acts_;      // max_len rows; acts_.qkv points into the cache per block
  void* attention_saved_ = nullptr;
  void *x_ = nullptr, *y_ = nullptr, *lnf_ = nullptr;
  float *lnf_mean_ = nullptr, *lnf_rstd_ = nullptr;
};

}  // namespace zt
