// The GPT-2 block's forward as one sequence of Backend ops, shared by the training model (GPT2) and
// the generation decoder (GPT2Decoder). The attention is the caller's: the causal forward over every
// position in training, one new position against the key/value cache in generation.
#pragma once

#include <functional>

#include "kernels/backend.h"
#include "runtime/model/unit_layout.h"

namespace zt {

// Activations of one block's forward, N rows each (qkv 3C wide, fch and fch_gelu 4C, the rest C).
struct BlockForwardBuffers {
  void *ln1 = nullptr, *qkv = nullptr, *atty = nullptr, *r2 = nullptr, *ln2 = nullptr, *fch = nullptr,
       *fch_gelu = nullptr;
  float *ln1_mean = nullptr, *ln1_rstd = nullptr, *ln2_mean = nullptr, *ln2_rstd = nullptr;
};

// out = block(x) for N rows of C channels: LN1 → qkv → attention() (reads a.qkv, writes a.atty) →
// projection + residual → LN2 → GELU MLP + residual. `params` is the block unit's buffer (layout).
void gpt2_block_forward(Backend& backend, const UnitLayout& layout, const void* params, const void* x, void* out,
                        const BlockForwardBuffers& a, int N, int C, const std::function<void()>& attention);

}  // namespace zt
