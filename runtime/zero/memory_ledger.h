// MemoryLedger: every buffer the engine allocates on its backend, by category (params, grads,
// master weights, optimizer states, activations, communication buffers), with current and peak
// bytes; and host memory kept apart from the backend's (offload, the checkpoint snapshot).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

#include <nlohmann/json_fwd.hpp>

#include "kernels/backend.h"

namespace zt {

// Checkpoint: the pinned host snapshot a background save copies the state into (host only).
enum class MemCategory { Params, Grads, Master, Optimizer, Activations, CommBuffers, Checkpoint };
inline constexpr int kMemCategories = 7;
const char* mem_category_name(MemCategory c);

struct MemCounts {
  std::array<uint64_t, kMemCategories> bytes{};
  uint64_t total() const;
  uint64_t operator[](MemCategory c) const { return bytes[size_t(c)]; }
};

// Allocates through the backend and records each allocation; free() must get a pointer from here.
// current() and the peaks are backend (device) memory, as the memory plan's device columns.
class MemoryLedger {
 public:
  explicit MemoryLedger(Backend& backend) : backend_(backend) {}
  ~MemoryLedger();
  MemoryLedger(const MemoryLedger&) = delete;
  MemoryLedger& operator=(const MemoryLedger&) = delete;

  void* alloc(MemCategory c, size_t bytes);  // zero-filled
  void free(void* p);
  // Memory owned elsewhere (the model's activations) but counted here.
  void record_external(MemCategory c, uint64_t bytes);
  // Host memory kept apart from the backend's (offload's master weights, moments and pinned
  // staging buffers; the checkpoint snapshot): counted separately, never in current() or the peaks.
  void record_host(MemCategory c, uint64_t bytes) { host_.bytes[size_t(c)] += bytes; }
  const MemCounts& host() const { return host_; }

  const MemCounts& current() const { return current_; }
  const MemCounts& peak_by_category() const { return peak_cat_; }
  uint64_t peak_total() const { return peak_total_; }
  void reset_peak();

 private:
  void grew();
  Backend& backend_;
  std::unordered_map<void*, std::pair<MemCategory, size_t>> live_;
  MemCounts current_, peak_cat_, host_;
  uint64_t peak_total_ = 0;
};

nlohmann::json mem_counts_json(const MemCounts& m);

}  // namespace zt
