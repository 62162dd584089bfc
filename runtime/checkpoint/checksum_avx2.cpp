// XXH3-64 built for AVX2: libxxhash's own header inlined into this file with its AVX2 loop (the
// system library is built for SSE2 only). The same hash as the library's; checksum.cpp picks this
// one at run time where the CPU has AVX2.
#define XXH_INLINE_ALL
#define XXH_VECTOR 2  // XXH_AVX2
#include <xxhash.h>

#include <cstddef>
#include <cstdint>

namespace zt::ckpt::detail {

uint64_t xxh3_avx2(const void* data, size_t bytes) { return XXH3_64bits(data, bytes); }

}  // namespace zt::ckpt::detail
