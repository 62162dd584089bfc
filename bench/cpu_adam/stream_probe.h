// StreamProbe: the memory-bandwidth limit for Adam's access pattern: an in-place stream that reads
// four fp32 arrays (p, g, m, v) and writes three (p, m, v), split over threads like the Adam.
#pragma once

#include <cstddef>

namespace zt::bench {

// Plain: the loop as the compiler vectorises it (no software prefetch).
// Prefetch: the same loop structure as the SIMD Adam paths (scalar head to p's 64-byte boundary,
// whole-line vectors, each of the four streams prefetched as far ahead as the Adam prefetches),
// so a gain the Adam gets from prefetching is credited to the ceiling too.
enum class ProbeKind { Plain, Prefetch };

const char* probe_kind_name(ProbeKind kind);

// One pass over n elements with `threads` OpenMP threads (static chunks on 64-byte lines, the
// same edges as the Adam dispatcher).
void stream_probe(float* p, const float* g, float* m, float* v, size_t n, int threads,
                  ProbeKind kind = ProbeKind::Plain);

}  // namespace zt::bench
