// The one SIMD rule: which vector level this process runs (AVX-512, AVX2+FMA or scalar), from the
// CPU's features and the ZT_SIMD environment variable. The model kernels, the quantizers, the CPU
// Adam and the checkpoint checksum all dispatch on it, and `zerotrain env` reports it.
#pragma once

#include <string>

namespace zt {

enum class SimdLevel { Scalar, Avx2, Avx512 };

// "scalar", "avx2", "avx512": the names ZT_SIMD takes.
const char* simd_level_name(SimdLevel level);
// Parses a ZT_SIMD value ("avx512" | "avx2" | "scalar"); throws std::invalid_argument naming the
// accepted values ("auto" is resolve_simd_level's, not a level).
SimdLevel parse_simd_level(const std::string& name);
// True when this CPU runs `level`: AVX2 needs avx2, fma and f16c; AVX-512 needs avx512f, bw and vl.
bool simd_level_supported(SimdLevel level);
// The supported levels in words, e.g. "scalar, avx2".
std::string supported_simd_levels();
// `level` when this CPU runs it; else throws std::runtime_error naming `origin` (e.g. "ZT_SIMD=avx512")
// and the levels this CPU has.
SimdLevel checked_simd_level(SimdLevel level, const std::string& origin);
// ZT_SIMD when set to a level (checked as above; "auto" or unset: the widest supported level). An
// unknown value throws std::runtime_error that quotes it and lists the accepted ones.
SimdLevel resolve_simd_level();

}  // namespace zt
