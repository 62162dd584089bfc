// NVMe offload of the optimizer state: one record per sub-group in a direct-I/O swap file, written
// at start from the initial values, and walked by a pipeline (read ahead, step, write behind) each
// optimizer step. Summaries read the master weights back the same way.
#include <cstring>

#include "runtime/engine/engine_state.h"
#include "runtime/model/init.h"

namespace zt {

size_t Engine::State::record_floats(int64_t n) const {
  const bool has_v = opt.optimizer.type != OptimizerType::SGD;
  const bool has_m = has_v || opt.optimizer.momentum != 0.0;
  return size_t(n) * ((master_aliases_work ? 0 : 1) + (has_m ? 1 : 0) + (has_v ? 1 : 0));
}

void Engine::State::setup_nvme(const std::vector<std::vector<float>>& initial_master) {
  const auto& off = opt.offload;
  std::vector<size_t> bytes;
  for (const auto& sg : subgroups) bytes.push_back(std::max<size_t>(4, record_floats(sg.n) * 4));
  offload::SwapperConfig sc;
  sc.nvme_path = off.nvme_path;
  sc.rank = rank;
  sc.aio = off.aio;
  swapper = std::make_unique<offload::NvmeSwapper>(sc, bytes);
  offload::PinnedAllocatorOptions po;
  po.pin_memory = off.pin_memory;
  pinned = std::make_unique<offload::PinnedAllocator>(po);
  pipeline = std::make_unique<offload::SwapPipeline>(*swapper, std::max(1, off.buffer_count), *pinned);
  ledger.record_external(MemCategory::Optimizer, uint64_t(pipeline->buffer_count()) *
                                                    std::max<uint64_t>(swapper->max_padded_bytes(), 4096));
  pipeline->initialize([&](size_t k, void* data, size_t n_bytes) {
    std::memset(data, 0, n_bytes);  // moments start at zero
    const SubGroup& sg = subgroups[k];
    if (!master_aliases_work)
      std::memcpy(data, initial_master[sg.unit].data() + sg.begin, size_t(sg.n) * 4);
  });
}

std::vector<std::vector<float>> Engine::State::read_masters() {
  std::vector<std::vector<float>> out(static_cast<size_t>(U));
  for (int u = 0; u < U; ++u) out[u].assign(size_t(state_len(u)), 0.0f);
  pipeline->run([&](size_t k, void* data, size_t) {
    const SubGroup& sg = subgroups[k];
    std::memcpy(out[sg.unit].data() + sg.begin, data, size_t(sg.n) * 4);
  });
  return out;
}

}  // namespace zt
