// Strict JSON reading: a depth pre-scan, then a SAX handler that builds the document and reports
// duplicate keys; bounded printing of values and keys for messages.
#include "runtime/config/json_strict.h"

#include <cstdint>
#include <cstdio>
#include <deque>
#include <vector>

namespace zt {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxDuplicatesListed = 100;

// Byte offset of the first '{' or '[' that opens level kMaxConfigDepth + 1, or npos. Linear, no
// recursion; brackets inside strings do not count.
size_t too_deep_at(const std::string& text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxConfigDepth) return i;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return std::string::npos;
}

class StrictBuilder : public nlohmann::json_sax<json> {
 public:
  StrictBuilder(json& root, Diagnostics& d, const std::string& text, const std::string& file)
      : root_(root), diags_(d), text_(text), file_(file) {}

  bool null() override { return put(json(nullptr)); }
  bool boolean(bool v) override { return put(json(v)); }
  bool number_integer(number_integer_t v) override { return put(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return put(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return put(json(v)); }
  bool string(string_t& v) override { return put(json(v)); }
  bool binary(binary_t&) override { return put(json(nullptr)); }

  bool start_object(std::size_t) override {
    if (!put(json::object())) return false;
    stack_.push_back(Frame{last_, true, {}, 0});
    return true;
  }
  bool key(string_t& k) override {
    Frame& f = stack_.back();
    f.key = k;
    f.duplicate = f.node->contains(k);
    if (f.duplicate && ++duplicates_ <= kMaxDuplicatesListed)
      diags_.error(path_with(k), "", "duplicate key: it appears more than once in this object (DeepSpeed's own "
                                     "reader refuses it; through the HF Trainer the last one silently wins)",
                   "keep exactly one \"" + printable_key(k) + "\" in this block");
    return true;
  }
  bool end_object() override {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    if (!put(json::array())) return false;
    stack_.push_back(Frame{last_, false, {}, 0});
    return true;
  }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception& ex) override {
    std::string msg = ex.what();
    // nlohmann's message starts with "[json.exception.parse_error.101] parse error at line 3, column 5: ".
    const auto colon = msg.find(": ", msg.find("parse error"));
    if (colon != std::string::npos) msg = msg.substr(colon + 2);
    diags_.error(file_ + ":" + line_column(text_, position == 0 ? 0 : position - 1),
                 show_value(json(last_token.substr(0, 40))), "not valid JSON: " + msg,
                 "fix the JSON syntax at that line and column (a missing comma, quote or brace is the usual cause)");
    return false;
  }

  // After the parse: the duplicates that were counted but not listed.
  void finish() {
    if (duplicates_ > kMaxDuplicatesListed)
      diags_.error(file_, "", "and " + std::to_string(duplicates_ - kMaxDuplicatesListed) +
                                  " more duplicate keys (the first " + std::to_string(kMaxDuplicatesListed) +
                                  " are listed above)",
                   "keep each key once per block");
  }

 private:
  struct Frame {
    json* node;
    bool is_object;
    std::string key;
    bool duplicate;  // last key was a duplicate: its value is parsed but dropped
  };

  std::string path_with(const std::string& k) const {
    std::string p;
    for (size_t i = 0; i + 1 < stack_.size(); ++i) {
      const Frame& f = stack_[i];
      if (f.is_object) {
        p += (p.empty() ? "" : ".") + printable_key(f.key);
      } else {
        p += "[" + std::to_string(f.node->size() - 1) + "]";
      }
    }
    return p.empty() ? printable_key(k) : p + "." + printable_key(k);
  }

  bool put(json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      last_ = &root_;
      return true;
    }
    Frame& f = stack_.back();
    if (f.is_object) {
      if (f.duplicate) {
        scratch_.push_back(std::move(v));  // keep the first value; parse the duplicate's into scratch
        last_ = &scratch_.back();
        return true;
      }
      last_ = &((*f.node)[f.key] = std::move(v));
    } else {
      f.node->push_back(std::move(v));
      last_ = &f.node->back();
    }
    return true;
  }

  json& root_;
  Diagnostics& diags_;
  const std::string& text_;
  const std::string& file_;
  std::vector<Frame> stack_;
  json* last_ = nullptr;
  std::deque<json> scratch_;  // deque: growing it keeps references valid
  size_t duplicates_ = 0;
};

void escape_into(const std::string& s, size_t limit, std::string& out) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (out.size() >= limit) return;
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
    } else {
      out += char(c);
    }
  }
}

// Writes v into out until out holds `limit` characters; containers deeper than 4 levels print as
// {...} / [...]. Returns false once the limit is reached.
bool show_into(const json& v, size_t limit, int depth, std::string& out) {
  if (out.size() >= limit) return false;
  if (v.is_string()) {
    out += '"';
    escape_into(v.get_ref<const std::string&>(), limit, out);
    if (out.size() >= limit) return false;
    out += '"';
    return true;
  }
  if (v.is_object() || v.is_array()) {
    const bool obj = v.is_object();
    if (v.empty()) {
      out += obj ? "{}" : "[]";
      return true;
    }
    if (depth >= 4) {
      out += obj ? "{...}" : "[...]";
      return true;
    }
    out += obj ? '{' : '[';
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      if (obj) {
        out += '"';
        escape_into(it.key(), limit, out);
        out += "\": ";
      }
      if (!show_into(it.value(), limit, depth + 1, out)) return false;
      if (out.size() >= limit) return false;
    }
    out += obj ? '}' : ']';
    return true;
  }
  out += v.dump();  // a scalar: short
  return true;
}

}  // namespace

std::string line_column(const std::string& text, size_t offset) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

std::string show_value(const json& v) {
  constexpr size_t kShown = 60;
  std::string s;
  if (!show_into(v, kShown + 1, 0, s) || s.size() > kShown) {
    s.resize(std::min(s.size(), kShown - 3));
    s += "...";
  }
  return s;
}

std::string printable_key(const std::string& key) {
  std::string out;
  if (key.size() <= 64) {
    escape_into(key, SIZE_MAX, out);
    return out;
  }
  escape_into(key.substr(0, 48), SIZE_MAX, out);
  return out + "...(" + std::to_string(key.size()) + " bytes)";
}

bool parse_json_strict(const std::string& text, const std::string& file, json& out, Diagnostics& diags) {
  const size_t deep = too_deep_at(text);
  if (deep != std::string::npos) {
    diags.error(file + ":" + line_column(text, deep), "",
                "nested more than " + std::to_string(kMaxConfigDepth) +
                    " levels deep (objects and arrays inside each other); a ds_config nests a few levels",
                "this is not a ds_config: check that --config names the right file");
    return false;
  }
  StrictBuilder b(out, diags, text, file);
  const bool ok = json::sax_parse(text, &b, json::input_format_t::json, /*strict=*/true);
  b.finish();
  return ok;
}

}  // namespace zt
