// Free and total memory of the current CUDA device, for pre-flight. Returns nothing when zerotrain
// was built without CUDA, when there is no driver, or when no device is present (never an error).
#pragma once

#include <cstdint>
#include <optional>

namespace zt {

struct GpuMemory {
  uint64_t free_bytes = 0, total_bytes = 0;
};

std::optional<GpuMemory> query_gpu_memory();

}  // namespace zt
