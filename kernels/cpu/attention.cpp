// CPU tiled causal attention, multi-head and grouped-query (the algorithm is written out in
// attention.h): forward per (b, h, query block), backward per (b, key/value head); block products
// through single-threaded OpenBLAS sgemm.
#include "kernels/cpu/attention.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/vec_math.h"

namespace zt::cpu {

namespace {

void check_tiles(AttentionTiles tiles) {
  if (tiles.q < 1 || tiles.k < 1)
    throw std::invalid_argument("attention tiles must be >= 1, got q=" + std::to_string(tiles.q) +
                                " k=" + std::to_string(tiles.k));
}

void check_heads(int C, int NH, int NKV) {
  if (NH < 1 || NKV < 1 || NH % NKV != 0 || C % NH != 0)
    throw std::invalid_argument("attention: " + std::to_string(NKV) + " key/value heads must divide " +
                                std::to_string(NH) + " query heads, which must divide C=" + std::to_string(C));
}

// What forward and backward derive from the shapes, after checking them: head size, tiles, query
// heads per key/value head, the score scale, the qkv row (3C when NKV == NH), the key and value
// offsets in it, and the query tiles per head.
struct HeadLayout {
  int hs, tq, tk, G;
  float scale;
  int64_t C3, koff, voff;
  int nq;
};

HeadLayout head_layout(int T, int C, int NH, int NKV, AttentionTiles tiles) {
  check_tiles(tiles);
  check_heads(C, NH, NKV);
  const int hs = C / NH;
  return {hs,
          tiles.q,
          tiles.k,
          NH / NKV,
          1.0f / std::sqrt(float(hs)),
          int64_t(NH + 2 * NKV) * hs,
          int64_t(NH) * hs,
          int64_t(NH + NKV) * hs,
          (T + tiles.q - 1) / tiles.q};
}

// C[M,N] = alpha · A[M,K] · op(B) + beta · C (row-major; B is [N,K] when trans_b, else [K,N]).
inline void gemm_nn_nt(bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                       int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb,
              beta, C, ldc);
}
// C[M,N] = alpha · A[K,M]ᵀ · B[K,N] + beta · C.
inline void gemm_tn(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                    float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Columns of row `row` visible in the key block starting at c0 with nc columns (0 .. nc).
ZT_SIMD_INLINE int visible(int row, int c0, int nc) { return std::clamp(row - c0 + 1, 0, nc); }

// Forward, one block of scores s [nr × nc] (rows tk apart) for query rows r0.. and keys c0..:
// mask, online-softmax update of m, l and the accumulator rows, s becomes P = exp(s - m_new).
ZT_SIMD_INLINE void online_softmax_tile_body(float* s, int tk, int nr, int nc, int r0, int c0, float* m, float* l,
                                             float* acc, int hs) {
  for (int i = 0; i < nr; ++i) {
    float* si = s + size_t(i) * tk;
    const int lim = visible(r0 + i, c0, nc);
    if (lim == 0) {
      for (int c = 0; c < nc; ++c) si[c] = 0.f;
      continue;
    }
    const float mx = vm::max_of(si, lim, m[i]);
    const float alpha = std::exp(m[i] - mx);  // 0 on the first visited block (m = -inf)
    const float sum = vm::exp_shifted_sum(si, lim, mx, si);
    for (int c = lim; c < nc; ++c) si[c] = 0.f;
    l[i] = alpha * l[i] + sum;
    m[i] = mx;
    float* ai = acc + size_t(i) * hs;
#pragma omp simd
    for (int d = 0; d < hs; ++d) ai[d] = ai[d] * alpha;
  }
}

// Backward: s [nr × nc] scores -> P = exp(s - LSE_row), masked entries 0.
ZT_SIMD_INLINE void probs_tile_body(float* p, int tk, int nr, int nc, int r0, int c0, const float* lse) {
  for (int i = 0; i < nr; ++i) {
    float* pi = p + size_t(i) * tk;
    const int lim = visible(r0 + i, c0, nc);
    const float li = lse[r0 + i];
#pragma omp simd
    for (int c = 0; c < lim; ++c) pi[c] = vm::exp(pi[c] - li);
    for (int c = lim; c < nc; ++c) pi[c] = 0.f;
  }
}

// Backward: dP [nr × nc] -> dS = P ∘ (dP - D_row).
ZT_SIMD_INLINE void dscores_tile_body(float* ds, const float* p, int tk, int nr, int nc, const float* D) {
  for (int i = 0; i < nr; ++i) {
    const float* pi = p + size_t(i) * tk;
    float* di = ds + size_t(i) * tk;
    const float Di = D[i];
#pragma omp simd
    for (int c = 0; c < nc; ++c) di[c] = pi[c] * (di[c] - Di);
  }
}

// D_t = dO_t · O_t for T rows (C apart), hs wide.
ZT_SIMD_INLINE void rowdot_body(float* D, const float* g, const float* o, int T, int64_t C, int hs) {
  for (int t = 0; t < T; ++t) {
    const float* gt = g + t * C;
    const float* ot = o + t * C;
    float d = 0.f;
#pragma omp simd reduction(+ : d)
    for (int i = 0; i < hs; ++i) d += gt[i] * ot[i];
    D[t] = d;
  }
}

ZT_SIMD_DISPATCH(online_softmax_tile,
                 (float* s, int tk, int nr, int nc, int r0, int c0, float* m, float* l, float* acc, int hs),
                 (s, tk, nr, nc, r0, c0, m, l, acc, hs))
ZT_SIMD_DISPATCH(probs_tile, (float* p, int tk, int nr, int nc, int r0, int c0, const float* lse),
                 (p, tk, nr, nc, r0, c0, lse))
ZT_SIMD_DISPATCH(dscores_tile, (float* ds, const float* p, int tk, int nr, int nc, const float* D),
                 (ds, p, tk, nr, nc, D))
ZT_SIMD_DISPATCH(rowdot, (float* D, const float* g, const float* o, int T, int64_t C, int hs), (D, g, o, T, C, hs))

}  // namespace

size_t attention_saved_bytes(int B, int T, int C, int NH) {
  return (size_t(B) * NH * T + size_t(B) * T * C) * sizeof(float);
}

void attention_forward(float* out, float* saved, const float* qkv, int B, int T, int C, int NH,
                       AttentionTiles tiles) {
  attention_forward(out, saved, qkv, B, T, C, NH, NH, tiles);
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* saved, int B, int T, int C,
                        int NH, AttentionTiles tiles) {
  attention_backward(dqkv, dout, qkv, saved, B, T, C, NH, NH, tiles);
}

void attention_forward(float* out, float* saved, const float* qkv, int B, int T, int C, int NH, int NKV,
                       AttentionTiles tiles) {
  const auto [hs, tq, tk, G, scale, C3, koff, voff, nq] = head_layout(T, C, NH, NKV, tiles);
  float* lse = saved;
  float* o_saved = saved + int64_t(B) * NH * T;
  const int64_t tasks = int64_t(B) * NH * nq;
#pragma omp parallel
  {
    std::vector<float> s(size_t(tq) * tk), acc(size_t(tq) * hs), m(static_cast<size_t>(tq)),
        l(static_cast<size_t>(tq));
    // Dynamic scheduling balances the causal triangle; each task's result is independent of it.
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int qb = nq - 1 - int(task % nq);  // longest query blocks first
      const int h = int((task / nq) % NH), b = int(task / (int64_t(nq) * NH));
      const int r0 = qb * tq, r1 = std::min(T, r0 + tq), nr = r1 - r0;
      const float* row0 = qkv + int64_t(b) * T * C3;
      const float* Q = row0 + h * hs + r0 * C3;
      const float* kv = row0 + (h / G) * hs;  // this query head's key/value head
      std::fill(m.begin(), m.end(), -INFINITY);
      std::fill(l.begin(), l.end(), 0.f);
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int c0 = 0; c0 < r1; c0 += tk) {
        const int nc = std::min(tk, r1 - c0);  // columns >= r1 are masked for every row here
        const float* K = kv + koff + c0 * C3;
        const float* V = kv + voff + c0 * C3;
        gemm_nn_nt(true, nr, nc, hs, scale, Q, int(C3), K, int(C3), 0.f, s.data(), tk);
        online_softmax_tile(s.data(), tk, nr, nc, r0, c0, m.data(), l.data(), acc.data(), hs);
        gemm_nn_nt(false, nr, hs, nc, 1.f, s.data(), tk, V, int(C3), 1.f, acc.data(), hs);
      }
      for (int i = 0; i < nr; ++i) {
        const int t = r0 + i;
        const float inv = 1.0f / l[size_t(i)];
        const float* ai = acc.data() + size_t(i) * hs;
        float* o = out + (int64_t(b) * T + t) * C + h * hs;
        float* os = o_saved + (int64_t(b) * T + t) * C + h * hs;
        for (int d = 0; d < hs; ++d) os[d] = o[d] = ai[d] * inv;
        lse[(int64_t(b) * NH + h) * T + t] = m[size_t(i)] + std::log(l[size_t(i)]);
      }
    }
  }
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* saved, int B, int T, int C,
                        int NH, int NKV, AttentionTiles tiles) {
  const auto [hs, tq, tk, G, scale, C3, koff, voff, nq] = head_layout(T, C, NH, NKV, tiles);
  const float* lse_all = saved;
  const float* o_saved = saved + int64_t(B) * NH * T;
  const int64_t tasks = int64_t(B) * NKV;
#pragma omp parallel
  {
    std::vector<float> p(size_t(tq) * tk), ds(size_t(tq) * tk), dk(size_t(tk) * hs), dv(size_t(tk) * hs),
        D(size_t(G) * size_t(T));
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int g = int(task % NKV), b = int(task / NKV);
      const float* row0 = qkv + int64_t(b) * T * C3;
      float* drow0 = dqkv + int64_t(b) * T * C3;
      const float* kvbase = row0 + g * hs;
      float* dkvbase = drow0 + g * hs;
      for (int j = 0; j < G; ++j) {
        const int h = g * G + j;
        rowdot(D.data() + size_t(j) * T, dout + int64_t(b) * T * C + h * hs, o_saved + int64_t(b) * T * C + h * hs,
               T, C, hs);
      }
      for (int c0 = 0; c0 < T; c0 += tk) {
        const int nc = std::min(tk, T - c0);
        const float* K = kvbase + koff + c0 * C3;
        const float* V = kvbase + voff + c0 * C3;
        std::fill(dk.begin(), dk.end(), 0.f);
        std::fill(dv.begin(), dv.end(), 0.f);
        for (int j = 0; j < G; ++j) {
          const int h = g * G + j;
          const float* base = row0 + h * hs;
          float* dbase = drow0 + h * hs;
          const float* gbase = dout + int64_t(b) * T * C + h * hs;
          const float* lse = lse_all + (int64_t(b) * NH + h) * T;
          const float* Dh = D.data() + size_t(j) * T;
          for (int qb = c0 / tq; qb < nq; ++qb) {
            const int r0 = qb * tq, r1 = std::min(T, r0 + tq), nr = r1 - r0;
            const float* Q = base + r0 * C3;
            const float* Gr = gbase + int64_t(r0) * C;
            gemm_nn_nt(true, nr, nc, hs, scale, Q, int(C3), K, int(C3), 0.f, p.data(), tk);
            probs_tile(p.data(), tk, nr, nc, r0, c0, lse);
            gemm_tn(nc, hs, nr, 1.f, p.data(), tk, Gr, C, 1.f, dv.data(), hs);             // dV += Pᵀ dO
            gemm_nn_nt(true, nr, nc, hs, 1.f, Gr, C, V, int(C3), 0.f, ds.data(), tk);      // dP = dO Vᵀ
            dscores_tile(ds.data(), p.data(), tk, nr, nc, Dh + r0);
            gemm_nn_nt(false, nr, hs, nc, scale, ds.data(), tk, K, int(C3), 1.f, dbase + r0 * C3, int(C3));  // dQ
            gemm_tn(nc, hs, nr, scale, ds.data(), tk, Q, int(C3), 1.f, dk.data(), hs);                      // dK
          }
        }
        for (int j = 0; j < nc; ++j) {
          float* dkr = dkvbase + (c0 + j) * C3 + koff;
          float* dvr = dkvbase + (c0 + j) * C3 + voff;
          const float* a = dk.data() + size_t(j) * hs;
          const float* v = dv.data() + size_t(j) * hs;
          for (int i = 0; i < hs; ++i) {
            dkr[i] += a[i];
            dvr[i] += v[i];
          }
        }
      }
    }
  }
}

