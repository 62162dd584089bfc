// BpeTokenizer: a byte-level BPE tokenizer (GPT-2's, Llama-3's) read from a Hugging Face
// tokenizer.json or from GPT-2's vocab.json + merges.txt, turning text into token ids and ids back
// into bytes the way the tokenizers package does for these files; `zerotrain sample` uses it for its
// prompt and its output.
//
// Supported: model.type "BPE" (byte_fallback off, no dropout, no subword prefix or suffix; unk_token
// and ignore_merges honoured), no normalizer, a pre-tokenizer that is ByteLevel or a Sequence of
// Split steps (a Regex or String pattern, any behaviour) ending in one ByteLevel, and a ByteLevel
// decoder; added_tokens (special or not, with single_word, lstrip and rstrip) are split out of the
// text first. Not supported, and refused at load with a zt::UserError: SentencePiece-style files
// (Metaspace, byte_fallback: Llama-2, Mistral), WordPiece, Unigram, WordLevel, and normalizers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zt {

class BpeTokenizer {
 public:
  // path: a tokenizer.json; a folder holding tokenizer.json, or else vocab.json + merges.txt; or
  // GPT-2's vocab.json (or merges.txt) with the other file beside it. The vocab.json + merges.txt
  // pair is read as GPT-2's tokenizer: ByteLevel without a prefix space, and <|endoftext|> (or
  // another document token the vocabulary has) as a special token. Throws zt::UserError naming the
  // file, the JSON key and the fix when the file is missing, does not parse or is of a kind not
  // supported.
  static BpeTokenizer load(const std::string& path);

  // The ids of utf8_text, with no special tokens added (tokenizers' add_special_tokens=False).
  // Added tokens written in the text are their own ids. Throws std::invalid_argument, with the byte
  // offset, when the text is not UTF-8.
  std::vector<int32_t> encode(const std::string& utf8_text) const;

  // The exact bytes of ids (added tokens give their content). One id alone may give part of a
  // UTF-8 character: the bytes are returned as they are, never replaced. Throws std::out_of_range
  // naming an id that is not in the vocabulary.
  std::string decode(const std::vector<int32_t>& ids) const;

  // The largest id in the vocabulary or among the added tokens + 1.
  int32_t vocab_size() const;

  // The id of a token as the vocabulary spells it (added tokens first), e.g. "<|endoftext|>".
  std::optional<int32_t> token_id(const std::string& token) const;

  // The file it was read from: the tokenizer.json, or the vocab.json of a vocab.json + merges.txt pair.
  std::string name() const;

 private:
  struct Impl;
  explicit BpeTokenizer(std::shared_ptr<const Impl> impl);
  // Immutable once loaded: copies share it, and const calls may run on many threads at once.
  std::shared_ptr<const Impl> impl_;
};

}  // namespace zt
