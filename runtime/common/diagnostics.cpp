// Diagnostics: collection and one-line formatting of user-facing problems.
#include "runtime/common/diagnostics.h"

namespace zt {

void Diagnostics::error(std::string path, std::string value, std::string message, std::string fix) {
  add({Severity::Error, std::move(path), std::move(value), std::move(message), std::move(fix)});
}

void Diagnostics::warning(std::string path, std::string value, std::string message, std::string fix) {
  add({Severity::Warning, std::move(path), std::move(value), std::move(message), std::move(fix)});
}

void Diagnostics::add(Diagnostic d) { items_.push_back(std::move(d)); }

void Diagnostics::append(const Diagnostics& other) {
  items_.insert(items_.end(), other.items_.begin(), other.items_.end());
}

size_t Diagnostics::error_count() const {
  size_t n = 0;
  for (const auto& d : items_) n += d.severity == Severity::Error;
  return n;
}

size_t Diagnostics::warning_count() const { return items_.size() - error_count(); }

bool Diagnostics::has_errors() const { return error_count() > 0; }

std::string format_diagnostic(const Diagnostic& d) {
  std::string s = d.severity == Severity::Error ? "error: " : "warning: ";
  if (!d.path.empty()) s += d.path;
  if (!d.value.empty()) s += " = " + d.value;
  if (!d.path.empty() || !d.value.empty()) s += ": ";
  s += d.message;
  if (!d.fix.empty()) s += ". Fix: " + d.fix;
  return s;
}

std::string Diagnostics::format() const {
  std::string out;
  for (const auto& d : items_) out += format_diagnostic(d) + "\n";
  return out;
}

static std::string first_message(const Diagnostics& d) {
  return d.all().empty() ? std::string("invalid input") : format_diagnostic(d.all().front());
}

UserError::UserError(Diagnostics diags) : std::runtime_error(first_message(diags)), diags_(std::move(diags)) {}

UserError::UserError(std::string path, std::string value, std::string message, std::string fix)
    : UserError([&] {
        Diagnostics d;
        d.error(std::move(path), std::move(value), std::move(message), std::move(fix));
        return d;
      }()) {}

}  // namespace zt
