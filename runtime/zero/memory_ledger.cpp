// MemoryLedger: allocation accounting by category with running peaks.
#include "runtime/zero/memory_ledger.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace zt {

const char* mem_category_name(MemCategory c) {
  switch (c) {
    case MemCategory::Params: return "params";
    case MemCategory::Grads: return "grads";
    case MemCategory::Master: return "master_weights";
    case MemCategory::Optimizer: return "optimizer_states";
    case MemCategory::Activations: return "activations";
    case MemCategory::CommBuffers: return "comm_buffers";
    case MemCategory::Checkpoint: return "checkpoint_snapshot";
  }
  return "?";
}

uint64_t MemCounts::total() const {
  uint64_t t = 0;
  for (auto b : bytes) t += b;
  return t;
}

MemoryLedger::~MemoryLedger() {
  for (auto& [p, info] : live_) backend_.free(p);
}

void* MemoryLedger::alloc(MemCategory c, size_t bytes) {
  if (bytes == 0) bytes = 1;  // distinct non-null pointers keep the bookkeeping simple
  void* p = backend_.alloc(bytes);
  backend_.zero(p, bytes);
  live_[p] = {c, bytes};
  current_.bytes[size_t(c)] += bytes;
  grew();
  return p;
}

void MemoryLedger::free(void* p) {
  if (!p) return;
  auto it = live_.find(p);
  if (it == live_.end()) throw std::logic_error("MemoryLedger::free: pointer not allocated here");
  current_.bytes[size_t(it->second.first)] -= it->second.second;
  backend_.free(p);
  live_.erase(it);
}

void MemoryLedger::record_external(MemCategory c, uint64_t bytes) {
  current_.bytes[size_t(c)] += bytes;
  grew();
}

void MemoryLedger::grew() {
  for (int i = 0; i < kMemCategories; ++i) peak_cat_.bytes[i] = std::max(peak_cat_.bytes[i], current_.bytes[i]);
  peak_total_ = std::max(peak_total_, current_.total());
}

void MemoryLedger::reset_peak() {
  peak_cat_ = current_;
  peak_total_ = current_.total();
}

nlohmann::json mem_counts_json(const MemCounts& m) {
  nlohmann::json j = nlohmann::json::object();
  for (int i = 0; i < kMemCategories; ++i) j[mem_category_name(MemCategory(i))] = m.bytes[i];
  j["total"] = m.total();
  return j;
}

}  // namespace zt
