// BpeTokenizer: reading tokenizer.json (or vocab.json + merges.txt) and the pipeline the tokenizers
// package runs for a BPE file: added tokens split out of the raw text, the normalizer (Prepend,
// Replace), added tokens split out of the normalized text, the pre-tokenizer (regex splits, then
// GPT-2's byte alphabet or the metaspace), the merges applied lowest rank first (byte fallback and
// the unknown token for what the vocabulary lacks), the post-processor's template, and the decoder
// chain back to bytes.
#include "runtime/data/bpe_tokenizer.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "runtime/common/diagnostics.h"
#include "runtime/data/unicode_regex.h"

namespace zt {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The pre-tokenizer regex of GPT-2 (ByteLevel with use_regex true).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// The document tokens that a vocab.json + merges.txt pair gets as special tokens when its vocabulary
// has them, and the token scripts/prepare_data.py puts before every document: the first of these
// the tokenizer has.
constexpr std::array<const char*, 5> kDocumentTokens = {"<|endoftext|>", "<|begin_of_text|>", "<|end_of_text|>",
                                                        "<s>", "</s>"};
// The token that ends a text (generation stops there): the first of these the tokenizer has.
constexpr std::array<const char*, 3> kEndTokens = {"<|endoftext|>", "<|end_of_text|>", "</s>"};

constexpr const char* kSupportedFix =
    "give the tokenizer.json of a BPE model: byte-level (GPT-2's, Llama-3's: a ByteLevel pre-tokenizer and "
    "decoder) or SentencePiece-style (Llama-2's, Mistral's: Metaspace or the Prepend + Replace normalizer, "
    "byte_fallback), or GPT-2's vocab.json + merges.txt";

// What a decoder gives back for a list of tokens: tokenizers joins the tokens with a space when the
// file has no decoder. decode_continuation puts this token first and takes its bytes off again, so
// that rules for the start of a text (Strip, Metaspace's first token) do not apply. The supported
// decoders leave it as it is unless a Replace or Strip step names \x01 itself; then the ids are
// decoded as the start of a text.
constexpr char kContinuationMark[] = "\x01";

// ---- GPT-2's byte alphabet ----

// Byte-level BPE spells every byte as one printable character, so that no token holds a space or a
// control character: the printable Latin-1 bytes ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) stand
// for themselves, and the 68 others take U+0100, U+0101, ... in byte order (the space is U+0120 'Ġ').
struct ByteAlphabet {
  std::array<std::string, 256> char_of_byte;              // the UTF-8 of each byte's character
  std::unordered_map<std::string, uint8_t> byte_of_char;  // the inverse
};

ByteAlphabet make_byte_alphabet() {
  ByteAlphabet alphabet;
  uint32_t next_stand_in = 256;
  for (int byte = 0; byte < 256; ++byte) {
    const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
    append_utf8(alphabet.char_of_byte[byte], printable ? uint32_t(byte) : next_stand_in++);
    alphabet.byte_of_char[alphabet.char_of_byte[byte]] = uint8_t(byte);
  }
  return alphabet;
}

// ---- Patterns and the steps of a tokenizer ----

// A Split or Replace step's pattern: a regex, or a literal string ({"String": ...} in the file).
struct Pattern {
  std::optional<Regex> regex;
  std::string literal;  // when regex is empty

  // The matches in text, left to right, not overlapping.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const {
    if (regex) return regex->find_all(text);
    std::vector<std::pair<size_t, size_t>> found;
    if (literal.empty()) return found;
    for (size_t at = text.find(literal); at != std::string_view::npos; at = text.find(literal, at + literal.size()))
      found.emplace_back(at, at + literal.size());
    return found;
  }

  // text with every match replaced by content.
  std::string replace_all(std::string_view text, const std::string& content) const {
    std::string out;
    size_t copied = 0;
    for (const auto& [begin, end] : find_all(text)) {
      out.append(text.substr(copied, begin - copied));
      out += content;
      copied = end;
    }
    out.append(text.substr(copied));
    return out;
  }
};

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool single_word = false;  // only where no word character (\w) touches it on either side
  bool lstrip = false;       // takes the whitespace before it
  bool rstrip = false;       // takes the whitespace after it
  bool normalized = false;   // matched in the normalized text (a second pass), by its normalized content
};

// Finds added tokens in text literally: the leftmost match, and of those starting there the longest,
// as tokenizers' Aho-Corasick automaton (MatchKind::LeftmostLongest) does.
class AddedTokenMatcher {
 public:
  void add(const std::string& content, size_t token_index) {
    if (content.empty()) return;  // tokenizers skips empty added tokens
    auto& bucket = by_first_byte_[static_cast<unsigned char>(content[0])];
    const auto longer = [](const Entry& entry, size_t length) { return entry.content.size() >= length; };
    bucket.insert(std::lower_bound(bucket.begin(), bucket.end(), content.size(), longer), Entry{content, token_index});
  }

  struct Match {
    size_t begin, length, token_index;
  };
  // The first token found at or after `from`.
  std::optional<Match> find(std::string_view text, size_t from) const {
    for (size_t pos = from; pos < text.size(); ++pos)
      for (const Entry& entry : by_first_byte_[static_cast<unsigned char>(text[pos])])  // longest first
        if (text.compare(pos, entry.content.size(), entry.content) == 0)
          return Match{pos, entry.content.size(), entry.token_index};
    return std::nullopt;
  }

 private:
  struct Entry {
    std::string content;
    size_t token_index;
  };
  std::array<std::vector<Entry>, 256> by_first_byte_;
};

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// A Split pre-tokenizer step: a pattern, and what becomes of the matches.
struct SplitStep {
  Pattern pattern;
  SplitBehavior behavior = SplitBehavior::Isolated;
  bool invert = false;  // the parts between matches are the matches
};

// The Metaspace pre-tokenizer: spaces become the replacement character (U+2581 as a rule), one is
// prepended to a piece that does not start with it (always; first: only to the piece at the start
// of the text; never), and with split each piece is cut before every replacement character.
enum class PrependScheme { Always, First, Never };
struct MetaspaceStep {
  std::string replacement;  // one character, UTF-8
  PrependScheme scheme = PrependScheme::Always;
  bool split = true;
};

// A normalizer step: Prepend puts `content` before a non-empty text; Replace turns every match of
// `pattern` into `content`.
struct NormalizerStep {
  bool prepend = false;
  Pattern pattern;
  std::string content;
};

// A decoder step, as tokenizers' decoders work on the list of token strings.
enum class DecoderKind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace };
struct DecoderStep {
  DecoderKind kind = DecoderKind::ByteLevel;
  Pattern pattern;             // Replace
  std::string content;         // Replace: the replacement; Strip and Metaspace: their character
  size_t start = 0, stop = 0;  // Strip: at most this many characters off each end of each token
  bool first_token_drops = false;  // Metaspace (prepend scheme not never): in the first token the character goes
};

