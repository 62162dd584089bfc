// Timing for the GPU benchmarks: the median of many runs of a stream-ordered piece of work, each
// bracketed by CUDA events, after untimed warm-up runs.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "base/cuda_check.h"

namespace zt::bench {

inline double median_ms(cudaStream_t s, int warm, int reps, const std::function<void()>& fn) {
  cudaEvent_t a, b;
  ZT_CUDA_CHECK(cudaEventCreate(&a));
  ZT_CUDA_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < warm; ++i) fn();
  std::vector<float> t(static_cast<size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    ZT_CUDA_CHECK(cudaEventRecord(a, s));
    fn();
    ZT_CUDA_CHECK(cudaEventRecord(b, s));
    ZT_CUDA_CHECK(cudaEventSynchronize(b));
    ZT_CUDA_CHECK(cudaEventElapsedTime(&t[size_t(i)], a, b));
  }
  ZT_CUDA_CHECK(cudaEventDestroy(a));
  ZT_CUDA_CHECK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[size_t(reps) / 2];
}

}  // namespace zt::bench
