// `zerotrain prepare`: turns any text file into byte-level (vocab 256) train.bin / val.bin shards.
#pragma once

#include <cstdint>
#include <string>

namespace zt {

struct PrepareResult {
  int64_t train_tokens = 0, val_tokens = 0;
};

// Bytes of `text_path` become tokens; the last `val_fraction` of them (at least one window's worth
// when possible) go to val.bin. Creates out_dir. Throws zt::UserError on unusable input.
PrepareResult prepare_text(const std::string& text_path, const std::string& out_dir, double val_fraction = 0.1);

}  // namespace zt