// The post-processor's template for one text (TemplateProcessing's "single"): the ids of its special
// tokens around the text's own.
struct TemplatePart {
  bool is_text = false;
  std::vector<int32_t> ids;  // a special token's
};

struct Merge {
  int32_t rank;
  int32_t merged_id;
};

uint64_t pair_key(int32_t left, int32_t right) { return (uint64_t(uint32_t(left)) << 32) | uint32_t(right); }

// A stretch of the text: an added token's (token_id set) or text still to tokenize, and where it starts.
struct Segment {
  std::string_view text;
  std::optional<int32_t> token_id;
  size_t offset = 0;
};

// ---- Where the tokenizer comes from, and what is wrong with it ----

// Where a problem is: the file, and the JSON key (or the line) in it.
struct Origin {
  std::string file;

  [[noreturn]] void fail(const std::string& key, const std::string& value, const std::string& message,
                         const std::string& fix = kSupportedFix) const {
    throw UserError(key.empty() ? file : file + ": " + key, value, message, fix);
  }
};

std::string value_text(const json& value) {
  std::string text = value.dump();
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

const json* member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

bool bool_member(const json& object, const char* key, bool fallback, const Origin& origin, const std::string& where) {
  const json* value = member(object, key);
  if (!value) return fallback;
  if (!value->is_boolean()) origin.fail(where + key, value_text(*value), "must be true or false", "fix the file");
  return value->get<bool>();
}

std::string string_member(const json& object, const char* key, const Origin& origin, const std::string& where) {
  const json* value = member(object, key);
  if (!value || !value->is_string())
    origin.fail(where + key, value ? value_text(*value) : "", "needs a string", "fix the file");
  return value->get<std::string>();
}

int32_t token_id_value(const json& value, const Origin& origin, const std::string& where) {
  if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
      value.get<int64_t>() >= std::numeric_limits<int32_t>::max())  // the vocabulary size must fit too
    origin.fail(where, value_text(value), "a token id must be an integer from 0 to 2^31 - 2", "fix the file");
  return int32_t(value.get<int64_t>());
}

json read_json(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UserError(file, "", "cannot open the file", "check the path and its permissions");
  try {
    return json::parse(in);
  } catch (const json::parse_error& e) {
    throw UserError(file, "", std::string("not JSON (") + e.what() + ")", kSupportedFix);
  }
}

// The files a path names: a tokenizer.json, or a vocab.json + merges.txt pair.
struct TokenizerFiles {
  std::string tokenizer_json;  // empty for the pair
  std::string vocab_json, merges_txt;
};

constexpr const char* kWhereFix =
    "give the path of a tokenizer.json, of GPT-2's vocab.json (merges.txt beside it), or of a folder holding either";

// A SentencePiece model file (Llama-2's tokenizer.model, a protobuf) is not read: its
// tokenizer.json, which transformers writes from it, is.
constexpr const char* kSentencePieceModel =
    "a SentencePiece tokenizer.model is not read (only its tokenizer.json form, which holds the same tokenizer)";
constexpr const char* kSentencePieceFix =
    "write the tokenizer.json beside it with transformers: AutoTokenizer.from_pretrained(FOLDER).save_pretrained(FOLDER)";

