// BpeTokenizer: reading tokenizer.json (or vocab.json + merges.txt) and the encoding pipeline the
// tokenizers package runs for a byte-level BPE file: added tokens split out of the text, the
// pre-tokenizer's regexes (PCRE2 with Unicode properties), GPT-2's byte alphabet, and the merges
// applied lowest rank first.
#include "runtime/data/bpe_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "runtime/common/diagnostics.h"

namespace zt {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The pre-tokenizer regex of GPT-2 (ByteLevel with use_regex true).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// The document tokens that a vocab.json + merges.txt pair gets as special tokens when its vocabulary
// has them (scripts/prepare_data.py reads the pair the same way).
constexpr std::array<const char*, 5> kDocumentTokens = {"<|endoftext|>", "<|begin_of_text|>", "<|end_of_text|>",
                                                        "<s>", "</s>"};

constexpr const char* kSupportedFix =
    "give the tokenizer.json of a byte-level BPE model (GPT-2's, Llama-3's: model.type \"BPE\", a ByteLevel "
    "pre-tokenizer and decoder), or GPT-2's vocab.json + merges.txt";

// ---- UTF-8 ----

// The length of the UTF-8 character starting at text[pos], or 0 when the bytes there are not one
// (overlong forms, surrogates and code points above U+10FFFF included, as Rust's str refuses them).
size_t utf8_char_length(std::string_view text, size_t pos) {
  const auto byte_at = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte_at(pos);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint32_t code_point = 0, smallest = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, code_point = lead & 0x1F, smallest = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, code_point = lead & 0x0F, smallest = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, code_point = lead & 0x07, smallest = 0x10000;
  } else {
    return 0;
  }
  if (pos + length > text.size()) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte_at(pos + i) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte_at(pos + i) & 0x3F);
  }
  if (code_point < smallest || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) return 0;
  return length;
}

// The offset of the first byte that does not start a valid UTF-8 character; nullopt when all do.
std::optional<size_t> first_invalid_utf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = utf8_char_length(text, pos);
    if (length == 0) return pos;
    pos += length;
  }
  return std::nullopt;
}

// Where the character that ends at `end` starts (text is valid UTF-8, end > 0).
size_t previous_char_start(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  return start;
}

void append_utf8(std::string& out, uint32_t code_point) {
  if (code_point < 0x80) {
    out += char(code_point);
  } else if (code_point < 0x800) {
    out += char(0xC0 | (code_point >> 6));
    out += char(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += char(0xE0 | (code_point >> 12));
    out += char(0x80 | ((code_point >> 6) & 0x3F));
    out += char(0x80 | (code_point & 0x3F));
  } else {
    out += char(0xF0 | (code_point >> 18));
    out += char(0x80 | ((code_point >> 12) & 0x3F));
    out += char(0x80 | ((code_point >> 6) & 0x3F));
    out += char(0x80 | (code_point & 0x3F));
  }
}

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

// ---- Regexes ----

// PCRE2's \s still matches U+180E (MONGOLIAN VOWEL SEPARATOR), which left Unicode's White_Space in
// 6.3 and which Oniguruma's \s does not match: \s and \S become the property itself, which works
// inside character classes as well. \Q...\E quotes stay as they are.
std::string with_unicode_whitespace(const std::string& pattern) {
  std::string rewritten;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '\\' || i + 1 == pattern.size()) {
      rewritten += pattern[i];
      continue;
    }
    const char escaped = pattern[++i];
    if (escaped == 's') {
      rewritten += "\\p{White_Space}";
    } else if (escaped == 'S') {
      rewritten += "\\P{White_Space}";
    } else if (escaped == 'Q') {
      const size_t quote_end = pattern.find("\\E", i + 1);
      const size_t copy_end = quote_end == std::string::npos ? pattern.size() : quote_end + 2;
      rewritten += pattern.substr(i - 1, copy_end - (i - 1));
      i = copy_end - 1;
    } else {
      rewritten += '\\';
      rewritten += escaped;
    }
  }
  return rewritten;
}

