// QuantError: the RMS of the sampled errors and adding two spans' measurements.
#include "runtime/zero/quant_error.h"

#include <algorithm>
#include <cmath>

namespace zt {

bool QuantError::finite_absmax(const float* x, size_t n, double& absmax) {
  absmax = 0;
  bool finite = true;
  for (size_t i = 0; i < n; ++i) {
    finite &= std::isfinite(x[i]);
    absmax = std::max(absmax, double(std::fabs(x[i])));
  }
  return finite;
}

void QuantError::add_sample(const float* x, const float* deq, size_t n, double absmax) {
  for (size_t i = 0; i < n; ++i) {
    const double rel = absmax > 0 ? std::fabs(double(deq[i]) - double(x[i])) / absmax : 0.0;
    max_rel = std::max(max_rel, rel);
    sum_sq_rel += rel * rel;
  }
  elements += n;
}

double QuantError::rms_rel() const { return elements ? std::sqrt(sum_sq_rel / double(elements)) : 0.0; }

void QuantError::add(const QuantError& o) {
  max_rel = std::max(max_rel, o.max_rel);
  sum_sq_rel += o.sum_sq_rel;
  elements += o.elements;
  calls += o.calls;
  exact_elements += o.exact_elements;
  level_bytes += o.level_bytes;
  scale_bytes += o.scale_bytes;
  blocks += o.blocks;
  bad_blocks += o.bad_blocks;
  quantize_s += o.quantize_s;
  dequantize_s += o.dequantize_s;
}

}  // namespace zt
