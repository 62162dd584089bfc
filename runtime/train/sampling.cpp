// sample_from_weights: one backend buffer per unit (freed on every path), the decoder, generate().
#include "runtime/train/sampling.h"

#include <chrono>

#include "runtime/model/decoder.h"

namespace zt {

std::vector<int32_t> TextCodec::encode(const std::string& text) const {
  if (tokenizer) return tokenizer->encode(text, /*add_special_tokens=*/true);
  std::vector<int32_t> ids;
  for (unsigned char c : text) ids.push_back(c);
  return ids;
}

std::string TextCodec::decode_prompt(const std::vector<int32_t>& ids) const {
  if (tokenizer && !ids_out) return tokenizer->decode(ids);
  std::string text;
  for (int32_t id : ids) text += decode(id);
  return text;
}

std::string TextCodec::decode(int32_t id) const {
  // Appended, not " " + std::to_string(id): GCC 12 warns (-Wrestrict) falsely on that form.
  if (ids_out) return std::string(" ").append(std::to_string(id));
  if (tokenizer) return tokenizer->decode_continuation({id});
  return id < 256 ? std::string(1, char(id)) : std::string("[").append(std::to_string(id)).append("]");
}

std::optional<int32_t> TextCodec::start_of_text() const {
  return tokenizer ? tokenizer->document_token() : std::nullopt;
}

std::optional<int32_t> TextCodec::end_of_text() const { return tokenizer ? tokenizer->end_of_text() : std::nullopt; }

SampleResult sample_from_weights(const ModelConfig& model, Backend& backend, const std::vector<std::vector<float>>& units,
                                 const SampleRequest& request, const std::function<void(int32_t)>& each) {
  struct Buffers {
    Backend& backend;
    std::vector<void*> all;
    ~Buffers() {
      for (void* p : all) backend.free(p);
    }
  } buffers{backend, {}};
  const size_t element_bytes = dtype_size(backend.act_dtype());
  std::vector<const void*> params;
  for (const auto& unit : units) {
    buffers.all.push_back(backend.alloc(unit.size() * element_bytes));
    backend.f32_to_act(buffers.all.back(), unit.data(), unit.size());
    params.push_back(buffers.all.back());
  }
  const std::unique_ptr<Decoder> decoder =
      make_decoder(model, backend, params, int(request.prompt.size()) + request.tokens);
  TokenPicker picker(request.sampling);
  SampleResult r;
  const auto t0 = std::chrono::steady_clock::now();
  r.tokens = generate(*decoder, picker, request.prompt, request.tokens, request.stop, each);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.cache_bytes = decoder->cache_bytes();
  return r;
}

}  // namespace zt