// A pre-tokenizer pattern (written for tokenizers' Oniguruma) compiled by PCRE2 for UTF-8 with
// Unicode properties: \p{L}, \d and \w mean the Unicode classes, (?i) folds Unicode case.
class Regex {
 public:
  // Throws std::invalid_argument with PCRE2's message and where in the pattern it stopped.
  explicit Regex(const std::string& oniguruma_pattern) {
    const std::string pattern = with_unicode_whitespace(oniguruma_pattern);
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
    if (!code) throw std::invalid_argument(error_text(error_code) + " at offset " + std::to_string(error_offset));
    code_.reset(code);
  }

  // The matches in text (valid UTF-8), left to right, as Oniguruma's find_iter gives them: after an
  // empty match the search goes on one character further, so an empty match right where the
  // previous one ended is not reported again.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const {
    std::vector<std::pair<size_t, size_t>> found;
    MatchData data(pcre2_match_data_create_from_pattern(code_.get(), nullptr));
    std::optional<size_t> previous_end;
    for (size_t search_from = 0; search_from <= text.size();) {
      const auto [begin, end] = match_at(text, search_from, 0, data.get());
      if (begin == kNoMatch) break;
      if (begin == end && previous_end == end) {
        search_from += search_from < text.size() ? utf8_char_length(text, search_from) : 1;
        continue;
      }
      found.emplace_back(begin, end);
      search_from = previous_end.emplace(end);
    }
    return found;
  }

  // Whether the pattern matches all of text (a character class tested on one character).
  bool matches_all(std::string_view text) const {
    MatchData data(pcre2_match_data_create_from_pattern(code_.get(), nullptr));
    return match_at(text, 0, PCRE2_ANCHORED | PCRE2_ENDANCHORED, data.get()).first != kNoMatch;
  }

 private:
  struct CodeFree {
    void operator()(pcre2_code* code) const { pcre2_code_free(code); }
  };
  struct MatchDataFree {
    void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
  };
  using MatchData = std::unique_ptr<pcre2_match_data, MatchDataFree>;
  static constexpr size_t kNoMatch = std::numeric_limits<size_t>::max();

  static std::string error_text(int error_code) {
    std::array<PCRE2_UCHAR, 256> buffer{};
    pcre2_get_error_message(error_code, buffer.data(), buffer.size());
    return reinterpret_cast<const char*>(buffer.data());
  }

  // The first match at or after search_from, {kNoMatch, kNoMatch} when none. The text was checked
  // to be UTF-8 once (checking it at every call would make the search quadratic).
  std::pair<size_t, size_t> match_at(std::string_view text, size_t search_from, uint32_t options,
                                     pcre2_match_data* data) const {
    static constexpr char kEmpty[] = "";
    const char* subject = text.empty() ? kEmpty : text.data();
    const int rc = pcre2_match(code_.get(), reinterpret_cast<PCRE2_SPTR>(subject), text.size(), search_from,
                               options | PCRE2_NO_UTF_CHECK, data, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) return {kNoMatch, kNoMatch};
    if (rc < 0) throw std::runtime_error("BpeTokenizer: the pre-tokenizer regex failed: " + error_text(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    return {ovector[0], ovector[1]};
  }

  std::unique_ptr<pcre2_code, CodeFree> code_;
};

// ---- The parts of a tokenizer ----

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool single_word = false;  // only where no word character (\w) touches it on either side
  bool lstrip = false;       // takes the whitespace before it
  bool rstrip = false;       // takes the whitespace after it
  bool normalized = false;   // matched in the normalized text (a second pass; there is no normalizer)
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

  // {where it starts, the token's index} of the first token found at or after `from`.
  std::optional<std::pair<size_t, size_t>> find(std::string_view text, size_t from) const {
    for (size_t pos = from; pos < text.size(); ++pos)
      for (const Entry& entry : by_first_byte_[static_cast<unsigned char>(text[pos])])  // longest first
        if (text.compare(pos, entry.content.size(), entry.content) == 0) return std::pair{pos, entry.token_index};
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

// A Split pre-tokenizer step: a regex or a literal string, and what becomes of the matches.
struct SplitStep {
  std::optional<Regex> regex;
  std::string literal;  // when regex is empty
  SplitBehavior behavior = SplitBehavior::Isolated;
  bool invert = false;  // the parts between matches are the matches
};

struct Merge {
  int32_t rank;
  int32_t merged_id;
};

uint64_t pair_key(int32_t left, int32_t right) { return (uint64_t(uint32_t(left)) << 32) | uint32_t(right); }

// A stretch of the text: an added token's (token_id set) or text still to tokenize.
struct Segment {
  std::string_view text;
  std::optional<int32_t> token_id;
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
    throw UserError(path, "", "the folder holds neither tokenizer.json nor vocab.json + merges.txt", kWhereFix);
  }
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
  split.regex.emplace(kGpt2Pattern);
  split.behavior = SplitBehavior::Isolated;
  return split;
}

// ---- The tokenizer ----

struct Span {
  size_t begin, end;
  bool is_match;
};

// The pieces of text around a Split step's matches, as tokenizers' NormalizedString::split makes them.
std::vector<std::string> split_piece(const std::string& text, const SplitStep& step) {
  std::vector<std::pair<size_t, size_t>> matches;
  if (step.regex) {
    matches = step.regex->find_all(text);
  } else if (!step.literal.empty()) {
    for (size_t at = text.find(step.literal); at != std::string::npos;
         at = text.find(step.literal, at + step.literal.size()))
      matches.emplace_back(at, at + step.literal.size());
  }
  std::vector<Span> spans;  // the whole text, in order
  size_t previous_end = 0;
  for (const auto& [begin, end] : matches) {
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
  std::vector<std::string> pieces;
  for (const Span& span : kept)
    if (!span.is_match && span.end > span.begin) pieces.push_back(text.substr(span.begin, span.end - span.begin));
  return pieces;
}

// Everything a loaded tokenizer holds, and the encoding steps.
struct ByteLevelBpe {
  std::string name;
  ByteAlphabet alphabet = make_byte_alphabet();

  // The BPE model.
  std::unordered_map<std::string, int32_t> vocab;
  std::unordered_map<uint64_t, Merge> merges;  // (left id, right id) -> rank and the merged token
  std::optional<int32_t> unk_id;
  bool fuse_unk = false;
  bool ignore_merges = false;  // a word that is in the vocabulary is its own token, unmerged

  // Added tokens; the first pass splits out those matched in the raw text (normalized false: the
  // special tokens as a rule), the second those matched in the normalized text.
  std::vector<AddedToken> added;
  std::unordered_map<std::string, int32_t> added_ids;
  AddedTokenMatcher raw_text_tokens, normalized_text_tokens;

  // The pre-tokenizer: Split steps, then ByteLevel.
  std::vector<SplitStep> splits;
  bool add_prefix_space = false;
  std::optional<SplitStep> byte_level_split;  // GPT-2's regex, Isolated, when ByteLevel's use_regex is true

  // What each id decodes to (a map: nothing says a file's ids leave no gaps), and the largest id + 1.
  std::unordered_map<int32_t, std::string> bytes_of_id;
  int32_t vocab_size = 0;
  // single_word, lstrip and rstrip look at the characters around a token as tokenizers does, with
  // the Rust regex crate's Unicode \w and \s.
  Regex word_char{R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}])"};
  Regex whitespace_char{R"(\p{White_Space})"};

  void add_merge(const std::string& left, const std::string& right, int32_t rank, const Origin& origin,
                 const std::string& where);
  void add_token(AddedToken token);
  void finish();  // once the vocabulary and the added tokens are in: the decode table

  void split_at_added_tokens(std::string_view text, const AddedTokenMatcher& matcher, std::vector<Segment>& out) const;
  std::vector<std::string> pre_tokenize(std::string_view text) const;
  void merge_word(const std::string& word, std::vector<int32_t>& ids) const;

  bool is_word_char_at(std::string_view text, size_t pos) const {
    return word_char.matches_all(text.substr(pos, utf8_char_length(text, pos)));
  }
  bool is_whitespace_at(std::string_view text, size_t pos) const {
    return whitespace_char.matches_all(text.substr(pos, utf8_char_length(text, pos)));
  }
};

