// Helpers for the model tests: per-unit parameter/gradient buffers on a backend, random weights
// with non-trivial gradients, and random token batches.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/backend.h"
#include "runtime/model/causal_lm.h"
#include "runtime/model/gpt2.h"

namespace zt::test {

// Owns one parameter and one gradient buffer per unit (fp32 backends).
struct UnitBuffers {
  Backend& be;
  std::vector<void*> params, grads;
  std::vector<int64_t> sizes;

  UnitBuffers(Backend& b, const CausalLM& model) : be(b) {
    for (const auto& l : model.layouts()) {
      sizes.push_back(l.numel);
      params.push_back(be.alloc(size_t(l.numel) * 4));
      grads.push_back(be.alloc(size_t(l.numel) * 4));
      be.zero(grads.back(), size_t(l.numel) * 4);
    }
  }
  ~UnitBuffers() {
    for (void* p : params) be.free(p);
    for (void* p : grads) be.free(p);
  }
  float* p(int u) { return static_cast<float*>(params[size_t(u)]); }
  float* g(int u) { return static_cast<float*>(grads[size_t(u)]); }
  void zero_grads() {
    for (size_t u = 0; u < grads.size(); ++u) be.zero(grads[u], size_t(sizes[u]) * 4);
  }
};

// Weights large enough that every gradient is well away from zero: matrices N(0, 0.3), LayerNorm
// weights 1 + N(0, 0.2), biases N(0, 0.2).
inline void fill_random_params(const CausalLM& model, UnitBuffers& buf, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n01(0.f, 1.f);
  for (int u = 0; u < model.num_units(); ++u)
    for (const auto& t : model.layout(u).tensors) {
      const bool matrix = t.shape.size() == 2;
      const bool ln_weight = t.name.find("ln") == 0 && t.name.back() == 'w';
      for (int64_t i = 0; i < t.numel; ++i)
        buf.p(u)[t.offset + i] = matrix ? 0.3f * n01(rng) : (ln_weight ? 1.f : 0.f) + 0.2f * n01(rng);
    }
}

inline void random_batch(int B, int T, int V, uint32_t seed, std::vector<int32_t>& tokens,
                         std::vector<int32_t>& targets) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> tok(0, V - 1);
  tokens.resize(size_t(B) * T);
  targets.resize(size_t(B) * T);
  for (auto& t : tokens) t = tok(rng);
  for (auto& t : targets) t = tok(rng);
}

}  // namespace zt::test
