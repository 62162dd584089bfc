// Export: consolidates each unit's fp32 master from the rank files that hold it, then writes its
// tensors (renamed, transposed, converted as the format needs) before moving to the next unit; a
// Llama model's --format hf goes in save_pretrained's order (write_hf_llama_safetensors).
#include "runtime/checkpoint/export.h"

#include <unistd.h>

#include <algorithm>
#include <functional>

#include "base/half_float.h"
#include "runtime/checkpoint/consolidated.h"
#include "runtime/checkpoint/file_io.h"
#include "runtime/checkpoint/hf_gpt2.h"
#include "runtime/checkpoint/hf_llama.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/safetensors.h"

namespace zt::ckpt {

namespace {

// The one write of both export paths: `final_path` through a temporary beside it, which `write`
// fills; then synced, closed, renamed over final_path and its folder synced. Any failure removes
// the temporary; an I/O failure is --out's user error (`out`: the flag's value).
void write_then_rename(const std::string& final_path, const std::string& out,
                       const std::function<void(FileWriter&)>& write) {
  const std::string tmp = final_path + ".tmp-" + std::to_string(::getpid());
  try {
    FileWriter file(tmp, false);
    write(file);
    file.sync();
    file.close();
    if (::rename(tmp.c_str(), final_path.c_str()) != 0) throw IoError("cannot rename " + tmp + " to", final_path, -1, errno);
    fsync_directory(final_path.find('/') == std::string::npos ? "." : final_path.substr(0, final_path.rfind('/')));
  } catch (const IoError& e) {
    ::unlink(tmp.c_str());
    throw UserError("--out", out, e.what(), "write to a folder with free space that you can write to");
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
}

// --format hf of a Llama checkpoint: save_pretrained's model.safetensors (its names, split of the
// stacked matrices and sorted order; the header's metadata adds the tag and step) and config.json.
ExportResult export_llama_hf(const ExportOptions& o, const ConsolidatedWeights& weights, StDType dt) {
  const Manifest& m = weights.manifest();
  ExportResult res;
  res.tag_dir = weights.tag_dir();
  const StMetadata meta = {{"format", "pt"}, {"zt.tag", m.tag}, {"zt.step", std::to_string(m.step())}};
  // The vocabulary the weights were imported with: rows a smaller file lacked are never exported.
  const int64_t vocab_rows = m.run.hf_vocab > 0 && m.run.hf_vocab < m.model.vocab ? m.run.hf_vocab : 0;
  make_directories(o.out);
  const std::string final_path = join_path(o.out, "model.safetensors");
  write_then_rename(final_path, o.out, [&](FileWriter& out) {
    const HfLlamaWritten w = write_hf_llama_safetensors(
        out, m.model, m.units, [&](int u, float* values) { weights.read_unit(u, values); }, dt, meta, vocab_rows);
    res.tensors = w.tensors;
    res.params = w.params;
    res.bytes_written = w.file_bytes;
    res.peak_buffer_bytes = w.peak_buffer_bytes;
  });
  res.files.push_back(final_path);
  const std::string cfg = join_path(o.out, "config.json");
  ModelConfig described = m.model;
  if (vocab_rows > 0) described.vocab = int(vocab_rows);
  const std::string text = hf_llama_config(described, dt == StDType::BF16 ? "bfloat16" : "float32").dump(2) + "\n";
  replace_file_atomically(cfg, text);
  res.files.push_back(cfg);
  res.bytes_written += int64_t(text.size());
  res.bytes_read = weights.bytes_read();
  return res;
}

}  // namespace

ExportResult export_weights(const ExportOptions& o) {
  Diagnostics d;
  if (o.dtype != "fp32" && o.dtype != "bf16") d.error("--dtype", o.dtype, "expected fp32 or bf16");
  if (o.format != "zerotrain" && o.format != "hf") d.error("--format", o.format, "expected zerotrain or hf");
  if (o.out.empty()) d.error("--out", "", "missing", "name the file (hf: the folder) to write");
  const bool hf = o.format == "hf";
  if (!o.out.empty()) {
    if (hf && path_exists(o.out) && !is_directory(o.out))
      d.error("--out", o.out, "exists and is not a folder (--format hf writes model.safetensors and config.json into a folder)",
              "name a folder");
    if (!hf && is_directory(o.out))
      d.error("--out", o.out, "is a folder (--format zerotrain writes one file)", "name a .safetensors file");
  }
  if (d.has_errors()) throw UserError(d);
  const ConsolidatedWeights weights(o.checkpoint, o.tag, o.verify);
  const Manifest& m = weights.manifest();
  if (hf && m.model.llama()) return export_llama_hf(o, weights, o.dtype == "bf16" ? StDType::BF16 : StDType::F32);
  ExportResult res;
  res.tag_dir = weights.tag_dir();

  // Output tensors, unit by unit, in walk order. --format hf writes the vocabulary the weights were
  // imported with: rows a smaller HF file lacked (added at import) are never exported.
  const StDType dt = o.dtype == "bf16" ? StDType::BF16 : StDType::F32;
  const int64_t vocab = hf && m.run.hf_vocab > 0 && m.run.hf_vocab < m.model.vocab ? m.run.hf_vocab : m.model.vocab;
  auto numel_out = [&](const TensorView& t) {
    return t.name == "wte" || t.name == "lm_head_w" ? vocab * t.shape[1] : t.numel;
  };
  std::vector<StTensor> tensors;
  std::vector<bool> transpose;
  for (const auto& u : m.units)
    for (const auto& t : u.tensors) {
      StTensor s;
      s.dtype = dt;
      if (hf) {
        const HfName h = hf_gpt2_name(u, t);
        s.name = h.name;
        s.shape = hf_shape(t, h.transpose);
        if (numel_out(t) != t.numel) s.shape[0] = vocab;
        transpose.push_back(h.transpose);
      } else {
        s.name = u.name + "." + t.name;
        s.shape = t.shape;
        transpose.push_back(false);
      }
      tensors.push_back(std::move(s));
    }
  StMetadata meta;
  if (hf) {
    meta["format"] = "pt";  // transformers refuses safetensors archives without it
  } else {
    meta["format"] = "zerotrain-weights";
    meta["zt.model"] = nlohmann::json{{"name", m.model.name},   {"layers", m.model.layers}, {"heads", m.model.heads},
                                      {"dim", m.model.dim},     {"vocab", m.model.vocab},   {"seq_len", m.model.seq_len},
                                      {"tied_embeddings", m.model.tied_embeddings}}
                           .dump();
    if (m.run.hf_vocab > 0) meta["zt.hf_vocab"] = std::to_string(m.run.hf_vocab);  // carried to --init-from
  }
  meta["zt.tag"] = m.tag;
  meta["zt.step"] = std::to_string(m.step());

  if (hf) make_directories(o.out);
  const std::string final_path = hf ? join_path(o.out, "model.safetensors") : o.out;
  write_then_rename(final_path, o.out, [&](FileWriter& out) {
    SafetensorsWriter w(out, tensors, meta);
    std::vector<float> unit, scratch;
    std::vector<uint16_t> half;
    size_t k = 0;
    for (int u = 0; u < int(m.units.size()); ++u) {
      const UnitLayout& ul = m.units[size_t(u)];
      unit.resize(size_t(ul.numel));
      weights.read_unit(u, unit.data());
      int64_t largest = 0;
      for (const auto& t : ul.tensors) {
        const float* src = unit.data() + t.offset;
        if (transpose[k]) {
          scratch.resize(size_t(t.numel));
          const int64_t rows = t.shape[0], cols = t.shape[1];
          for (int64_t i = 0; i < cols; ++i)
            for (int64_t r = 0; r < rows; ++r) scratch[size_t(i * rows + r)] = src[r * cols + i];
          src = scratch.data();
          largest = std::max(largest, t.numel * 4);
        }
        const int64_t n = numel_out(t);  // the first rows (vocabulary tensors are never transposed)
        if (dt == StDType::BF16) {
          half.resize(size_t(n));
          for (int64_t i = 0; i < n; ++i) half[size_t(i)] = f32_to_bf16_bits(src[i]);
          w.append(half.data(), half.size() * 2);
          largest = std::max(largest, t.numel * (transpose[k] ? 6 : 2));
        } else {
          w.append(src, size_t(n) * 4);
        }
        ++k;
      }
      res.peak_buffer_bytes = std::max(res.peak_buffer_bytes, ul.numel * 4 + largest);
      for (const auto& t : ul.tensors) res.params += numel_out(t);
    }
    w.finish();
    res.bytes_written = w.file_bytes();
  });
  res.files.push_back(final_path);
  if (hf) {
    const std::string cfg = join_path(o.out, "config.json");
    ModelConfig hf_model = m.model;
    hf_model.vocab = int(vocab);
    const std::string text = hf_gpt2_config(hf_model).dump(2) + "\n";
    replace_file_atomically(cfg, text);
    res.files.push_back(cfg);
    res.bytes_written += int64_t(text.size());
  }
  res.tensors = int64_t(tensors.size());
  res.bytes_read = weights.bytes_read();
  return res;
}

}  // namespace zt::ckpt
