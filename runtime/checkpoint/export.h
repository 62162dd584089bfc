// Export of consolidated weights from a checkpoint (what DeepSpeed's zero_to_fp32.py gives):
// zerotrain's names or Hugging Face's (GPT-2 or Llama, by the checkpoint's model), fp32 or bf16,
// streamed one unit at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zt::ckpt {

struct ExportOptions {
  std::string checkpoint;            // DIR (uses `latest`) or DIR/TAG
  std::string tag;                   // optional tag inside DIR
  std::string out;                   // zerotrain: the .safetensors file; hf: a folder for model.safetensors + config.json
  std::string dtype = "fp32";        // fp32 | bf16
  std::string format = "zerotrain";  // zerotrain | hf
  bool verify = true;                // check the checksum of every block read
};

struct ExportResult {
  std::string tag_dir;
  std::vector<std::string> files;    // written
  int64_t tensors = 0;
  int64_t params = 0;
  int64_t bytes_written = 0;
  uint64_t bytes_read = 0;
  int64_t peak_buffer_bytes = 0;     // the largest host buffer held at once (one unit, plus one tensor for hf)
};

// Throws zt::UserError (bad checkpoint, bad options, an output that exists as the wrong kind) before
// writing; outputs are written under temporary names and renamed when complete.
ExportResult export_weights(const ExportOptions& o);

}  // namespace zt::ckpt