void ByteLevelBpe::add_merge(const std::string& left, const std::string& right, int32_t rank, const Origin& origin,
                             const std::string& where) {
  const auto left_id = vocab.find(left), right_id = vocab.find(right), merged_id = vocab.find(left + right);
  if (left_id == vocab.end() || right_id == vocab.end() || merged_id == vocab.end())
    origin.fail(where, left + " " + right,
                "the merge's tokens, or the token \"" + left + right + "\" it makes, are not in the vocabulary",
                "use the vocabulary and the merges of one tokenizer, unmodified");
  // A pair listed twice keeps its later rank, as tokenizers' map of merges does.
  merges[pair_key(left_id->second, right_id->second)] = Merge{rank, merged_id->second};
}

void ByteLevelBpe::add_token(AddedToken token) {
  added_ids[token.content] = token.id;
  (token.normalized ? normalized_text_tokens : raw_text_tokens).add(token.content, added.size());
  added.push_back(std::move(token));
}

void ByteLevelBpe::finish() {
  for (const auto& [token, id] : vocab) {
    // A token with a character outside the alphabet decodes to its own UTF-8, as in tokenizers'
    // ByteLevel decoder.
    std::string bytes;
    for (size_t pos = 0; pos < token.size();) {
      const size_t length = std::max<size_t>(1, utf8_char_length(token, pos));
      const auto byte = alphabet.byte_of_char.find(token.substr(pos, length));
      if (byte == alphabet.byte_of_char.end()) {
        bytes = token;
        break;
      }
      bytes += char(byte->second);
      pos += length;
    }
    bytes_of_id[id] = std::move(bytes);
  }
  for (const AddedToken& token : added) bytes_of_id[token.id] = token.content;
  for (const auto& [id, bytes] : bytes_of_id) vocab_size = std::max(vocab_size, id + 1);
}

