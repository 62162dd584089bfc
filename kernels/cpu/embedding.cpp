// CPU token + position embedding (or token only, without a position table), forward and backward
// (fp32, deterministic for any thread count).
#include <algorithm>

#include "kernels/cpu/cpu_ops.h"

namespace zt::cpu {

void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                       int C) {
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < int64_t(B) * T; ++row) {
    const int t = int(row % T);
    const float* e = wte + int64_t(tokens[row]) * C;
    float* o = out + row * C;
    if (wpe) {
      const float* p = wpe + int64_t(t) * C;
      for (int c = 0; c < C; ++c) o[c] = e[c] + p[c];
    } else {
      for (int c = 0; c < C; ++c) o[c] = e[c];
    }
  }
}

void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B, int T,
                        int C) {
  // dwpe[t] += Σ_b dout[b,t]: one task per position, batches summed in order b = 0..B-1.
  if (dwpe) {
#pragma omp parallel for schedule(static)
    for (int t = 0; t < T; ++t) {
      float* d = dwpe + int64_t(t) * C;
      for (int b = 0; b < B; ++b) {
        const float* g = dout + (int64_t(b) * T + t) * C;
        for (int c = 0; c < C; ++c) d[c] += g[c];
      }
    }
  }
  // dwte[token] += dout[row]: rows may repeat a token, so split the work by channel chunk and
  // walk all rows in order inside each chunk (the same order for any thread count).
  const int chunks = (C + kChannelChunk - 1) / kChannelChunk;
  const int64_t N = int64_t(B) * T;
#pragma omp parallel for schedule(static)
  for (int ch = 0; ch < chunks; ++ch) {
    const int c0 = ch * kChannelChunk, c1 = std::min(C, c0 + kChannelChunk);
    for (int64_t row = 0; row < N; ++row) {
      float* d = dwte + int64_t(tokens[row]) * C;
      const float* g = dout + row * C;
      for (int c = c0; c < c1; ++c) d[c] += g[c];
    }
  }
}

}  // namespace zt::cpu
