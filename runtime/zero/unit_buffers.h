// UnitBufferPool: full-unit backend buffers (a micro-step's gradient, a stage-3 gathered unit),
// reused by size across units and steps; every one is counted in the ledger as a buffer.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "runtime/zero/memory_ledger.h"

namespace zt {

class UnitBufferPool {
 public:
  UnitBufferPool(MemoryLedger& ledger, Backend& backend, size_t elem_bytes)
      : ledger_(ledger), backend_(backend), es_(elem_bytes) {}
  // A buffer of n elements; zeroed when `zero` (a new one always arrives zeroed).
  void* acquire(int64_t n, bool zero) {
    auto& free_list = free_[n];
    if (free_list.empty()) return ledger_.alloc(MemCategory::CommBuffers, size_t(n) * es_);
    void* p = free_list.back();
    free_list.pop_back();
    if (zero) backend_.zero(p, size_t(n) * es_);
    return p;
  }
  void release(int64_t n, void* p) { free_[n].push_back(p); }

 private:
  MemoryLedger& ledger_;
  Backend& backend_;
  size_t es_;
  std::map<int64_t, std::vector<void*>> free_;
};

}  // namespace zt
