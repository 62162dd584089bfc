// Diagnostics: the user-facing problems (config, data, checkpoint, command line, resources)
// collected during start-up and reported all at once, each with its path, value, problem and fix.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace zt {

enum class Severity { Error, Warning };

struct Diagnostic {
  Severity severity = Severity::Error;
  std::string path;     // where: a JSON path ("zero_optimization.stage"), a file and offset, a flag
  std::string value;    // the offending value as the user wrote it ("" when absent)
  std::string message;  // what is wrong
  std::string fix;      // what to do about it ("" when there is nothing useful to say)
};

// Collects diagnostics; never throws on its own. Print with format(), or throw UserError.
class Diagnostics {
 public:
  void error(std::string path, std::string value, std::string message, std::string fix = {});
  void warning(std::string path, std::string value, std::string message, std::string fix = {});
  void add(Diagnostic d);
  void append(const Diagnostics& other);

  bool has_errors() const;
  size_t error_count() const;
  size_t warning_count() const;
  const std::vector<Diagnostic>& all() const { return items_; }

  // One line per diagnostic: "error: <path> = <value>: <message>. Fix: <fix>".
  std::string format() const;

 private:
  std::vector<Diagnostic> items_;
};

std::string format_diagnostic(const Diagnostic& d);

// Thrown when user input is unusable; the CLI prints every diagnostic and exits with kUserErrorExit.
class UserError : public std::runtime_error {
 public:
  explicit UserError(Diagnostics diags);
  UserError(std::string path, std::string value, std::string message, std::string fix = {});
  const Diagnostics& diagnostics() const { return diags_; }

 private:
  Diagnostics diags_;
};

// A UserError that every rank throws at the same point from the same facts (a collective gave them
// all the same view, as the checkpoint tag check does): inside the step loop the job then stops
// with exit 2 on every rank, where any other error must abort the job.
class AgreedUserError : public UserError {
 public:
  using UserError::UserError;
};

inline constexpr int kUserErrorExit = 2;

// Thrown once the job has printed its errors (rank 0, one copy of each line): the CLI prints nothing
// more and exits with `exit_code()`, the same on every rank.
class ReportedError : public std::runtime_error {
 public:
  explicit ReportedError(int exit_code) : std::runtime_error("reported"), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace zt
