// DevicePeak: the FLOP/s an MFU is measured against — a GPU's dense bf16 tensor-core peak from its
// datasheet (by device name), or, on the CPU and unknown GPUs, the GEMM rate measured at start-up.
#pragma once

#include <string>

#include "kernels/backend.h"

namespace zt {

struct DevicePeak {
  double flops_per_s = 0;
  std::string source;  // "NVIDIA H200: dense bf16 datasheet peak" / "cpu: GEMM 256x128x512 measured at start-up"
};

// Datasheet dense bf16 peak (FLOP/s) for a GPU name such as "NVIDIA H200"; 0 when unknown.
double datasheet_bf16_peak(const std::string& gpu_name);

// Best rate of matmul_forward(N, IC, OC) on `backend` over a few repetitions (about 0.2 s).
double measure_gemm_rate(Backend& backend, int N, int IC, int OC);

// The peak for this backend: the datasheet number on a known GPU, else the measured GEMM rate at
// the model's MLP shape (N = rows of a micro-batch, IC = C, OC = 4C).
DevicePeak device_peak(Backend& backend, int rows, int C);

}  // namespace zt
