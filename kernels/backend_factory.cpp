// Backend factories that do not depend on a particular implementation being compiled in.
#include <stdexcept>

#include "kernels/backend.h"
#include "kernels/cuda/fused_adamw.h"

namespace zt {

bool cuda_backend_compiled() { return ZT_HAVE_CUDA; }

#if !ZT_HAVE_CUDA
std::unique_ptr<Backend> make_cuda_backend(int) {
  throw std::runtime_error(
      "this zerotrain was built without CUDA (ZT_CUDA=OFF): rebuild on a machine with nvcc, or use "
      "--backend cpu");
}

// Only a CUDA backend hands device memory to the fused optimizer, and none exists in this build.
void fused_adamw(const AdamWChunk*, size_t, DType, const AdamWHyper&, void*) {
  throw std::runtime_error("fused_adamw: this zerotrain was built without CUDA (ZT_CUDA=OFF)");
}
#endif

}  // namespace zt
