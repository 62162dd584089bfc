// The capped, escaped report of a Diagnostics set, as text lines and as JSON.
#include "runtime/config/report.h"

namespace zt {

std::string escape_controls(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
    } else {
      out += ch;
    }
  }
  return out;
}

std::string format_report(const Diagnostics& d, const std::string& prefix, size_t max) {
  std::string out;
  size_t shown = 0, hidden_errors = 0, hidden_warnings = 0;
  for (const auto& x : d.all()) {
    if (shown < max) {
      out += prefix + escape_controls(format_diagnostic(x)) + "\n";
      ++shown;
    } else if (x.severity == Severity::Error) {
      ++hidden_errors;
    } else {
      ++hidden_warnings;
    }
  }
  if (hidden_errors + hidden_warnings > 0)
    out += prefix + "... and " + std::to_string(hidden_errors) + " more error(s) and " + std::to_string(hidden_warnings) +
           " more warning(s) not shown (the first " + std::to_string(max) + " are above)\n";
  return out;
}

void write_all(std::FILE* to, const std::string& text) {
  if (!text.empty()) std::fwrite(text.data(), 1, text.size(), to);
}

nlohmann::json diagnostics_json(const Diagnostics& d, Severity sev, size_t max) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& x : d.all()) {
    if (x.severity != sev || a.size() >= max) continue;
    std::string msg = x.message;
    if (!x.value.empty()) msg = "value " + x.value + ": " + msg;
    if (!x.fix.empty()) msg += ". Fix: " + x.fix;
    a.push_back({{"path", escape_controls(x.path)},
                 {"message", escape_controls(msg)},
                 {"value", escape_controls(x.value)},
                 {"problem", escape_controls(x.message)},
                 {"fix", escape_controls(x.fix)}});
  }
  return a;
}

}  // namespace zt