// tokenizers' AddedVocabulary::find_matches: the tokens found, and the text between them.
void ByteLevelBpe::split_at_added_tokens(std::string_view text, const AddedTokenMatcher& matcher,
                                         std::vector<Segment>& out) const {
  size_t emitted_until = 0;  // text before here is in `out`
  for (size_t search_from = 0; auto found = matcher.find(text, search_from);) {
    const AddedToken& token = added[found->second];
    size_t begin = found->first, end = begin + token.content.size();
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
    if (emitted_until < begin) out.push_back({text.substr(emitted_until, begin - emitted_until), std::nullopt});
    out.push_back({text.substr(begin, end - begin), token.id});
    emitted_until = end;
  }
  if (emitted_until < text.size()) out.push_back({text.substr(emitted_until), std::nullopt});
}

std::vector<std::string> ByteLevelBpe::pre_tokenize(std::string_view text) const {
  std::vector<std::string> pieces{std::string(text)};
  for (const SplitStep& step : splits) {
    std::vector<std::string> next;
    for (const std::string& piece : pieces)
      for (std::string& part : split_piece(piece, step)) next.push_back(std::move(part));
    pieces = std::move(next);
  }
  // ByteLevel: the prefix space goes on every piece that has none, before its regex splits it.
  std::vector<std::string> words;
  for (std::string& piece : pieces) {
    if (add_prefix_space && piece.front() != ' ') piece.insert(piece.begin(), ' ');
    if (!byte_level_split) {
      words.push_back(std::move(piece));
      continue;
    }
    for (std::string& word : split_piece(piece, *byte_level_split)) words.push_back(std::move(word));
  }
  return words;
}

