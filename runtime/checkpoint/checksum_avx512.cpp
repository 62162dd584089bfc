// XXH3-64 built for AVX512: libxxhash's own header inlined into this file with its AVX512 loop (the
// system library is built for SSE2 only). The same hash as the library's; checksum.cpp picks this
// one at run time where the CPU has AVX512.
#define XXH_INLINE_ALL
#define XXH_VECTOR 3  // XXH_AVX512
#include <xxhash.h>

#include <cstddef>
#include <cstdint>

namespace zt::ckpt::detail {

uint64_t xxh3_avx512(const void* data, size_t bytes) { return XXH3_64bits(data, bytes); }

}  // namespace zt::ckpt::detail
