// tokenize_text: zerotrain's BpeTokenizer as a command, for tests that compare it with the tokenizers
// package on real text (tests/real/real_tokenizers_test.py).
//   tokenize_text encode TOKENIZER TEXT_FILE IDS_FILE   the ids of the whole file, int32 little-endian
//   tokenize_text decode TOKENIZER IDS_FILE TEXT_FILE   the bytes of the ids
// TOKENIZER is what `zerotrain sample --tokenizer` takes. Prints the count and the seconds taken.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/data/bpe_tokenizer.h"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const void* data, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), std::streamsize(bytes));
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 || (std::string(argv[1]) != "encode" && std::string(argv[1]) != "decode")) {
    std::fprintf(stderr, "usage: %s encode|decode TOKENIZER IN OUT\n", argv[0]);
    return 2;
  }
  try {
    const zt::BpeTokenizer tokenizer = zt::BpeTokenizer::load(argv[2]);
    const std::string in = read_file(argv[3]);
    const auto t0 = std::chrono::steady_clock::now();
    size_t count = 0;
    if (std::string(argv[1]) == "encode") {
      const std::vector<int32_t> ids = tokenizer.encode(in);
      count = ids.size();
      write_file(argv[4], ids.data(), ids.size() * sizeof(int32_t));
    } else {
      std::vector<int32_t> ids(in.size() / sizeof(int32_t));
      std::copy_n(in.data(), ids.size() * sizeof(int32_t), reinterpret_cast<char*>(ids.data()));
      const std::string text = tokenizer.decode(ids);
      count = ids.size();
      write_file(argv[4], text.data(), text.size());
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: %zu ids in %.6f s\n", argv[1], count, seconds);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tokenize_text: %s\n", e.what());
    return 1;
  }
}