TokenizerFiles locate_files(const std::string& path) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (!fs::exists(status)) throw UserError(path, "", "no such file or folder", kWhereFix);
  const auto pair_of = [](const fs::path& vocab, const fs::path& merges) {
    for (const fs::path& file : {vocab, merges})
      if (!fs::is_regular_file(file))
        throw UserError(file.string(), "", "GPT-2's vocab.json and merges.txt go together, and this one is missing",
                        "put " + vocab.filename().string() + " and " + merges.filename().string() +
                            " in the same folder, or give a tokenizer.json");
    return TokenizerFiles{"", vocab.string(), merges.string()};
  };
  const fs::path given(path);
  if (fs::is_directory(status)) {
    if (fs::is_regular_file(given / "tokenizer.json")) return {(given / "tokenizer.json").string(), "", ""};
    if (fs::exists(given / "vocab.json") || fs::exists(given / "merges.txt"))
      return pair_of(given / "vocab.json", given / "merges.txt");
    if (fs::exists(given / "tokenizer.model")) throw UserError((given / "tokenizer.model").string(), "", kSentencePieceModel, kSentencePieceFix);
    throw UserError(path, "", "the folder holds neither tokenizer.json nor vocab.json + merges.txt", kWhereFix);
  }
  if (given.extension() == ".model") throw UserError(path, "", kSentencePieceModel, kSentencePieceFix);
  const std::string file_name = given.filename().string();
  const std::string vocab_suffix = "vocab.json", merges_suffix = "merges.txt";
  const auto ends_with = [&](const std::string& suffix) {
    return file_name.size() >= suffix.size() && file_name.compare(file_name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  // tokenizers' model.save(folder, prefix) names the pair PREFIX-vocab.json and PREFIX-merges.txt.
  const std::string stem = file_name.substr(0, file_name.size() - (ends_with(vocab_suffix) ? vocab_suffix.size() : merges_suffix.size()));
  if (ends_with(vocab_suffix)) return pair_of(given, given.parent_path() / (stem + merges_suffix));
  if (ends_with(merges_suffix)) return pair_of(given.parent_path() / (stem + vocab_suffix), given);
  return {path, "", ""};
}

// A merge written "left right": exactly one space, neither side empty.
bool split_merge_line(const std::string& line, std::string& left, std::string& right) {
  const size_t space = line.find(' ');
  if (space == std::string::npos || space == 0 || space + 1 == line.size() || line.find(' ', space + 1) != std::string::npos)
    return false;
  left = line.substr(0, space), right = line.substr(space + 1);
  return true;
}

SplitStep gpt2_split() {
  SplitStep split;
  split.pattern.regex.emplace(kGpt2Pattern);
  split.behavior = SplitBehavior::Isolated;
  return split;
}

// ---- The tokenizer ----

struct Span {
  size_t begin, end;
  bool is_match;
};

// The pieces of text around a Split step's matches ({begin, end} in text), as tokenizers'
// NormalizedString::split makes them.
std::vector<std::pair<size_t, size_t>> split_piece(std::string_view text, const SplitStep& step) {
  std::vector<Span> spans;  // the whole text, in order
  size_t previous_end = 0;
  for (const auto& [begin, end] : step.pattern.find_all(text)) {
    if (begin != previous_end) spans.push_back({previous_end, begin, false});
    spans.push_back({begin, end, true});
    previous_end = end;
  }
  if (previous_end != text.size()) spans.push_back({previous_end, text.size(), false});
  if (step.invert)
    for (Span& span : spans) span.is_match = !span.is_match;

  // What each behaviour keeps; in `kept`, is_match means "drop".
  std::vector<Span> kept;
  bool previous_match = false;
  switch (step.behavior) {
    case SplitBehavior::Removed:
      kept = spans;
      break;
    case SplitBehavior::Isolated:
      for (const Span& span : spans) kept.push_back({span.begin, span.end, false});
      break;
    case SplitBehavior::MergedWithPrevious:
      for (const Span& span : spans) {
        if (span.is_match && !previous_match && !kept.empty())
          kept.back().end = span.end;
        else
          kept.push_back({span.begin, span.end, false});
        previous_match = span.is_match;
      }
      break;
    case SplitBehavior::MergedWithNext:
      for (auto span = spans.rbegin(); span != spans.rend(); ++span) {
        if (span->is_match && !previous_match && !kept.empty())
          kept.back().begin = span->begin;
        else
          kept.push_back({span->begin, span->end, false});
        previous_match = span->is_match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    case SplitBehavior::Contiguous:
      for (const Span& span : spans) {
        if (span.is_match == previous_match && !kept.empty())
          kept.back().end = span.end;
        else
          kept.push_back({span.begin, span.end, false});
        previous_match = span.is_match;
      }
      break;
  }
  std::vector<std::pair<size_t, size_t>> pieces;
  for (const Span& span : kept)
    if (!span.is_match && span.end > span.begin) pieces.emplace_back(span.begin, span.end);
  return pieces;
}

// The characters of a token (the last one cut short when the bytes are not UTF-8: one byte each).
std::vector<std::string_view> characters(std::string_view token) {
  std::vector<std::string_view> out;
  for (size_t pos = 0; pos < token.size();) {
    const size_t length = std::max<size_t>(1, utf8_char_length(token, pos));
    out.push_back(token.substr(pos, length));
    pos += length;
  }
  return out;
}

// The byte a byte-fallback token stands for: "<0xNN>" (as Rust's u8::from_str_radix reads NN: two hex
// digits of either case, or '+' and one).
std::optional<uint8_t> fallback_byte(std::string_view token) {
  if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') return std::nullopt;
  const auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  const int high = token[3] == '+' ? 0 : digit(token[3]), low = digit(token[4]);
  if (high < 0 || low < 0) return std::nullopt;
  return uint8_t(high * 16 + low);
}

// Everything a loaded tokenizer holds, and the encoding and decoding steps.
struct BpePipeline {
  std::string name;
  ByteAlphabet alphabet = make_byte_alphabet();

  // The BPE model.
  std::unordered_map<std::string, int32_t> vocab;
  std::unordered_map<uint64_t, Merge> merges;  // (left id, right id) -> rank and the merged token
  std::optional<int32_t> unk_id;
  bool fuse_unk = false;
  bool ignore_merges = false;  // a word that is in the vocabulary is its own token, unmerged
  bool byte_fallback = false;  // a character the vocabulary lacks becomes its bytes' <0xNN> tokens
  std::array<std::optional<int32_t>, 256> byte_token_ids;  // the <0xNN> tokens the vocabulary has

  // Added tokens; the first pass splits out those matched in the raw text (normalized false: the
  // special tokens as a rule), the second those matched in the normalized text.
  std::vector<AddedToken> added;
  std::unordered_map<std::string, int32_t> added_ids;
  AddedTokenMatcher raw_text_tokens, normalized_text_tokens;

  std::vector<NormalizerStep> normalizers;

  // The pre-tokenizer: Split steps, then ByteLevel (byte_level true) or Metaspace, or neither.
  std::vector<SplitStep> splits;
  bool byte_level = false;  // words are spelled in GPT-2's byte alphabet
  bool add_prefix_space = false;
  std::optional<SplitStep> byte_level_split;  // GPT-2's regex, Isolated, when ByteLevel's use_regex is true
  std::optional<MetaspaceStep> metaspace;

  // The post-processor's template for one text; empty: it adds nothing (none, or ByteLevel's).
  std::vector<TemplatePart> single_template;
  std::string post_processor_refused;  // a post-processor whose special tokens cannot be added: its type

  // The decoder; without one, tokens are joined with spaces.
  std::optional<std::vector<DecoderStep>> decoders;

  // Each id's token as the vocabulary spells it (added tokens: their content), and the largest id + 1.
  std::unordered_map<int32_t, std::string> token_of_id;
  int32_t vocab_size = 0;
  // single_word, lstrip and rstrip look at the characters around a token as tokenizers does, with
  // the Rust regex crate's Unicode \w and \s.
  Regex word_char{R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}])"};
  Regex whitespace_char{R"(\p{White_Space})"};

  void add_merge(const std::string& left, const std::string& right, int32_t rank, const Origin& origin,
                 const std::string& where);
  void add_token(AddedToken token);
  void finish();  // once everything is read: the normalized added tokens, the byte tokens, the id table

  std::string normalize(std::string_view text) const;
  void split_at_added_tokens(std::string_view text, const AddedTokenMatcher& matcher, std::vector<Segment>& out) const;
  std::vector<std::string> pre_tokenize(std::string_view text, bool at_text_start) const;
  void merge_word(const std::string& word, std::vector<int32_t>& ids) const;
  void encode_text(std::string_view text, std::vector<int32_t>& ids) const;
  std::vector<std::string> tokens_of(const std::vector<int32_t>& ids) const;
  std::string run_decoders(std::vector<std::string> tokens) const;

  bool is_word_char_at(std::string_view text, size_t pos) const {
    return word_char.matches_all(text.substr(pos, utf8_char_length(text, pos)));
  }
  bool is_whitespace_at(std::string_view text, size_t pos) const {
    return whitespace_char.matches_all(text.substr(pos, utf8_char_length(text, pos)));
  }
};

void BpePipeline::add_merge(const std::string& left, const std::string& right, int32_t rank, const Origin& origin,
                            const std::string& where) {
  const auto left_id = vocab.find(left), right_id = vocab.find(right), merged_id = vocab.find(left + right);
  if (left_id == vocab.end() || right_id == vocab.end() || merged_id == vocab.end())
    origin.fail(where, left + " " + right,
                "the merge's tokens, or the token \"" + left + right + "\" it makes, are not in the vocabulary",
                "use the vocabulary and the merges of one tokenizer, unmodified");
  // A pair listed twice keeps its later rank, as tokenizers' map of merges does.
  merges[pair_key(left_id->second, right_id->second)] = Merge{rank, merged_id->second};
}

void BpePipeline::add_token(AddedToken token) {
  added_ids[token.content] = token.id;
  added.push_back(std::move(token));
}

void BpePipeline::finish() {
  // tokenizers looks for a normalized added token in the normalized text by its normalized content.
  for (size_t i = 0; i < added.size(); ++i) {
    if (added[i].normalized)
      normalized_text_tokens.add(normalize(added[i].content), i);
    else
      raw_text_tokens.add(added[i].content, i);
  }
  for (int byte = 0; byte < 256; ++byte) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    const std::string token = std::string("<0x") + kHex[byte >> 4] + kHex[byte & 15] + ">";
    if (const auto id = vocab.find(token); id != vocab.end()) byte_token_ids[byte] = id->second;
  }
  for (const auto& [token, id] : vocab) token_of_id[id] = token;
  // A normalized added token decodes from its normalized form, as tokenizers' decode takes it (so
  // that the decoder undoes the normalizer: Prepend's mark becomes a space again).
  for (const AddedToken& token : added) token_of_id[token.id] = token.normalized ? normalize(token.content) : token.content;
  for (const auto& [id, token] : token_of_id) vocab_size = std::max(vocab_size, id + 1);
}