// One word (already in the byte alphabet) to ids: its characters, then the merges by rank.
void ByteLevelBpe::merge_word(const std::string& word, std::vector<int32_t>& ids) const {
  if (ignore_merges)
    if (const auto whole = vocab.find(word); whole != vocab.end()) {
      ids.push_back(whole->second);
      return;
    }
  std::vector<int32_t> symbols;
  bool last_is_unknown = false;  // with fuse_unk, a run of unknown characters is one unk_token
  for (size_t pos = 0; pos < word.size();) {
    const size_t length = std::max<size_t>(1, utf8_char_length(word, pos));
    const auto known = vocab.find(word.substr(pos, length));
    pos += length;
    if (known != vocab.end()) {
      symbols.push_back(known->second);
      last_is_unknown = false;
    } else if (unk_id) {  // without an unk_token tokenizers drops the character
      if (!(last_is_unknown && fuse_unk)) symbols.push_back(*unk_id);
      last_is_unknown = true;
    }
  }
  // The lowest-ranked pair first, the leftmost of equal ones: the order of tokenizers' merge queue.
  while (symbols.size() > 1) {
    size_t best = symbols.size();
    Merge best_merge{std::numeric_limits<int32_t>::max(), 0};
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto merge = merges.find(pair_key(symbols[i], symbols[i + 1]));
      if (merge != merges.end() && merge->second.rank < best_merge.rank) best = i, best_merge = merge->second;
    }
    if (best == symbols.size()) break;
    symbols[best] = best_merge.merged_id;
    symbols.erase(symbols.begin() + std::ptrdiff_t(best + 1));
  }
  ids.insert(ids.end(), symbols.begin(), symbols.end());
}

// ---- Reading the files ----

void read_byte_level(const json& step, ByteLevelBpe& tokenizer, const Origin& origin, const std::string& where) {
  tokenizer.add_prefix_space = bool_member(step, "add_prefix_space", true, origin, where);
  if (bool_member(step, "use_regex", true, origin, where)) tokenizer.byte_level_split = gpt2_split();
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
  const json* pattern = member(step, "pattern");
  const json* regex = pattern ? member(*pattern, "Regex") : nullptr;
  const json* literal = pattern ? member(*pattern, "String") : nullptr;
  if (regex && regex->is_string()) {
    try {
      split.regex.emplace(regex->get<std::string>());
    } catch (const std::invalid_argument& e) {
      origin.fail(where + "pattern.Regex", value_text(*regex), std::string("PCRE2 cannot compile the regex: ") + e.what(),
                  "write the pattern in a syntax both Oniguruma and PCRE2 read");
    }
  } else if (literal && literal->is_string()) {
    split.literal = literal->get<std::string>();
  } else {
    origin.fail(where + "pattern", pattern ? value_text(*pattern) : "", "needs {\"Regex\": ...} or {\"String\": ...}",
                "fix the file");
  }
  split.behavior = split_behavior(step, origin, where);
  split.invert = bool_member(step, "invert", false, origin, where);
  return split;
}

// tokenizers' Digits step: every numeric character (Unicode N, as Rust's char::is_numeric) its own
// piece with individual_digits, else each run of them one piece.
SplitStep read_digits(const json& step, const Origin& origin, const std::string& where) {
  SplitStep split;
  split.regex.emplace("\\p{N}");
  split.behavior = bool_member(step, "individual_digits", false, origin, where) ? SplitBehavior::Isolated
                                                                               : SplitBehavior::Contiguous;
  return split;
}