void attention_decode(float* out, const float* qkv_cache, int B, int Tmax, int t, int C, int NH, int NKV) {
  if (t < 1 || t > Tmax || NH < 1 || C % NH != 0 || NKV < 1 || NH % NKV != 0)
    throw std::invalid_argument("attention_decode: t=" + std::to_string(t) + " outside 1..Tmax=" +
                                std::to_string(Tmax) + ", or C=" + std::to_string(C) + " not divisible by NH=" +
                                std::to_string(NH) + ", or NKV=" + std::to_string(NKV) + " not dividing NH");
  const int hs = C / NH, group = NH / NKV;
  const int64_t W = int64_t(NH + 2 * NKV) * hs;  // one cached row: q, k, v
  const int64_t k_at = C, v_at = C + int64_t(NKV) * hs;
  const float scale = 1.0f / std::sqrt(float(hs));
#pragma omp parallel
  {
    std::vector<float> scores(static_cast<size_t>(t));
#pragma omp for schedule(static)
    for (int bh = 0; bh < B * NH; ++bh) {
      const int b = bh / NH, h = bh % NH, kvh = h / group;
      const float* seq = qkv_cache + int64_t(b) * Tmax * W;
      const float* q = seq + int64_t(t - 1) * W + int64_t(h) * hs;
      float max_score = -INFINITY;
      for (int j = 0; j < t; ++j) {
        const float* k = seq + int64_t(j) * W + k_at + int64_t(kvh) * hs;
        float dot = 0.f;
        for (int i = 0; i < hs; ++i) dot += q[i] * k[i];
        scores[size_t(j)] = dot * scale;
        max_score = std::max(max_score, scores[size_t(j)]);
      }
      float sum = 0.f;
      for (int j = 0; j < t; ++j) {
        scores[size_t(j)] = std::exp(scores[size_t(j)] - max_score);
        sum += scores[size_t(j)];
      }
      float* o = out + int64_t(b) * C + int64_t(h) * hs;
      for (int i = 0; i < hs; ++i) o[i] = 0.f;
      for (int j = 0; j < t; ++j) {
        const float* v = seq + int64_t(j) * W + v_at + int64_t(kvh) * hs;
        const float p = scores[size_t(j)] / sum;
        for (int i = 0; i < hs; ++i) o[i] += p * v[i];
      }
    }
  }
}

}  // namespace zt::cpu