std::string BpePipeline::normalize(std::string_view text) const {
  std::string out(text);
  for (const NormalizerStep& step : normalizers) {
    if (step.prepend)
      out = out.empty() ? out : step.content + out;
    else
      out = step.pattern.replace_all(out, step.content);
  }
  return out;
}

// tokenizers' AddedVocabulary::find_matches: the tokens found, and the text between them.
void BpePipeline::split_at_added_tokens(std::string_view text, const AddedTokenMatcher& matcher,
                                        std::vector<Segment>& out) const {
  size_t emitted_until = 0;  // text before here is in `out`
  for (size_t search_from = 0; auto found = matcher.find(text, search_from);) {
    const AddedToken& token = added[found->token_index];
    size_t begin = found->begin, end = begin + found->length;
    search_from = end;  // the search goes on after the match itself, whatever lstrip and rstrip take
    if (token.single_word) {
      const bool word_before = begin > 0 && is_word_char_at(text, previous_char_start(text, begin));
      const bool word_after = end < text.size() && is_word_char_at(text, end);
      if (word_before || word_after) continue;
    }
    if (token.lstrip)  // not into the spaces a token before took already
      while (begin > emitted_until && is_whitespace_at(text, previous_char_start(text, begin)))
        begin = previous_char_start(text, begin);
    if (token.rstrip)
      while (end < text.size() && is_whitespace_at(text, end)) end += utf8_char_length(text, end);
    // A token right after one whose rstrip took the spaces it starts with: tokenizers would give
    // those bytes to both; here the first keeps them.
    begin = std::max(begin, emitted_until);
    if (emitted_until < begin)
      out.push_back({text.substr(emitted_until, begin - emitted_until), std::nullopt, emitted_until});
    out.push_back({text.substr(begin, end - begin), token.id, begin});
    emitted_until = end;
  }
  if (emitted_until < text.size()) out.push_back({text.substr(emitted_until), std::nullopt, emitted_until});
}

// The words of one stretch of normalized text; at_text_start: it begins the whole text (Metaspace's
// "first" prepends to that piece only, as tokenizers does by the piece's original offset 0).
std::vector<std::string> BpePipeline::pre_tokenize(std::string_view text, bool at_text_start) const {
  struct Piece {
    std::string text;
    bool at_text_start;
  };
  std::vector<Piece> pieces{{std::string(text), at_text_start}};
  for (const SplitStep& step : splits) {
    std::vector<Piece> next;
    for (const Piece& piece : pieces)
      for (const auto& [begin, end] : split_piece(piece.text, step))
        next.push_back({piece.text.substr(begin, end - begin), piece.at_text_start && begin == 0});
    pieces = std::move(next);
  }
  std::vector<std::string> words;
  for (Piece& piece : pieces) {
    std::string word = std::move(piece.text);
    if (byte_level) {
      // ByteLevel: the prefix space goes on every piece that has none, before its regex splits it.
      if (add_prefix_space && word.front() != ' ') word.insert(word.begin(), ' ');
    } else if (metaspace) {
      const MetaspaceStep& m = *metaspace;
      word = Pattern{std::nullopt, " "}.replace_all(word, m.replacement);
      const bool starts_marked = word.compare(0, m.replacement.size(), m.replacement) == 0;
      if (!starts_marked && (m.scheme == PrependScheme::Always || (m.scheme == PrependScheme::First && piece.at_text_start)))
        word.insert(0, m.replacement);
      if (m.split) {
        const SplitStep at_marks{Pattern{std::nullopt, m.replacement}, SplitBehavior::MergedWithNext, false};
        for (const auto& [begin, end] : split_piece(word, at_marks)) words.push_back(word.substr(begin, end - begin));
        continue;
      }
    }
    if (byte_level && byte_level_split) {
      for (const auto& [begin, end] : split_piece(word, *byte_level_split)) words.push_back(word.substr(begin, end - begin));
      continue;
    }
    words.push_back(std::move(word));
  }
  if (byte_level)  // spelled in the byte alphabet, as ByteLevel leaves the words for the model
    for (std::string& word : words) {
      std::string spelled;
      for (unsigned char byte : word) spelled += alphabet.char_of_byte[byte];
      word = std::move(spelled);
    }
  return words;
}

// One word to ids: its characters, then the merges by rank (tokenizers' BPE::merge_word).
void BpePipeline::merge_word(const std::string& word, std::vector<int32_t>& ids) const {
  if (ignore_merges)
    if (const auto whole = vocab.find(word); whole != vocab.end()) {
      ids.push_back(whole->second);
      return;
    }
  std::vector<int32_t> symbols;
  // An unknown character waits: with fuse_unk the unknown characters after it join it, and byte
  // fallback's tokens go in before it (as tokenizers orders them).
  bool unknown_waiting = false;
  for (const std::string_view character : characters(word)) {
    if (const auto known = vocab.find(std::string(character)); known != vocab.end()) {
      if (unknown_waiting) symbols.push_back(*unk_id), unknown_waiting = false;
      symbols.push_back(known->second);
      continue;
    }
    if (byte_fallback && std::all_of(character.begin(), character.end(),
                                     [&](char byte) { return byte_token_ids[uint8_t(byte)].has_value(); })) {
      for (char byte : character) symbols.push_back(*byte_token_ids[uint8_t(byte)]);
      continue;
    }
    if (!unk_id) continue;  // without an unk_token tokenizers drops the character
    if (unknown_waiting && !fuse_unk) symbols.push_back(*unk_id);
    unknown_waiting = true;
  }
  if (unknown_waiting) symbols.push_back(*unk_id);
  // The lowest-ranked pair first, the leftmost of equal ones: the order of tokenizers' merge queue.
  // A queue of candidate pairs over a linked list of symbols keeps a long word (a Llama-2 text
  // without a pre-tokenizer is one word) at n log n; a candidate whose pair has since changed is
  // dropped when it comes up.
  if (symbols.size() > 1) {
    struct Candidate {
      int32_t rank, merged_id;
      uint32_t left;  // position of the pair's left symbol
      bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
    };
    constexpr uint32_t none = ~0u;
    struct Link {
      uint32_t prev, next;  // none at the ends; a symbol merged into its left neighbour has prev == next == none
    };
    const uint32_t n = uint32_t(symbols.size());
    std::vector<Link> links(n);
    for (uint32_t i = 0; i < n; ++i) links[i] = {i > 0 ? i - 1 : none, i + 1 < n ? i + 1 : none};
    const auto gone = [&](uint32_t i) { return i > 0 && links[i].prev == none; };
    std::vector<Candidate> heap;
    heap.reserve(n);
    const auto offer = [&](uint32_t left) {
      if (left == none || links[left].next == none) return;
      if (const auto merge = merges.find(pair_key(symbols[left], symbols[links[left].next])); merge != merges.end()) {
        heap.push_back({merge->second.rank, merge->second.merged_id, left});
        std::push_heap(heap.begin(), heap.end(), std::greater<>());
      }
    };
    for (uint32_t i = 0; i + 1 < n; ++i) offer(i);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      const Candidate c = heap.back();
      heap.pop_back();
      const uint32_t right = links[c.left].next;
      if (gone(c.left) || right == none) continue;
      const auto merge = merges.find(pair_key(symbols[c.left], symbols[right]));
      if (merge == merges.end() || merge->second.rank != c.rank || merge->second.merged_id != c.merged_id) continue;
      symbols[c.left] = c.merged_id;
      links[c.left].next = links[right].next;
      if (links[right].next != none) links[links[right].next].prev = c.left;
      links[right] = {none, none};
      offer(links[c.left].prev);
      offer(c.left);
    }
    size_t kept = 0;
    for (uint32_t i = 0; i < n; ++i)
      if (!gone(i)) symbols[kept++] = symbols[i];
    symbols.resize(kept);
  }
  ids.insert(ids.end(), symbols.begin(), symbols.end());
}

