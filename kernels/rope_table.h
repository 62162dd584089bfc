// The rotary-embedding angle table the RoPE ops read (Backend::rope_forward): cos and sin of
// pos · inv_freq[i] for positions 0..T-1 and i < hd/2, in fp32, with transformers' `default` and
// `llama3` frequency rules. Built on the host; the caller copies it to backend memory.
#pragma once

#include <string>
#include <vector>

namespace zt {

// rope_scaling of a Llama config. Default: inv_freq[i] = theta^(-2i/hd). Llama3 (transformers'
// _compute_llama3_parameters) rescales by wavelength wl = 2π / inv_freq, with L0 =
// original_max_position_embeddings: wl < L0 / high_freq_factor keeps f; wl > L0 / low_freq_factor
// uses f / factor; in between, with s = (L0 / wl − low_freq_factor) / (high_freq_factor −
// low_freq_factor), (1 − s) · f / factor + s · f. Both have attention scaling 1 (cos, sin unscaled).
struct RopeScaling {
  enum class Type { Default, Llama3 };
  Type type = Type::Default;
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int original_max_position_embeddings = 8192;
};

// The hd/2 inverse frequencies in fp32, computed as transformers does (fp32 exponent 2i/hd, fp32
// power and reciprocal, then the llama3 rule in fp32). Throws std::invalid_argument for an odd or
// non-positive hd, theta <= 0, or llama3 parameters with high_freq_factor <= low_freq_factor,
// factor <= 0 or L0 <= 0.
std::vector<float> rope_inv_freq(int hd, double theta, const RopeScaling& scaling = {});

// cos and sin [T, hd/2] (row t = position t): angle = float(t) · inv_freq[i] rounded to fp32 (the
// fp32 matmul of transformers' rotary embedding), its cos and sin rounded once to fp32.
struct RopeTable {
  int T = 0, half = 0;
  std::vector<float> cos, sin;
};
RopeTable rope_table(int T, int hd, double theta, const RopeScaling& scaling = {});

}  // namespace zt
