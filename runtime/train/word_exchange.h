// WordExchange: small all-gathers of int64 words between the engine's steps (start-up agreement,
// the step-boundary stop decision), through one reused backend buffer so host and device
// communicators both work.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "kernels/backend.h"

namespace zt {

class WordExchange {
 public:
  WordExchange(Communicator& comm, Backend& backend) : comm_(comm), backend_(backend) {}
  ~WordExchange();
  WordExchange(const WordExchange&) = delete;
  WordExchange& operator=(const WordExchange&) = delete;

  // Collective: every rank passes the same number of words; returns W × n words, rank r's at [r·n, r·n + n).
  std::vector<int64_t> all_gather(const std::vector<int64_t>& mine);
  // Collective: every rank passes a text of any length; returns all W texts, rank r's at [r].
  std::vector<std::string> all_gather_text(const std::string& mine);

 private:
  Communicator& comm_;
  Backend& backend_;
  void* buf_ = nullptr;
  size_t capacity_ = 0;  // bytes
};

}  // namespace zt