// tokenizers' AddedVocabulary::extract_and_normalize, then the pre-tokenizer and the model: added
// tokens matched in the raw text; the text between them normalized; added tokens matched in that;
// the rest pre-tokenized into words and each word merged.
void BpePipeline::encode_text(std::string_view text, std::vector<int32_t>& ids) const {
  std::vector<Segment> raw;
  split_at_added_tokens(text, raw_text_tokens, raw);
  for (const Segment& segment : raw) {
    if (segment.token_id) {
      ids.push_back(*segment.token_id);
      continue;
    }
    const std::string normalized = normalize(segment.text);
    std::vector<Segment> parts;
    split_at_added_tokens(normalized, normalized_text_tokens, parts);
    for (const Segment& part : parts) {
      if (part.token_id) {
        ids.push_back(*part.token_id);
        continue;
      }
      for (const std::string& word : pre_tokenize(part.text, segment.offset == 0 && part.offset == 0))
        merge_word(word, ids);
    }
  }
}

std::vector<std::string> BpePipeline::tokens_of(const std::vector<int32_t>& ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    const auto token = token_of_id.find(id);
    if (token == token_of_id.end())
      throw std::out_of_range("BpeTokenizer::decode: id " + std::to_string(id) + " is not in the vocabulary of " +
                              name + " (ids 0 to " + std::to_string(vocab_size - 1) + ")");
    tokens.push_back(token->second);
  }
  return tokens;
}

// tokenizers' decoders, step by step over the token strings, then joined; bytes that are not UTF-8
// stay as they are (tokenizers' ByteLevel and ByteFallback put U+FFFD in their place).
std::string BpePipeline::run_decoders(std::vector<std::string> tokens) const {
  if (!decoders) {
    std::string joined;
    for (size_t i = 0; i < tokens.size(); ++i) joined += (i ? " " : "") + tokens[i];
    return joined;
  }
  for (const DecoderStep& step : *decoders) {
    std::vector<std::string> next;
    switch (step.kind) {
      case DecoderKind::ByteLevel: {  // every token's characters back to bytes, all in one token
        std::string bytes;
        for (const std::string& token : tokens) {
          std::string mapped;
          bool all_mapped = true;
          for (const std::string_view character : characters(token)) {
            const auto byte = alphabet.byte_of_char.find(std::string(character));
            if (byte == alphabet.byte_of_char.end()) {
              all_mapped = false;
              break;
            }
            mapped += char(byte->second);
          }
          bytes += all_mapped ? mapped : token;  // a token outside the alphabet is its own UTF-8
        }
        next.push_back(std::move(bytes));
        break;
      }
      case DecoderKind::Replace:
        for (const std::string& token : tokens) next.push_back(step.pattern.replace_all(token, step.content));
        break;
      case DecoderKind::ByteFallback: {  // runs of <0xNN> tokens become their bytes, one token
        std::string pending;
        bool in_run = false;
        for (std::string& token : tokens) {
          if (const auto byte = fallback_byte(token)) {
            pending += char(*byte), in_run = true;
            continue;
          }
          if (in_run) next.push_back(std::move(pending)), pending.clear(), in_run = false;
          next.push_back(std::move(token));
        }
        if (in_run) next.push_back(std::move(pending));
        break;
      }
      case DecoderKind::Fuse: {
        std::string joined;
        for (const std::string& token : tokens) joined += token;
        next.push_back(std::move(joined));
        break;
      }
      case DecoderKind::Strip:
        for (const std::string& token : tokens) {
          const std::vector<std::string_view> chars = characters(token);
          size_t first = 0, last = chars.size();
          while (first < std::min(step.start, chars.size()) && chars[first] == step.content) ++first;
          while (last > first && chars.size() - last < step.stop && chars[last - 1] == step.content) --last;
          std::string kept;
          for (size_t i = first; i < last; ++i) kept += chars[i];
          next.push_back(std::move(kept));
        }
        break;
      case DecoderKind::Metaspace:
        for (size_t i = 0; i < tokens.size(); ++i) {
          std::string text;
          for (const std::string_view character : characters(tokens[i]))
            if (character != step.content)
              text += character;
            else if (!(i == 0 && step.first_token_drops))
              text += ' ';
          next.push_back(std::move(text));
        }
        break;
    }
    tokens = std::move(next);
  }
  std::string text;
  for (const std::string& token : tokens) text += token;
  return text;
}

// ---- Reading the files ----

size_t count_member(const json& object, const char* key, size_t fallback, const Origin& origin, const std::string& where) {
  const json* value = member(object, key);
  if (!value) return fallback;
  if (!value->is_number_unsigned()) origin.fail(where + key, value_text(*value), "must be a count >= 0", "fix the file");
  return value->get<size_t>();
}

// A member that must be exactly one character (Metaspace's replacement, Strip's content).
std::string character_member(const json& object, const char* key, const Origin& origin, const std::string& where) {
  const std::string text = string_member(object, key, origin, where);
  if (text.empty() || first_invalid_utf8(text) || utf8_char_length(text, 0) != text.size())
    origin.fail(where + key, value_text(object.at(key)), "must be one character", "fix the file");
  return text;
}

