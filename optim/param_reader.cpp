// ParamReader implementation: lookups, type checks and the error messages that name the param.
#include "optim/param_reader.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace zt {

namespace {
std::string show(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}
}  // namespace

ParamReader::ParamReader(std::string owner, const std::map<std::string, double>& numbers,
                         const std::map<std::string, std::string>& strings)
    : owner_(std::move(owner)), numbers_(numbers), strings_(strings) {}

void ParamReader::fail(const std::string& key, const std::string& value, const std::string& problem) const {
  throw std::invalid_argument(owner_ + ": params." + key + (value.empty() ? "" : " = " + value) + ": " + problem);
}

bool ParamReader::has(const std::string& key) const { return numbers_.count(key) || strings_.count(key); }

double ParamReader::number(const std::string& key) {
  known_.insert(key);
  auto it = numbers_.find(key);
  if (it == numbers_.end()) {
    if (strings_.count(key)) fail(key, "\"" + strings_.at(key) + "\"", "must be a number");
    fail(key, "", "missing required parameter '" + key + "'");
  }
  if (!std::isfinite(it->second)) fail(key, show(it->second), "must be a finite number");
  return it->second;
}

double ParamReader::number(const std::string& key, double fallback) {
  known_.insert(key);
  if (!has(key)) return fallback;
  return number(key);
}

int64_t ParamReader::integer(const std::string& key) {
  double v = number(key);
  if (v != std::floor(v) || std::fabs(v) > 9.0e15) fail(key, show(v), "must be an integer");
  return static_cast<int64_t>(v);
}

int64_t ParamReader::integer(const std::string& key, int64_t fallback) {
  known_.insert(key);
  if (!has(key)) return fallback;
  return integer(key);
}

bool ParamReader::boolean(const std::string& key, bool fallback) {
  known_.insert(key);
  if (!has(key)) return fallback;
  double v = number(key);
  if (v != 0.0 && v != 1.0) fail(key, show(v), "must be true or false");
  return v == 1.0;
}

std::string ParamReader::string(const std::string& key, const std::string& fallback,
                                const std::vector<std::string>& allowed) {
  known_.insert(key);
  auto it = strings_.find(key);
  if (it == strings_.end()) {
    if (numbers_.count(key)) fail(key, show(numbers_.at(key)), "must be a string");
    return fallback;
  }
  for (const auto& a : allowed)
    if (a == it->second) return it->second;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "\"" : ", \"") + a + "\"";
  fail(key, "\"" + it->second + "\"", "must be one of " + list);
}

void ParamReader::reject_unknown() const {
  std::string known;
  for (const auto& k : known_) known += (known.empty() ? "" : ", ") + k;
  const std::string problem = "unknown parameter (known: " + known + ")";
  for (const auto& [k, v] : numbers_)
    if (!known_.count(k)) fail(k, show(v), problem);
  for (const auto& [k, v] : strings_)
    if (!known_.count(k)) fail(k, "\"" + v + "\"", problem);
}

}  // namespace zt
