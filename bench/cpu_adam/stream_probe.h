// StreamProbe: the memory-bandwidth limit for Adam's access pattern: an in-place stream that reads
// four fp32 arrays (p, g, m, v) and writes three (p, m, v), split over threads like the Adam.
#pragma once

#include <cstddef>

namespace zt::bench {

// One pass over n elements with `threads` OpenMP threads (static, size-based chunks).
void stream_probe(float* p, const float* g, float* m, float* v, size_t n, int threads);

}  // namespace zt::bench
