// Backend factories that do not depend on a particular implementation being compiled in.
#include <stdexcept>

#include "kernels/backend.h"

namespace zt {

bool cuda_backend_compiled() { return ZT_HAVE_CUDA; }

#if !ZT_HAVE_CUDA
std::unique_ptr<Backend> make_cuda_backend(int) {
  throw std::runtime_error(
      "this zerotrain was built without CUDA (ZT_CUDA=OFF): rebuild on a machine with nvcc, or use "
      "--backend cpu");
}
#endif

}  // namespace zt
