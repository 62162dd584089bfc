// Deterministic GPT-2 initialisation: every parameter element is a pure function of (seed, unit,
// tensor, element), so a rank can initialise any slice of any unit without the rest, at any world size.
#pragma once

#include <cstdint>

#include "runtime/model/unit_layout.h"

namespace zt {

// Writes elements [begin, end) of unit `layout`'s flat buffer (fp32, host) into out[0 .. end-begin).
// Elements past layout.numel (padding) are written as 0.
void init_unit_params(const UnitLayout& layout, uint64_t seed, int64_t begin, int64_t end, float* out);

// The same value init_unit_params writes at one element (for tests and spot checks).
float init_param_value(const UnitLayout& layout, uint64_t seed, int64_t element);

}  // namespace zt
