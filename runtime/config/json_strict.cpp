// Strict JSON reading: a SAX handler that builds the document and reports duplicate keys.
#include "runtime/config/json_strict.h"

#include <deque>
#include <vector>

namespace zt {
namespace {

using json = nlohmann::json;

class StrictBuilder : public nlohmann::json_sax<json> {
 public:
  StrictBuilder(json& root, Diagnostics& d, const std::string& text) : root_(root), diags_(d), text_(text) {}

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
    if (f.node->contains(k)) {
      diags_.error(path_with(k), "", "duplicate key: it appears more than once in this object (DeepSpeed's parser silently keeps the last one)",
                   "keep exactly one \"" + k + "\" in this block");
      f.duplicate = true;
    } else {
      f.duplicate = false;
    }
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
    diags_.error(file_ + ":" + line_column(text_, position == 0 ? 0 : position - 1), last_token.substr(0, 40),
                 "not valid JSON: " + msg, "fix the JSON syntax at that line and column (a missing comma, quote or brace is the usual cause)");
    return false;
  }
  std::string file_;

 private:
  struct Frame {
    json* node;
    bool is_object;
    std::string key;
    int duplicate;  // last key was a duplicate: its value is parsed but dropped
  };

  std::string path_with(const std::string& k) const {
    std::string p;
    for (size_t i = 0; i < stack_.size(); ++i) {
      const Frame& f = stack_[i];
      if (i + 1 == stack_.size()) break;
      if (f.is_object) {
        p += (p.empty() ? "" : ".") + f.key;
      } else {
        p += "[" + std::to_string(f.node->size() - 1) + "]";
      }
    }
    return p.empty() ? k : p + "." + k;
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
  std::vector<Frame> stack_;
  json* last_ = nullptr;
  std::deque<json> scratch_;  // deque: growing it keeps references valid
};

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
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

bool parse_json_strict(const std::string& text, const std::string& file, json& out, Diagnostics& diags) {
  StrictBuilder b(out, diags, text);
  b.file_ = file;
  const bool ok = json::sax_parse(text, &b, json::input_format_t::json, /*strict=*/true);
  return ok;
}

}  // namespace zt
