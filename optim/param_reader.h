// ParamReader: typed access to a flattened `params` block (numbers and strings maps) that records
// which keys were read, so callers can reject unknown keys; every error names the param.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace zt {

class ParamReader {
 public:
  // `owner` prefixes error messages, e.g. "scheduler WarmupLR" or "optimizer Adam".
  ParamReader(std::string owner, const std::map<std::string, double>& numbers,
              const std::map<std::string, std::string>& strings);

  bool has(const std::string& key) const;
  double number(const std::string& key);                       // required
  double number(const std::string& key, double fallback);      // optional
  int64_t integer(const std::string& key);                     // required, must be integral
  int64_t integer(const std::string& key, int64_t fallback);   // optional, must be integral
  bool boolean(const std::string& key, bool fallback);         // 0 or 1
  std::string string(const std::string& key, const std::string& fallback,
                     const std::vector<std::string>& allowed);

  // Throws for the first key present in the maps that no accessor asked about.
  void reject_unknown() const;

  // Throws std::invalid_argument("<owner>: <key> = <value>: <problem>").
  [[noreturn]] void fail(const std::string& key, const std::string& value, const std::string& problem) const;

 private:
  std::string owner_;
  const std::map<std::string, double>& numbers_;
  const std::map<std::string, std::string>& strings_;
  std::set<std::string> known_;
};

}  // namespace zt
