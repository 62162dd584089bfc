// prepare_text: any text file as byte-level (vocab 256) train.bin / val.bin shards.
#include "runtime/data/prepare.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "runtime/common/diagnostics.h"
#include "runtime/data/token_shard.h"

namespace zt {

PrepareResult prepare_text(const std::string& text_path, const std::string& out_dir, double val_fraction) {
  if (!(val_fraction > 0.0 && val_fraction < 1.0))
    throw UserError("--val-fraction", std::to_string(val_fraction), "must be between 0 and 1 (exclusive)",
                    "use e.g. 0.1 for the last 10% as validation");
  const File in = open_regular_file(text_path, "--text input", "check the --text path");
  std::vector<char> bytes;
  char chunk[1 << 16];
  for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, in.get())) > 0;) bytes.insert(bytes.end(), chunk, chunk + n);
  if (std::ferror(in.get()))
    throw UserError(text_path, "", std::string("cannot read text file: ") + std::strerror(errno), "check the --text path");
  if (bytes.size() < 4)
    throw UserError(text_path, std::to_string(bytes.size()) + " bytes",
                    "text file too small to split into train and validation shards",
                    "use a text file of at least a few kilobytes");
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec)
    throw UserError(out_dir, "", "cannot create output directory: " + ec.message(),
                    "choose a writable --out directory");
  size_t n_val = size_t(double(bytes.size()) * val_fraction);
  n_val = std::max<size_t>(n_val, 2);
  const size_t n_train = bytes.size() - n_val;
  std::vector<uint16_t> train(n_train), val(n_val);
  for (size_t i = 0; i < n_train; ++i) train[i] = uint8_t(bytes[i]);
  for (size_t i = 0; i < n_val; ++i) val[i] = uint8_t(bytes[n_train + i]);
  write_token_shard(out_dir + "/train.bin", train);
  write_token_shard(out_dir + "/val.bin", val);
  return {int64_t(n_train), int64_t(n_val)};
}

}  // namespace zt
