// The checkpoint checksum: xxh3() (the widest XXH3 build this CPU runs) gives libxxhash's own
// XXH3-64 for every length around the algorithm's size classes and for unaligned starts, so that
// files saved before and after, or on another machine, check the same.
#include <xxhash.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "runtime/checkpoint/checksum.h"

namespace zt::ckpt {
namespace {

TEST(Checksum, MatchesTheLibraryAtEveryLengthAndOffset) {
  std::vector<unsigned char> bytes((size_t(1) << 20) + 4096);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (auto& b : bytes) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<unsigned char>(x);
  }
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 300; ++n) lengths.push_back(n);  // 0-16, 17-128, 129-240, the long path
  for (size_t n : {1023, 1024, 1025, 4095, 4096, 65537, 1 << 20}) lengths.push_back(n);
  for (size_t offset : {0, 1, 3, 64})
    for (size_t n : lengths) {
      const unsigned char* p = bytes.data() + offset;
      ASSERT_EQ(xxh3(p, n), XXH3_64bits(p, n)) << n << " bytes at offset " << offset;
    }
  EXPECT_EQ(xxh3("", 0), 0x2D06800538D394C2ull) << "XXH3-64 of no bytes, as its specification gives";
}

}  // namespace
}  // namespace zt::ckpt
