// The --backend flag: auto (CUDA when this build has it and a GPU is visible, else the CPU), cpu or
// cuda, resolved and opened the same way by every command that computes.
#pragma once

#include <memory>
#include <string>

#include "kernels/backend.h"

namespace zt {

// "cpu" or "cuda" for `asked` (auto, cpu, cuda); `why` says why auto chose (empty otherwise).
// zt::UserError for an unknown name.
std::string resolve_backend(const std::string& asked, std::string& why);
// The backend by resolved name on `device`; zt::UserError naming --backend when it cannot start.
std::unique_ptr<Backend> open_backend(const std::string& name, int device = 0);

}  // namespace zt
