// OffloadDevice: where ZeRO-Offload / ZeRO-Infinity put optimizer state or parameters
// (DeepSpeed's offload_optimizer.device / offload_param.device: "none", "cpu", "nvme").
#pragma once

namespace zt {

enum class OffloadDevice { None, CPU, NVMe };

constexpr const char* offload_name(OffloadDevice d) {
  switch (d) {
    case OffloadDevice::None: return "none";
    case OffloadDevice::CPU: return "cpu";
    case OffloadDevice::NVMe: return "nvme";
  }
  return "?";
}

}  // namespace zt