Pattern read_pattern(const json& step, const Origin& origin, const std::string& where) {
  Pattern read;
  const json* pattern = member(step, "pattern");
  const json* regex = pattern ? member(*pattern, "Regex") : nullptr;
  const json* literal = pattern ? member(*pattern, "String") : nullptr;
  if (regex && regex->is_string()) {
    try {
      read.regex.emplace(regex->get<std::string>());
    } catch (const std::invalid_argument& e) {
      origin.fail(where + "pattern.Regex", value_text(*regex), std::string("PCRE2 cannot compile the regex: ") + e.what(),
                  "write the pattern in a syntax both Oniguruma and PCRE2 read");
    }
  } else if (literal && literal->is_string()) {
    read.literal = literal->get<std::string>();
  } else {
    origin.fail(where + "pattern", pattern ? value_text(*pattern) : "", "needs {\"Regex\": ...} or {\"String\": ...}",
                "fix the file");
  }
  return read;
}

void read_byte_level(const json& step, BpePipeline& tokenizer, const Origin& origin, const std::string& where) {
  tokenizer.byte_level = true;
  tokenizer.add_prefix_space = bool_member(step, "add_prefix_space", true, origin, where);
  if (bool_member(step, "use_regex", true, origin, where)) tokenizer.byte_level_split = gpt2_split();
}

// Metaspace's prepend scheme, from "prepend_scheme" (default always) or the older "add_prefix_space".
PrependScheme read_prepend_scheme(const json& step, const Origin& origin, const std::string& where) {
  PrependScheme scheme = PrependScheme::Always;
  if (member(step, "prepend_scheme")) {
    const std::string name = string_member(step, "prepend_scheme", origin, where);
    if (name == "first")
      scheme = PrependScheme::First;
    else if (name == "never")
      scheme = PrependScheme::Never;
    else if (name != "always")
      origin.fail(where + "prepend_scheme", "\"" + name + "\"", "not a prepend scheme", "use always, first or never");
  }
  if (!bool_member(step, "add_prefix_space", true, origin, where)) {
    if (scheme != PrependScheme::Never)  // tokenizers refuses the file the same way
      origin.fail(where + "add_prefix_space", "false", "does not match prepend_scheme",
                  "drop add_prefix_space, or set \"prepend_scheme\": \"never\"");
    scheme = PrependScheme::Never;
  }
  return scheme;
}

MetaspaceStep read_metaspace(const json& step, const Origin& origin, const std::string& where) {
  MetaspaceStep metaspace;
  metaspace.replacement = character_member(step, "replacement", origin, where);
  metaspace.scheme = read_prepend_scheme(step, origin, where);
  metaspace.split = bool_member(step, "split", true, origin, where);
  return metaspace;
}

SplitBehavior split_behavior(const json& step, const Origin& origin, const std::string& where) {
  static constexpr std::array<std::pair<const char*, SplitBehavior>, 5> kNames = {
      {{"Removed", SplitBehavior::Removed},
       {"Isolated", SplitBehavior::Isolated},
       {"MergedWithPrevious", SplitBehavior::MergedWithPrevious},
       {"MergedWithNext", SplitBehavior::MergedWithNext},
       {"Contiguous", SplitBehavior::Contiguous}}};
  const std::string name = string_member(step, "behavior", origin, where);
  for (const auto& [known, behavior] : kNames)
    if (name == known) return behavior;
  origin.fail(where + "behavior", "\"" + name + "\"", "not a Split behaviour",
              "use Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous");
}

SplitStep read_split(const json& step, const Origin& origin, const std::string& where) {
  SplitStep split;
  split.pattern = read_pattern(step, origin, where);
  split.behavior = split_behavior(step, origin, where);
  split.invert = bool_member(step, "invert", false, origin, where);
  return split;
}

// tokenizers' Digits step: every numeric character (Unicode N, as Rust's char::is_numeric) its own
// piece with individual_digits, else each run of them one piece.
SplitStep read_digits(const json& step, const Origin& origin, const std::string& where) {
  SplitStep split;
  split.pattern.regex.emplace("\\p{N}");
  split.behavior = bool_member(step, "individual_digits", false, origin, where) ? SplitBehavior::Isolated
                                                                               : SplitBehavior::Contiguous;
  return split;
}

// A part of the file (normalizer, pre_tokenizer, decoder, post_processor) is one step or a Sequence
// of them under list_key: read_step(step, where its keys are, whether it is the last) for each.
void for_each_step(const json& part, const std::string& name, const char* list_key, const Origin& origin,
                   const std::function<void(const json&, const std::string&, bool)>& read_step) {
  if (string_member(part, "type", origin, name + ".") != "Sequence") return read_step(part, name + ".", true);
  const json* list = member(part, list_key);
  const std::string where = name + "." + list_key;
  if (!list || !list->is_array())
    origin.fail(where, list ? value_text(*list) : "", "a Sequence needs a list of steps", "fix the file");
  for (size_t i = 0; i < list->size(); ++i)
    read_step((*list)[i], where + "[" + std::to_string(i) + "].", i + 1 == list->size());
}

// None; ByteLevel; Metaspace; or a Sequence of Split or Digits steps, the last of which may be
// ByteLevel or Metaspace instead.
void read_pre_tokenizer(const json& file, BpePipeline& tokenizer, const Origin& origin) {
  const std::string supported =
      "the pre-tokenizer may be ByteLevel, Metaspace, none, or a Sequence of Split or Digits steps ending in "
      "ByteLevel or Metaspace";
  const json* pre_tokenizer = member(file, "pre_tokenizer");
  if (!pre_tokenizer) return;  // the normalized text is one word (Llama-2's legacy files)
  for_each_step(*pre_tokenizer, "pre_tokenizer", "pretokenizers", origin, [&](const json& step, const std::string& where, bool last) {
    const std::string type = string_member(step, "type", origin, where);
    if (type == "Split") {
      tokenizer.splits.push_back(read_split(step, origin, where));
    } else if (type == "Digits") {
      tokenizer.splits.push_back(read_digits(step, origin, where));
    } else if ((type == "ByteLevel" || type == "Metaspace") && !last) {
      origin.fail(where + "type", "\"" + type + "\"", type + " must be the last step: " + supported);
    } else if (type == "ByteLevel") {
      read_byte_level(step, tokenizer, origin, where);
    } else if (type == "Metaspace") {
      tokenizer.metaspace = read_metaspace(step, origin, where);
    } else {
      origin.fail(where + "type", "\"" + type + "\"", "not supported: " + supported);
    }
  });
}

// None, Prepend, Replace, or a Sequence of them: what Llama-2's and Mistral's files use.
void read_normalizer(const json& file, BpePipeline& tokenizer, const Origin& origin) {
  const json* normalizer = member(file, "normalizer");
  if (!normalizer) return;
  for_each_step(*normalizer, "normalizer", "normalizers", origin, [&](const json& step, const std::string& where, bool) {
    const std::string type = string_member(step, "type", origin, where);
    NormalizerStep read;
    if (type == "Prepend") {
      read.prepend = true;
      read.content = string_member(step, "prepend", origin, where);
    } else if (type == "Replace") {
      read.pattern = read_pattern(step, origin, where);
      read.content = string_member(step, "content", origin, where);
    } else {
      origin.fail(where + "type", "\"" + type + "\"",
                  "this normalizer is not supported: only Prepend and Replace, alone or in a Sequence (as "
                  "Llama-2's and Mistral's files use them)");
    }
    tokenizer.normalizers.push_back(std::move(read));
  });
}

// ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, or a Sequence of them; none: tokens
// joined with spaces, as tokenizers does.
void read_decoder(const json& file, BpePipeline& tokenizer, const Origin& origin) {
  const json* decoder = member(file, "decoder");
  if (!decoder) return;
  std::vector<DecoderStep>& steps = tokenizer.decoders.emplace();
  for_each_step(*decoder, "decoder", "decoders", origin, [&](const json& step, const std::string& where, bool) {
    const std::string type = string_member(step, "type", origin, where);
    DecoderStep read;
    if (type == "ByteLevel") {
      read.kind = DecoderKind::ByteLevel;
    } else if (type == "Replace") {
      read.kind = DecoderKind::Replace;
      read.pattern = read_pattern(step, origin, where);
      read.content = string_member(step, "content", origin, where);
    } else if (type == "ByteFallback") {
      read.kind = DecoderKind::ByteFallback;
    } else if (type == "Fuse") {
      read.kind = DecoderKind::Fuse;
    } else if (type == "Strip") {
      read.kind = DecoderKind::Strip;
      read.content = character_member(step, "content", origin, where);
      read.start = count_member(step, "start", 0, origin, where);
      read.stop = count_member(step, "stop", 0, origin, where);
    } else if (type == "Metaspace") {
      read.kind = DecoderKind::Metaspace;
      read.content = character_member(step, "replacement", origin, where);
      read.first_token_drops = read_prepend_scheme(step, origin, where) != PrependScheme::Never;
    } else {
      origin.fail(where + "type", "\"" + type + "\"",
                  "this decoder is not supported: only ByteLevel, Replace, ByteFallback, Fuse, Strip and Metaspace, "
                  "alone or in a Sequence");
    }
    steps.push_back(std::move(read));
  });
}

// The special tokens the post-processor adds to one text: TemplateProcessing's "single" (alone or in
// a Sequence, beside ByteLevel's, which adds none). Another post-processor is remembered by type, and
// encoding with special tokens is refused naming it.
void read_post_processor(const json& file, BpePipeline& tokenizer, const Origin& origin) {
  const json* processor = member(file, "post_processor");
  if (!processor) return;
  const auto read_step = [&](const json& step, const std::string& where) {
    const std::string type = string_member(step, "type", origin, where);
    if (type == "ByteLevel") return;
    if (type != "TemplateProcessing") {
      tokenizer.post_processor_refused = type;
      return;
    }
    const json* single = member(step, "single");
    const json* special = member(step, "special_tokens");
    if (!single || !single->is_array())
      origin.fail(where + "single", single ? value_text(*single) : "", "needs the template's list of pieces", "fix the file");
    tokenizer.single_template.clear();
    for (size_t i = 0; i < single->size(); ++i) {
      const std::string piece_where = where + "single[" + std::to_string(i) + "]";
      const json& piece = (*single)[i];
      TemplatePart part;
      if (member(piece, "Sequence")) {
        part.is_text = true;
      } else if (const json* token = member(piece, "SpecialToken")) {
        const std::string name = string_member(*token, "id", origin, piece_where + ".SpecialToken.");
        const json* entry = special ? member(*special, name.c_str()) : nullptr;
        const json* ids = entry ? member(*entry, "ids") : nullptr;
        if (!ids || !ids->is_array())
          origin.fail(where + "special_tokens", "\"" + name + "\"", "the template's special token has no ids",
                      "fix the file");
        for (size_t k = 0; k < ids->size(); ++k)
          part.ids.push_back(token_id_value((*ids)[k], origin, where + "special_tokens." + name + ".ids"));
      } else {
        origin.fail(piece_where, value_text(piece), "a template piece is {\"Sequence\": ...} or {\"SpecialToken\": ...}",
                    "fix the file");
      }
      tokenizer.single_template.push_back(std::move(part));
    }
  };
  for_each_step(*processor, "post_processor", "processors", origin,
                [&](const json& step, const std::string& where, bool) { read_step(step, where); });
}

void read_bpe_model(const json& model, BpePipeline& tokenizer, const Origin& origin) {
  const json* type = member(model, "type");
  // Files written before models had a type tag are BPE when they have merges.
  const std::string model_type = type ? string_member(model, "type", origin, "model.") : member(model, "merges") ? "BPE" : "";
  if (model_type != "BPE")
    origin.fail("model.type", type ? value_text(*type) : "",
                (model_type.empty() ? std::string("a model without a type") : "a " + model_type + " model") +
                    " is not supported: only BPE is (Unigram, WordPiece and WordLevel are not)");
  if (const json* dropout = member(model, "dropout"); dropout && !(dropout->is_number() && dropout->get<double>() == 0))
    origin.fail("model.dropout", value_text(*dropout), "dropout makes encoding random", "set \"dropout\" to null");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const json* affix = member(model, key); affix && !(affix->is_string() && affix->get<std::string>().empty()))
      origin.fail(std::string("model.") + key, value_text(*affix),
                  "subword prefixes and suffixes are not supported (byte-level and SentencePiece-style BPE have none)");
  tokenizer.fuse_unk = bool_member(model, "fuse_unk", false, origin, "model.");
  tokenizer.ignore_merges = bool_member(model, "ignore_merges", false, origin, "model.");
  tokenizer.byte_fallback = bool_member(model, "byte_fallback", false, origin, "model.");

  const json* vocab = member(model, "vocab");
  if (!vocab || !vocab->is_object())
    origin.fail("model.vocab", vocab ? value_text(*vocab) : "", "needs an object of token: id", "fix the file");
  for (const auto& [token, id] : vocab->items())
    tokenizer.vocab[token] = token_id_value(id, origin, "model.vocab[\"" + token + "\"]");

  if (const json* unk = member(model, "unk_token")) {
    if (!unk->is_string() || !tokenizer.vocab.count(unk->get<std::string>()))
      origin.fail("model.unk_token", value_text(*unk), "not a token of the vocabulary", "fix the file");
    tokenizer.unk_id = tokenizer.vocab.at(unk->get<std::string>());
  }

  const json* merges = member(model, "merges");
  if (!merges || !merges->is_array())
    origin.fail("model.merges", merges ? value_text(*merges) : "", "needs a list of merges", "fix the file");
  for (size_t rank = 0; rank < merges->size(); ++rank) {
    const json& merge = (*merges)[rank];
    const std::string where = "model.merges[" + std::to_string(rank) + "]";
    // tokenizers writes a merge as ["left", "right"] since 0.20, as "left right" before.
    std::string left, right;
    if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      left = merge[0].get<std::string>(), right = merge[1].get<std::string>();
    } else if (!merge.is_string() || !split_merge_line(merge.get<std::string>(), left, right)) {
      origin.fail(where, value_text(merge), "a merge is [\"left\", \"right\"] or \"left right\"", "fix the file");
    }
    tokenizer.add_merge(left, right, int32_t(rank), origin, where);
  }
}

