// UTF-8 helpers and Regex: PCRE2 compiled for UTF-8 with Unicode properties, matched as Oniguruma
// (the tokenizers package's regex engine) matches.
#include "runtime/data/unicode_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <limits>
#include <stdexcept>

namespace zt {

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

namespace {

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

struct CodeFree {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
struct MatchDataFree {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};
using MatchData = std::unique_ptr<pcre2_match_data, MatchDataFree>;
constexpr size_t kNoMatch = std::numeric_limits<size_t>::max();

std::string error_text(int error_code) {
  std::array<PCRE2_UCHAR, 256> buffer{};
  pcre2_get_error_message(error_code, buffer.data(), buffer.size());
  return reinterpret_cast<const char*>(buffer.data());
}

}  // namespace

struct Regex::Compiled {
  std::unique_ptr<pcre2_code, CodeFree> code;

  // The first match at or after search_from, {kNoMatch, kNoMatch} when none. The text was checked
  // to be UTF-8 once (checking it at every call would make the search quadratic).
  std::pair<size_t, size_t> match_at(std::string_view text, size_t search_from, uint32_t options,
                                     pcre2_match_data* data) const {
    static constexpr char kEmpty[] = "";
    const char* subject = text.empty() ? kEmpty : text.data();
    const int rc = pcre2_match(code.get(), reinterpret_cast<PCRE2_SPTR>(subject), text.size(), search_from,
                               options | PCRE2_NO_UTF_CHECK, data, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) return {kNoMatch, kNoMatch};
    if (rc < 0) throw std::runtime_error("BpeTokenizer: a tokenizer regex failed: " + error_text(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    return {ovector[0], ovector[1]};
  }
};

Regex::Regex(const std::string& oniguruma_pattern) {
  const std::string pattern = with_unicode_whitespace(oniguruma_pattern);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  if (!code) throw std::invalid_argument(error_text(error_code) + " at offset " + std::to_string(error_offset));
  auto compiled = std::make_shared<Compiled>();
  compiled->code.reset(code);
  compiled_ = std::move(compiled);
}

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> found;
  MatchData data(pcre2_match_data_create_from_pattern(compiled_->code.get(), nullptr));
  std::optional<size_t> previous_end;
  for (size_t search_from = 0; search_from <= text.size();) {
    const auto [begin, end] = compiled_->match_at(text, search_from, 0, data.get());
    if (begin == kNoMatch) break;
    if (begin == end && previous_end == end) {
      search_from += search_from < text.size() ? std::max<size_t>(1, utf8_char_length(text, search_from)) : 1;
      continue;
    }
    found.emplace_back(begin, end);
    search_from = previous_end.emplace(end);
  }
  return found;
}

bool Regex::matches_all(std::string_view text) const {
  MatchData data(pcre2_match_data_create_from_pattern(compiled_->code.get(), nullptr));
  return compiled_->match_at(text, 0, PCRE2_ANCHORED | PCRE2_ENDANCHORED, data.get()).first != kNoMatch;
}

}  // namespace zt
