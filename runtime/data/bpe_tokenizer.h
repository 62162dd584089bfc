// BpeTokenizer: a BPE tokenizer read from a Hugging Face tokenizer.json or from GPT-2's vocab.json +
// merges.txt, turning text into token ids and ids back into bytes the way the tokenizers package does
// for these files; `zerotrain sample` and `--sample-every` use it for their prompt and their output.
// Two families of files: byte-level (GPT-2's, Llama-3's, SmolLM2's) and SentencePiece-style
// (Llama-2's, TinyLlama's, Mistral's: words marked with U+2581, characters outside the vocabulary
// spelled as <0xNN> byte tokens).
//
// Supported: model.type "BPE" (no dropout, no subword prefix or suffix; unk_token, fuse_unk,
// byte_fallback and ignore_merges honoured); a normalizer that is none, Prepend, Replace or a
// Sequence of them; a pre-tokenizer that is none, ByteLevel, Metaspace (each prepend scheme, split or
// not) or a Sequence of Split steps (a Regex or String pattern, any behaviour) and Digits steps that
// may end in ByteLevel or Metaspace; a decoder that is none, ByteLevel, Replace, ByteFallback, Fuse,
// Strip, Metaspace or a Sequence of them; added_tokens (special or not, with single_word, lstrip and
// rstrip, matched in the raw text or, normalized, in the normalized text); a post-processor's
// TemplateProcessing for one text. Refused at load with a zt::UserError naming the file and the key:
// WordPiece, Unigram and WordLevel models, and any other normalizer, pre-tokenizer or decoder.
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

  // The ids of utf8_text. Added tokens written in the text are their own ids. With
  // add_special_tokens the post-processor's template puts its tokens around them (Llama-2's <s>
  // first), as tokenizers' encode(add_special_tokens=True); a post-processor other than
  // TemplateProcessing or ByteLevel is then a zt::UserError. Throws std::invalid_argument, with the
  // byte offset, when the text is not UTF-8.
  std::vector<int32_t> encode(const std::string& utf8_text, bool add_special_tokens = false) const;

  // The text of ids as tokenizers' decode(ids, skip_special_tokens=False) gives it, as the exact
  // bytes: where a byte-level token or a run of <0xNN> tokens holds part of a UTF-8 character, the
  // bytes are returned as they are (tokenizers puts U+FFFD in their place, for every byte of a run
  // of <0xNN> tokens that is not valid UTF-8). Throws std::out_of_range
  // naming an id that is not in the vocabulary.
  std::string decode(const std::vector<int32_t>& ids) const;

  // The bytes ids add to a text that came before them: decode's, without the rules for the start of
  // a text (the Strip decoder's leading space, Metaspace's first token), so that decoding a
  // generated sequence one id at a time and concatenating gives the text of the whole sequence.
  std::string decode_continuation(const std::vector<int32_t>& ids) const;

  // The largest id in the vocabulary or among the added tokens + 1.
  int32_t vocab_size() const;

  // The id of a token as the vocabulary spells it (added tokens first), e.g. "<|endoftext|>".
  std::optional<int32_t> token_id(const std::string& token) const;

  // The token scripts/prepare_data.py puts before every document, and generation starts from without
  // a prompt: the first of <|endoftext|>, <|begin_of_text|>, <|end_of_text|>, <s>, </s> it has.
  std::optional<int32_t> document_token() const;

  // The token that ends a text, where generation stops: the first of <|endoftext|>, <|end_of_text|>,
  // </s> it has.
  std::optional<int32_t> end_of_text() const;

  // The file it was read from: the tokenizer.json, or the vocab.json of a vocab.json + merges.txt pair.
  std::string name() const;

 private:
  struct Impl;
  explicit BpeTokenizer(std::shared_ptr<const Impl> impl);
  // Immutable once loaded: copies share it, and const calls may run on many threads at once.
  std::shared_ptr<const Impl> impl_;
};

}  // namespace zt
