// The Llama block's forward as one sequence of Backend ops, shared by the training model (Llama)
// and the generation decoder (LlamaDecoder), as gpt2_block.h is for GPT-2. The attention is the
// caller's: the causal forward over every position in training, one new position against the
// key/value cache in generation; the rotation of q and k comes before it, at the rows' positions.
#pragma once

#include <functional>

#include "kernels/backend.h"
#include "runtime/model/model_config.h"
#include "runtime/model/unit_layout.h"

namespace zt {

// Activations of one block's forward, N = B·T rows each: ln1, r2, ln2 C wide, qkv (H + 2Hkv)·hd,
// atty H·hd, gate_up 2I, act I; rstd1 and rstd2 fp32 [N].
struct LlamaBlockBuffers {
  void* ln1 = nullptr;
  float* rstd1 = nullptr;
  void* qkv = nullptr;  // q and k rotated
  void* atty = nullptr;
  void* r2 = nullptr;   // x + attention branch
  void* ln2 = nullptr;
  float* rstd2 = nullptr;
  void* gate_up = nullptr;
  void* act = nullptr;  // silu(gate) ∘ up
};

// out = block(x) for B sequences of T rows: RMSNorm → qkv → RoPE on q and k (rope_cos / rope_sin are
// the table rows of the first position, kernels/rope_table.h) → attention() (reads a.qkv, writes
// a.atty) → o_proj + residual → RMSNorm → SwiGLU MLP + residual. `params` is the block unit's buffer.
void llama_block_forward(Backend& backend, const ModelConfig& config, const UnitLayout& layout, const void* params,
                         const void* x, void* out, const LlamaBlockBuffers& a, const float* rope_cos,
                         const float* rope_sin, int B, int T, const std::function<void()>& attention);

}  // namespace zt