// ByteLevel, or a Sequence of Split (or Digits) steps ending in one ByteLevel.
void read_pre_tokenizer(const json& file, ByteLevelBpe& tokenizer, const Origin& origin) {
  const std::string supported =
      "byte-level BPE needs a ByteLevel pre-tokenizer, or a Sequence of Split or Digits steps ending in ByteLevel";
  const json* pre_tokenizer = member(file, "pre_tokenizer");
  if (!pre_tokenizer) origin.fail("pre_tokenizer", "null", "no pre-tokenizer: " + supported);
  const std::string type = string_member(*pre_tokenizer, "type", origin, "pre_tokenizer.");
  if (type == "ByteLevel") return read_byte_level(*pre_tokenizer, tokenizer, origin, "pre_tokenizer.");
  if (type == "Metaspace")
    origin.fail("pre_tokenizer.type", "\"Metaspace\"",
                "SentencePiece-style tokenizers (Metaspace: Llama-2, Mistral, T5) are not supported; " + supported);
  if (type != "Sequence") origin.fail("pre_tokenizer.type", "\"" + type + "\"", "not supported: " + supported);
  const json* steps = member(*pre_tokenizer, "pretokenizers");
  if (!steps || !steps->is_array() || steps->empty())
    origin.fail("pre_tokenizer.pretokenizers", steps ? value_text(*steps) : "", "needs a list of steps: " + supported);
  for (size_t i = 0; i < steps->size(); ++i) {
    const std::string where = "pre_tokenizer.pretokenizers[" + std::to_string(i) + "].";
    const std::string step_type = string_member((*steps)[i], "type", origin, where);
    const bool last = i + 1 == steps->size();
    if (step_type == "Split" && !last) {
      tokenizer.splits.push_back(read_split((*steps)[i], origin, where));
    } else if (step_type == "Digits" && !last) {
      tokenizer.splits.push_back(read_digits((*steps)[i], origin, where));
    } else if (step_type == "ByteLevel" && last) {
      read_byte_level((*steps)[i], tokenizer, origin, where);
    } else {
      origin.fail(where + "type", "\"" + step_type + "\"",
                  (last ? "the last step is not ByteLevel: " : "a step other than Split or Digits before ByteLevel: ") +
                      supported);
    }
  }
}

void read_bpe_model(const json& model, ByteLevelBpe& tokenizer, const Origin& origin) {
  const json* type = member(model, "type");
  // Files written before models had a type tag are BPE when they have merges.
  const std::string model_type = type ? string_member(model, "type", origin, "model.") : member(model, "merges") ? "BPE" : "";
  if (model_type != "BPE")
    origin.fail("model.type", type ? value_text(*type) : "",
                (model_type.empty() ? std::string("a model without a type") : "a " + model_type + " model") +
                    " is not supported: only byte-level BPE is (GPT-2's, Llama-3's)");
  if (bool_member(model, "byte_fallback", false, origin, "model."))
    origin.fail("model.byte_fallback", "true",
                "byte_fallback BPE (SentencePiece-style: Llama-2, Mistral) is not supported; only byte-level BPE is");
  if (const json* dropout = member(model, "dropout"); dropout && !(dropout->is_number() && dropout->get<double>() == 0))
    origin.fail("model.dropout", value_text(*dropout), "dropout makes encoding random", "set \"dropout\" to null");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const json* affix = member(model, key); affix && !(affix->is_string() && affix->get<std::string>().empty()))
      origin.fail(std::string("model.") + key, value_text(*affix),
                  "subword prefixes and suffixes are not supported (byte-level BPE has none)");
  tokenizer.fuse_unk = bool_member(model, "fuse_unk", false, origin, "model.");
  tokenizer.ignore_merges = bool_member(model, "ignore_merges", false, origin, "model.");

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

