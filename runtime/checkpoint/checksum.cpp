// XXH3-64 through libxxhash (one-shot hashes through its AVX2 / AVX-512 builds at the level
// base/simd.h resolves): fast enough to hash every byte a save writes and a load reads.
#include "runtime/checkpoint/checksum.h"

#include <xxhash.h>

#include <cinttypes>
#include <cstdio>
#include <stdexcept>

#include "base/simd.h"

namespace zt::ckpt {

namespace detail {
uint64_t xxh3_avx2(const void* data, size_t bytes);    // checksum_avx2.cpp
uint64_t xxh3_avx512(const void* data, size_t bytes);  // checksum_avx512.cpp
}  // namespace detail

namespace {

using HashFn = uint64_t (*)(const void*, size_t);

uint64_t xxh3_library(const void* data, size_t bytes) { return XXH3_64bits(data, bytes); }

// The build of XXH3 for base/simd.h's level (ZT_SIMD honoured; all give the same hash).
HashFn xxh3_for_level() {
  switch (resolve_simd_level()) {
    case SimdLevel::Avx512: return detail::xxh3_avx512;
    case SimdLevel::Avx2: return detail::xxh3_avx2;
    case SimdLevel::Scalar: break;
  }
  return xxh3_library;
}

}  // namespace

uint64_t xxh3(const void* data, size_t bytes) {
  static const HashFn hash = xxh3_for_level();
  return hash(data, bytes);
}

struct StreamHash::State {
  XXH3_state_t* st = nullptr;
};

StreamHash::StreamHash() : s_(std::make_unique<State>()) {
  s_->st = XXH3_createState();
  if (!s_->st || XXH3_64bits_reset(s_->st) != XXH_OK) throw std::bad_alloc();
}

StreamHash::~StreamHash() { XXH3_freeState(s_->st); }

void StreamHash::update(const void* data, size_t bytes) { XXH3_64bits_update(s_->st, data, bytes); }

uint64_t StreamHash::digest() const { return XXH3_64bits_digest(s_->st); }

std::string checksum_text(uint64_t h) {
  char b[32];
  std::snprintf(b, sizeof b, "xxh3:%016" PRIx64, h);
  return b;
}

std::optional<uint64_t> parse_checksum_text(const std::string& s) {
  if (s.size() != 21 || s.compare(0, 5, "xxh3:") != 0) return std::nullopt;
  uint64_t v = 0;
  for (size_t i = 5; i < s.size(); ++i) {
    const char c = s[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v << 4 | uint64_t(d);
  }
  return v;
}

}  // namespace zt::ckpt
