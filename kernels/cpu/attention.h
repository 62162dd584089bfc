// CPU causal multi-head and grouped-query attention, tiled flash-style: a blocked online-softmax
// forward that saves only each row's log-sum-exp (plus the output), and a backward that recomputes
// the probabilities and accumulates dK, dV once per key/value head.
#pragma once

#include <cstddef>

namespace zt::cpu {

// THE ALGORITHM (the reference the CUDA flash kernel follows; no T×T matrix is ever stored)
//
// Shapes: NH query heads, NKV key/value heads (NKV divides NH; G = NH / NKV query heads share one),
// hs = C / NH. qkv [B, T, W] with W = (NH + 2·NKV)·hs packs per row q [NH, hs], k [NKV, hs] and
// v [NKV, hs] (NKV == NH: W = 3C, GPT-2's layout); out [B, T, C]. Query head h reads key/value
// head h / G. One (b, h) head at a time; scores s = (q · k) · scale with scale = 1/sqrt(hs);
// causal: key j is visible to query i only when j <= i.
//
// Tiles: queries in blocks of `q` rows [r0, r0+q), keys in blocks of `k` columns [c0, c0+k), both
// starting at 0 (the last block is shorter when the size does not divide T). For a query block only
// key blocks with c0 < r1 are visited (the rest is fully masked); inside a block, entries with
// column > row are masked (probability exactly 0; a row with no visible column in a block adds
// nothing to it).
//
// Forward, per query block (m: running max, l: running sum, acc: unnormalised output, per row):
//   m = -inf, l = 0, acc = 0
//   for each key block, in increasing c0:
//     S      = scale · Q_blk · K_blkᵀ                      [q × k], masked as above
//     m_new  = max(m, rowmax(S))
//     P      = exp(S - m_new)                              (masked entries 0)
//     alpha  = exp(m - m_new)                              (0 on the first visited block)
//     l      = alpha · l + rowsum(P)
//     acc    = alpha · acc + P · V_blk
//   O   = acc / l
//   LSE = m + log(l)                                      (natural log of Σ_j exp(s_ij))
//
// Saved for backward (`saved`, attention_saved_bytes() long, fp32):
//   [0, B·NH·T)            LSE, index (b·NH + h)·T + t
//   [B·NH·T, +B·T·C)       a copy of O in out's layout (the backward needs O for D and the
//                          Backend interface hands backward only `saved`)
//
// Backward (dO = dout), per (b, key/value head g), over its query heads h = g·G .. g·G + G − 1:
//   D_i = rowsum(dO_i ∘ O_i)  for each of those heads      [G, T] (= Σ_j P_ij · dP_ij)
//   for each key block, in increasing c0:       dK_blk = 0, dV_blk = 0
//     for each query head h of the group, in increasing h:
//     for each query block with r1 > c0, in increasing r0:
//       S   = scale · Q_blk · K_blkᵀ, masked;  P = exp(S - LSE_row)   (recomputed, exact softmax)
//       dV_blk += Pᵀ · dO_blk
//       dP  = dO_blk · V_blkᵀ
//       dS  = P ∘ (dP - D_row)                            (0 where masked)
//       dQ_blk += scale · dS · K_blk                       (added into dqkv's q part)
//       dK_blk += scale · dSᵀ · Q_blk
//     dqkv's k, v rows of this block += dK_blk, dV_blk
//
// With G = 1 (NKV == NH) this is exactly the multi-head algorithm, operation for operation.
//
// Determinism: forward tasks are (b, h, query block), backward tasks (b, g); each task owns the
// outputs it writes (dQ of its G heads, dK and dV of its key/value head) and sums in the fixed order
// above, so results depend on the tile sizes but never on the thread count. All gradients
// ACCUMULATE into dqkv (Backend convention).

struct AttentionTiles {
  int q = 64;  // query rows per block
  int k = 64;  // key columns per block
};
// The tiles the CPU backend uses.
inline constexpr AttentionTiles kAttentionTiles{64, 64};

// NKV = NH (multi-head) unless given; NKV must divide NH (std::invalid_argument otherwise).
size_t attention_saved_bytes(int B, int T, int C, int NH);
void attention_forward(float* out, float* saved, const float* qkv, int B, int T, int C, int NH,
                       AttentionTiles tiles = kAttentionTiles);
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* saved, int B, int T, int C,
                        int NH, AttentionTiles tiles = kAttentionTiles);
void attention_forward(float* out, float* saved, const float* qkv, int B, int T, int C, int NH, int NKV,
                       AttentionTiles tiles = kAttentionTiles);
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* saved, int B, int T, int C,
                        int NH, int NKV, AttentionTiles tiles = kAttentionTiles);

// Generation: the last of t cached positions attends to all t (Backend::attention_decode), cache rows
// packed as attention_forward's qkv (NH query heads, NKV key/value heads). One task per (b, h);
// scores, then softmax and the weighted sum of values in key order.
void attention_decode(float* out, const float* qkv_cache, int B, int Tmax, int t, int C, int NH, int NKV);

}  // namespace zt::cpu
