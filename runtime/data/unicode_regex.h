// UTF-8 helpers and Regex, the pattern matcher of the tokenizer's pre-tokenizers and normalizers:
// patterns written for the tokenizers package's Oniguruma, compiled by PCRE2 for UTF-8 with
// Unicode properties, and matched with Oniguruma's find_iter semantics.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zt {

// The length of the UTF-8 character starting at text[pos], or 0 when the bytes there are not one
// (overlong forms, surrogates and code points above U+10FFFF included, as Rust's str refuses them).
size_t utf8_char_length(std::string_view text, size_t pos);

// The offset of the first byte that does not start a valid UTF-8 character; nullopt when all do.
std::optional<size_t> first_invalid_utf8(std::string_view text);

// Where the character that ends at `end` starts (text is valid UTF-8, end > 0).
size_t previous_char_start(std::string_view text, size_t end);

void append_utf8(std::string& out, uint32_t code_point);

class Regex {
 public:
  // Throws std::invalid_argument with PCRE2's message and where in the pattern it stopped.
  explicit Regex(const std::string& oniguruma_pattern);

  // The matches in text (valid UTF-8), left to right, as Oniguruma's find_iter gives them: after an
  // empty match the search goes on one character further, so an empty match right where the
  // previous one ended is not reported again.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

  // Whether the pattern matches all of text (a character class tested on one character).
  bool matches_all(std::string_view text) const;

 private:
  struct Compiled;
  std::shared_ptr<const Compiled> compiled_;  // immutable: copies share it
};

}  // namespace zt
