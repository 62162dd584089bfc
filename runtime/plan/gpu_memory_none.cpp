// query_gpu_memory for builds without CUDA: there is never a GPU to ask.
#include "runtime/plan/gpu_memory.h"

namespace zt {

std::optional<GpuMemory> query_gpu_memory() { return std::nullopt; }

}  // namespace zt
