// --backend: the build's CUDA support and the visible GPUs decide "auto".
#include "runtime/train/backend_choice.h"

#include <stdexcept>

#include "runtime/common/diagnostics.h"
#include "runtime/plan/gpu_memory.h"

namespace zt {

std::string resolve_backend(const std::string& asked, std::string& why) {
  if (asked != "cpu" && asked != "cuda" && asked != "auto")
    throw UserError("--backend", asked, "unknown backend", "use --backend auto, cpu or cuda");
  if (asked != "auto") return asked;
  if (!cuda_backend_compiled()) {
    why = "this zerotrain was built without CUDA";
    return "cpu";
  }
  if (!query_gpu_memory()) {
    why = "no GPU is visible to this process";
    return "cpu";
  }
  why = "a GPU is visible and this build has CUDA";
  return "cuda";
}

std::unique_ptr<Backend> open_backend(const std::string& name, int device) {
  try {
    return name == "cuda" ? make_cuda_backend(device) : make_cpu_backend();
  } catch (const std::runtime_error& e) {
    throw UserError("--backend", name, e.what(), "use --backend cpu on a machine without a usable GPU");
  }
}

}  // namespace zt
