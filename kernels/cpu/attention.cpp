// CPU tiled causal attention (the algorithm is written out in attention.h): forward per (b, h,
// query block), backward per (b, h); block products through single-threaded OpenBLAS sgemm.
#include "kernels/cpu/attention.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace zt::cpu {

namespace {

void check_tiles(AttentionTiles tiles) {
  if (tiles.q < 1 || tiles.k < 1)
    throw std::invalid_argument("attention tiles must be >= 1, got q=" + std::to_string(tiles.q) +
                                " k=" + std::to_string(tiles.k));
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
inline int visible(int row, int c0, int nc) { return std::clamp(row - c0 + 1, 0, nc); }

}  // namespace

size_t attention_saved_bytes(int B, int T, int C, int NH) {
  return (size_t(B) * NH * T + size_t(B) * T * C) * sizeof(float);
}

void attention_forward(float* out, float* saved, const float* qkv, int B, int T, int C, int NH,
                       AttentionTiles tiles) {
  check_tiles(tiles);
  const int hs = C / NH, tq = tiles.q, tk = tiles.k;
  const float scale = 1.0f / std::sqrt(float(hs));
  const int64_t C3 = 3 * int64_t(C);
  const int nq = (T + tq - 1) / tq;
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
      const float* base = qkv + int64_t(b) * T * C3 + h * hs;
      const float* Q = base + r0 * C3;
      std::fill(m.begin(), m.end(), -INFINITY);
      std::fill(l.begin(), l.end(), 0.f);
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int c0 = 0; c0 < r1; c0 += tk) {
        const int nc = std::min(tk, r1 - c0);  // columns >= r1 are masked for every row here
        const float* K = base + C + c0 * C3;
        const float* V = base + 2 * C + c0 * C3;
        gemm_nn_nt(true, nr, nc, hs, scale, Q, int(C3), K, int(C3), 0.f, s.data(), tk);
        for (int i = 0; i < nr; ++i) {
          float* si = s.data() + size_t(i) * tk;
          const int lim = visible(r0 + i, c0, nc);
          if (lim == 0) {
            std::fill(si, si + nc, 0.f);
            continue;
          }
          float mx = m[size_t(i)];
          for (int c = 0; c < lim; ++c) mx = std::max(mx, si[c]);
          const float alpha = std::exp(m[size_t(i)] - mx);
          float sum = 0.f;
          for (int c = 0; c < lim; ++c) {
            si[c] = std::exp(si[c] - mx);
            sum += si[c];
          }
          std::fill(si + lim, si + nc, 0.f);
          l[size_t(i)] = alpha * l[size_t(i)] + sum;
          m[size_t(i)] = mx;
          float* ai = acc.data() + size_t(i) * hs;
          for (int d = 0; d < hs; ++d) ai[d] *= alpha;
        }
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
                        int NH, AttentionTiles tiles) {
  check_tiles(tiles);
  const int hs = C / NH, tq = tiles.q, tk = tiles.k;
  const float scale = 1.0f / std::sqrt(float(hs));
  const int64_t C3 = 3 * int64_t(C);
  const int nq = (T + tq - 1) / tq;
  const float* lse_all = saved;
  const float* o_saved = saved + int64_t(B) * NH * T;
  const int64_t tasks = int64_t(B) * NH;
#pragma omp parallel
  {
    std::vector<float> p(size_t(tq) * tk), ds(size_t(tq) * tk), dk(size_t(tk) * hs), dv(size_t(tk) * hs),
        D(static_cast<size_t>(T));
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int h = int(task % NH), b = int(task / NH);
      const float* base = qkv + int64_t(b) * T * C3 + h * hs;
      float* dbase = dqkv + int64_t(b) * T * C3 + h * hs;
      const float* gbase = dout + int64_t(b) * T * C + h * hs;
      const float* obase = o_saved + int64_t(b) * T * C + h * hs;
      const float* lse = lse_all + (int64_t(b) * NH + h) * T;
      for (int t = 0; t < T; ++t) {
        const float* g = gbase + int64_t(t) * C;
        const float* o = obase + int64_t(t) * C;
        float d = 0.f;
        for (int i = 0; i < hs; ++i) d += g[i] * o[i];
        D[size_t(t)] = d;
      }
      for (int c0 = 0; c0 < T; c0 += tk) {
        const int nc = std::min(tk, T - c0);
        const float* K = base + C + c0 * C3;
        const float* V = base + 2 * C + c0 * C3;
        std::fill(dk.begin(), dk.end(), 0.f);
        std::fill(dv.begin(), dv.end(), 0.f);
        for (int qb = c0 / tq; qb < nq; ++qb) {
          const int r0 = qb * tq, r1 = std::min(T, r0 + tq), nr = r1 - r0;
          const float* Q = base + r0 * C3;
          const float* G = gbase + int64_t(r0) * C;
          gemm_nn_nt(true, nr, nc, hs, scale, Q, int(C3), K, int(C3), 0.f, p.data(), tk);
          for (int i = 0; i < nr; ++i) {
            float* pi = p.data() + size_t(i) * tk;
            const int lim = visible(r0 + i, c0, nc);
            const float li = lse[r0 + i];
            for (int c = 0; c < lim; ++c) pi[c] = std::exp(pi[c] - li);
            std::fill(pi + lim, pi + nc, 0.f);
          }
          gemm_tn(nc, hs, nr, 1.f, p.data(), tk, G, C, 1.f, dv.data(), hs);             // dV += Pᵀ dO
          gemm_nn_nt(true, nr, nc, hs, 1.f, G, C, V, int(C3), 0.f, ds.data(), tk);      // dP = dO Vᵀ
          for (int i = 0; i < nr; ++i) {
            const float* pi = p.data() + size_t(i) * tk;
            float* di = ds.data() + size_t(i) * tk;
            const float Di = D[size_t(r0 + i)];
            for (int c = 0; c < nc; ++c) di[c] = pi[c] * (di[c] - Di);                  // dS
          }
          gemm_nn_nt(false, nr, hs, nc, scale, ds.data(), tk, K, int(C3), 1.f, dbase + r0 * C3, int(C3));  // dQ
          gemm_tn(nc, hs, nr, scale, ds.data(), tk, Q, int(C3), 1.f, dk.data(), hs);                      // dK
        }
        for (int j = 0; j < nc; ++j) {
          float* dkr = dbase + (c0 + j) * C3 + C;
          float* dvr = dbase + (c0 + j) * C3 + 2 * C;
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

}  // namespace zt::cpu
