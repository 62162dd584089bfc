// The RoPE angle table: transformers' default and llama3 inverse frequencies in fp32, and the
// cos/sin of position · frequency.
#include "kernels/rope_table.h"

#include <cmath>
#include <stdexcept>

namespace zt {

std::vector<float> rope_inv_freq(int hd, double theta, const RopeScaling& sc) {
  if (hd < 2 || hd % 2 != 0) throw std::invalid_argument("rope: head size " + std::to_string(hd) + " must be even");
  if (!(theta > 0)) throw std::invalid_argument("rope: rope_theta must be positive");
  const int half = hd / 2;
  std::vector<float> f(static_cast<size_t>(half));
  for (int i = 0; i < half; ++i) {
    const float e = float(2 * i) / float(hd);                  // arange(0, hd, 2).float() / hd
    const float p = std::pow(float(theta), e);                 // base ** exponent, fp32
    f[size_t(i)] = 1.0f / p;
  }
  if (sc.type == RopeScaling::Type::Default) return f;
  if (!(sc.factor > 0) || !(sc.high_freq_factor > sc.low_freq_factor) || !(sc.low_freq_factor > 0) ||
      sc.original_max_position_embeddings <= 0)
    throw std::invalid_argument("rope: llama3 scaling needs factor > 0, 0 < low_freq_factor < high_freq_factor and "
                                "original_max_position_embeddings > 0");
  const float factor = float(sc.factor), low = float(sc.low_freq_factor), high = float(sc.high_freq_factor);
  const float L0 = float(sc.original_max_position_embeddings);
  const float low_wl = L0 / low, high_wl = L0 / high;
  const float two_pi = float(2.0 * M_PI);
  // transformers writes 2π / inv_freq and L0 / wavelen with the tensor on the right, which PyTorch
  // evaluates as reciprocal(tensor) · scalar: the same here, rounding for rounding.
  for (float& x : f) {
    const float wl = (1.0f / x) * two_pi;
    if (wl < high_wl) continue;  // high frequency: kept
    if (wl > low_wl) {           // low frequency: divided by the factor
      x = x / factor;
      continue;
    }
    const float s = ((1.0f / wl) * L0 - low) / (high - low);  // in between: interpolated
    x = (1.0f - s) * x / factor + s * x;
  }
  return f;
}

RopeTable rope_table(int T, int hd, double theta, const RopeScaling& scaling) {
  if (T < 0) throw std::invalid_argument("rope: negative length");
  const std::vector<float> f = rope_inv_freq(hd, theta, scaling);
  RopeTable t;
  t.T = T;
  t.half = hd / 2;
  t.cos.resize(size_t(T) * t.half);
  t.sin.resize(t.cos.size());
  for (int p = 0; p < T; ++p)
    for (int i = 0; i < t.half; ++i) {
      const float a = float(p) * f[size_t(i)];
      t.cos[size_t(p) * t.half + i] = float(std::cos(double(a)));
      t.sin[size_t(p) * t.half + i] = float(std::sin(double(a)));
    }
  return t;
}

}  // namespace zt
