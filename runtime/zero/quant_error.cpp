// QuantError: the RMS of the sampled errors and adding two spans' measurements.
#include "runtime/zero/quant_error.h"

#include <algorithm>
#include <cmath>

namespace zt {

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