void read_added_tokens(const json& file, ByteLevelBpe& tokenizer, const Origin& origin) {
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

void read_tokenizer_json(const std::string& path, ByteLevelBpe& tokenizer) {
  const Origin origin{path};
  const json file = read_json(path);
  if (!file.is_object()) origin.fail("", "", "not a tokenizer.json: the file is not a JSON object");
  const json* model = member(file, "model");
  if (!model) origin.fail("model", "", "no \"model\" key: not a Hugging Face tokenizer.json");
  read_bpe_model(*model, tokenizer, origin);
  // An empty Sequence of normalizers changes nothing; any other normalizer is not implemented here.
  if (const json* normalizer = member(file, "normalizer")) {
    const json* parts = member(*normalizer, "normalizers");
    const bool empty_sequence = string_member(*normalizer, "type", origin, "normalizer.") == "Sequence" && parts &&
                                parts->is_array() && parts->empty();
    if (!empty_sequence)
      origin.fail("normalizer.type", value_text(normalizer->at("type")),
                  "normalizers are not supported: byte-level BPE needs \"normalizer\": null");
  }
  read_pre_tokenizer(file, tokenizer, origin);
  const json* decoder = member(file, "decoder");
  if (!decoder || string_member(*decoder, "type", origin, "decoder.") != "ByteLevel")
    origin.fail(decoder ? "decoder.type" : "decoder", decoder ? value_text(decoder->at("type")) : "null",
                "not supported: byte-level BPE decodes with a ByteLevel decoder");
  read_added_tokens(file, tokenizer, origin);
}

void read_vocab_and_merges(const TokenizerFiles& files, ByteLevelBpe& tokenizer) {
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
  tokenizer.byte_level_split = gpt2_split();
  for (const char* content : kDocumentTokens)
    if (const auto id = tokenizer.vocab.find(content); id != tokenizer.vocab.end())
      tokenizer.add_token(AddedToken{content, id->second, /*special=*/true});
}

}  // namespace

// Opaque to the header, so that PCRE2 and the tables stay out of it.
struct BpeTokenizer::Impl : ByteLevelBpe {};

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

std::vector<int32_t> BpeTokenizer::encode(const std::string& utf8_text) const {
  if (const auto bad = first_invalid_utf8(utf8_text))
    throw std::invalid_argument("BpeTokenizer::encode: the text is not UTF-8 at byte " + std::to_string(*bad));
  const Impl& impl = *impl_;
  std::vector<Segment> raw_split, segments;
  impl.split_at_added_tokens(utf8_text, impl.raw_text_tokens, raw_split);
  for (const Segment& segment : raw_split) {
    if (segment.token_id)
      segments.push_back(segment);
    else
      impl.split_at_added_tokens(segment.text, impl.normalized_text_tokens, segments);
  }
  std::vector<int32_t> ids;
  for (const Segment& segment : segments) {
    if (segment.token_id) {
      ids.push_back(*segment.token_id);
      continue;
    }
    for (const std::string& word : impl.pre_tokenize(segment.text)) {
      std::string spelled;  // the word in the byte alphabet
      for (unsigned char byte : word) spelled += impl.alphabet.char_of_byte[byte];
      impl.merge_word(spelled, ids);
    }
  }
  return ids;
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  for (int32_t id : ids) {
    const auto bytes = impl_->bytes_of_id.find(id);
    if (bytes == impl_->bytes_of_id.end())
      throw std::out_of_range("BpeTokenizer::decode: id " + std::to_string(id) + " is not in the vocabulary of " +
                              impl_->name + " (ids 0 to " + std::to_string(impl_->vocab_size - 1) + ")");
    text += bytes->second;
  }
  return text;
}

int32_t BpeTokenizer::vocab_size() const { return impl_->vocab_size; }

std::optional<int32_t> BpeTokenizer::token_id(const std::string& token) const {
  if (const auto added = impl_->added_ids.find(token); added != impl_->added_ids.end()) return added->second;
  if (const auto known = impl_->vocab.find(token); known != impl_->vocab.end()) return known->second;
  return std::nullopt;
}

std::string BpeTokenizer::name() const { return impl_->name; }

}  // namespace zt