void read_added_tokens(const json& file, BpePipeline& tokenizer, const Origin& origin) {
  const json* tokens = member(file, "added_tokens");
  if (!tokens) return;
  if (!tokens->is_array()) origin.fail("added_tokens", value_text(*tokens), "needs a list", "fix the file");
  for (size_t i = 0; i < tokens->size(); ++i) {
    const json& entry = (*tokens)[i];
    const std::string where = "added_tokens[" + std::to_string(i) + "].";
    const json* id = member(entry, "id");
    if (!id) origin.fail(where + "id", "", "an added token needs its id", "fix the file");
    AddedToken token;
    token.id = token_id_value(*id, origin, where + "id");
    token.content = string_member(entry, "content", origin, where);
    token.special = bool_member(entry, "special", false, origin, where);
    token.single_word = bool_member(entry, "single_word", false, origin, where);
    token.lstrip = bool_member(entry, "lstrip", false, origin, where);
    token.rstrip = bool_member(entry, "rstrip", false, origin, where);
    token.normalized = bool_member(entry, "normalized", !token.special, origin, where);
    tokenizer.add_token(std::move(token));
  }
}

void read_tokenizer_json(const std::string& path, BpePipeline& tokenizer) {
  const Origin origin{path};
  const json file = read_json(path);
  if (!file.is_object()) origin.fail("", "", "not a tokenizer.json: the file is not a JSON object");
  const json* model = member(file, "model");
  if (!model) origin.fail("model", "", "no \"model\" key: not a Hugging Face tokenizer.json");
  read_bpe_model(*model, tokenizer, origin);
  read_normalizer(file, tokenizer, origin);
  read_pre_tokenizer(file, tokenizer, origin);
  read_post_processor(file, tokenizer, origin);
  read_decoder(file, tokenizer, origin);
  read_added_tokens(file, tokenizer, origin);
}

void read_vocab_and_merges(const TokenizerFiles& files, BpePipeline& tokenizer) {
  const Origin vocab_origin{files.vocab_json};
  const json vocab = read_json(files.vocab_json);
  if (!vocab.is_object())
    vocab_origin.fail("", "", "not GPT-2's vocab.json: the file is not a JSON object of token: id");
  for (const auto& [token, id] : vocab.items())
    tokenizer.vocab[token] = token_id_value(id, vocab_origin, "\"" + token + "\"");

  const Origin merges_origin{files.merges_txt};
  std::ifstream in(files.merges_txt, std::ios::binary);
  if (!in) merges_origin.fail("", "", "cannot open the file", "check the path and its permissions");
  int32_t rank = 0;
  std::string line, left, right;
  for (int line_number = 1; std::getline(in, line); ++line_number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("#version", 0) == 0) continue;
    const std::string where = "line " + std::to_string(line_number);
    if (!split_merge_line(line, left, right))
      merges_origin.fail(where, line, "a merge line is two tokens with one space between them",
                         "use GPT-2's merges.txt as published, unmodified");
    tokenizer.add_merge(left, right, rank++, merges_origin, where);
  }
  // GPT-2's tokenizer: ByteLevel without a prefix space, the document token special.
  tokenizer.byte_level = true;
  tokenizer.byte_level_split = gpt2_split();
  tokenizer.decoders.emplace(1, DecoderStep{});  // ByteLevel
  for (const char* content : kDocumentTokens)
    if (const auto id = tokenizer.vocab.find(content); id != tokenizer.vocab.end())
      tokenizer.add_token(AddedToken{content, id->second, /*special=*/true});
}

}  // namespace

// Opaque to the header, so that PCRE2 and the tables stay out of it.
struct BpeTokenizer::Impl : BpePipeline {};

BpeTokenizer::BpeTokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

BpeTokenizer BpeTokenizer::load(const std::string& path) {
  const TokenizerFiles files = locate_files(path);
  auto impl = std::make_shared<Impl>();
  if (!files.tokenizer_json.empty()) {
    impl->name = files.tokenizer_json;
    read_tokenizer_json(files.tokenizer_json, *impl);
  } else {
    impl->name = files.vocab_json;
    read_vocab_and_merges(files, *impl);
  }
  impl->finish();
  return BpeTokenizer(std::move(impl));
}

std::vector<int32_t> BpeTokenizer::encode(const std::string& utf8_text, bool add_special_tokens) const {
  if (const auto bad = first_invalid_utf8(utf8_text))
    throw std::invalid_argument("BpeTokenizer::encode: the text is not UTF-8 at byte " + std::to_string(*bad));
  const Impl& impl = *impl_;
  std::vector<int32_t> ids;
  if (!add_special_tokens || impl.single_template.empty()) {
    if (add_special_tokens && !impl.post_processor_refused.empty())
      throw UserError(impl.name + ": post_processor.type", "\"" + impl.post_processor_refused + "\"",
                      "this post-processor's special tokens cannot be added (only TemplateProcessing's and ByteLevel's)",
                      "encode without special tokens, or give a tokenizer.json with a TemplateProcessing post-processor");
    impl.encode_text(utf8_text, ids);
    return ids;
  }
  for (const TemplatePart& part : impl.single_template)
    if (part.is_text)
      impl.encode_text(utf8_text, ids);
    else
      ids.insert(ids.end(), part.ids.begin(), part.ids.end());
  return ids;
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids) const {
  return impl_->run_decoders(impl_->tokens_of(ids));
}

std::string BpeTokenizer::decode_continuation(const std::vector<int32_t>& ids) const {
  std::vector<std::string> tokens = impl_->tokens_of(ids);
  tokens.insert(tokens.begin(), kContinuationMark);
  std::string text = impl_->run_decoders(std::move(tokens));
  const std::string_view mark(kContinuationMark);
  if (text.compare(0, mark.size(), mark) != 0)  // a decoder that rewrote the mark: as at the start
    return decode(ids);
  return text.substr(mark.size());
}

int32_t BpeTokenizer::vocab_size() const { return impl_->vocab_size; }

std::optional<int32_t> BpeTokenizer::token_id(const std::string& token) const {
  if (const auto added = impl_->added_ids.find(token); added != impl_->added_ids.end()) return added->second;
  if (const auto known = impl_->vocab.find(token); known != impl_->vocab.end()) return known->second;
  return std::nullopt;
}

std::optional<int32_t> BpeTokenizer::document_token() const {
  for (const char* token : kDocumentTokens)
    if (const auto id = token_id(token)) return id;
  return std::nullopt;
}

std::optional<int32_t> BpeTokenizer::end_of_text() const {
  for (const char* token : kEndTokens)
    if (const auto id = token_id(token)) return id;
  return std::nullopt;
}

std::string BpeTokenizer::name() const { return impl_->name; }

}  // namespace zt
